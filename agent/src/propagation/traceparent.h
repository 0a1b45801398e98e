/*
 * traceparent.h - the W3C Trace Context (level 1) `traceparent` value, and the mapping of
 * SkyWalking ids onto W3C ids (internal). Pure functions over buffers: no allocation, no global
 * state, safe on any input (fuzzed by tests/fuzz/fuzz_w3c.c).
 *
 *   traceparent = version "-" trace-id "-" parent-id "-" trace-flags
 *                 2 hex      32 hex       16 hex        2 hex          (lower-case hex only)
 *
 * Parsing follows the specification's rules: version ff is invalid; a trace-id or parent-id of
 * all zeros is invalid; version 00 is exactly 55 characters; a higher version is parsed as 00
 * would be from its first 55 characters, and may be longer only when character 55 is '-' (what
 * a future version appends is ignored). Blanks (space, tab) around the value are optional
 * white space and skipped.
 */
#ifndef SW_PROPAGATION_TRACEPARENT_H
#define SW_PROPAGATION_TRACEPARENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW__TRACEPARENT_LEN 55  /* a version 00 value, without the NUL */
#define SW__TRACEPARENT_MAX 512 /* longer incoming values are rejected */

typedef struct sw__traceparent {
    uint8_t version;
    uint8_t flags; /* bit 0: sampled */
    char trace_id[33];
    char parent_id[17];
} sw__traceparent_t;

/* Parses `len` bytes of `value` (no NUL needed). Returns 0, or SW_EINVAL with *reason (if not
   NULL) set to a static description. */
int sw__traceparent_decode(const char *value, size_t len, sw__traceparent_t *out,
                           const char **reason);

/* Writes "00-<trace_id>-<parent_id>-<01|00>" (NUL-terminated) into buf (at least 56 bytes).
   Returns 55 or SW_ENOSPACE. */
int sw__traceparent_encode(const char *trace_id, const char *parent_id, bool sampled, char *buf,
                           size_t len);

/* Whether s is exactly n lower-case hex digits, not all '0'. */
bool sw__w3c_id_valid(const char *s, size_t n);

/*
 * The W3C trace-id of a SkyWalking trace id: the trace id itself when it already is one (32
 * lower-case hex digits, not all zero: a trace that came in over traceparent, or began in an
 * agent writing such ids), otherwise a 128-bit hash of it as 32 hex digits, never all zero.
 * The same SkyWalking trace id always gives the same W3C trace-id, in every process.
 */
void sw__w3c_trace_id(const char *sw_trace_id, char out[33]);

/* The W3C span-id (parent-id) of span `span_id` of segment `segment_id`: a 64-bit hash of both
   as 16 hex digits, never all zero, stable per span. */
void sw__w3c_span_id(const char *segment_id, int32_t span_id, char out[17]);

#endif /* SW_PROPAGATION_TRACEPARENT_H */
