/*
 * tracestate.h - the W3C Trace Context (level 1) `tracestate` list, and the skywalking-c member
 * of it, `sw=` (internal). Pure functions over buffers: no allocation, no global state, safe on
 * any input (fuzzed by tests/fuzz/fuzz_w3c.c).
 *
 * tracestate = list-member *( OWS "," OWS list-member ), at most 32 members, empty members
 * allowed; list-member = key "=" value with
 *   key   = lcalpha 0*255( lcalpha / DIGIT / "_" / "-" / "*" / "/" )
 *         / ( lcalpha / DIGIT ) 0*240( same ) "@" lcalpha 0*13( same )
 *   value = 0*255( %x20-2B / %x2D-3C / %x3E-7E ) ( %x21-2B / %x2D-3C / %x3E-7E )
 * A list with a malformed member, a duplicate key or more than 32 members is invalid as a
 * whole (the specification lets a vendor discard it; we do).
 *
 * Our member carries what traceparent has no field for, so that a SkyWalking reference
 * (SegmentReference) can be rebuilt after a hop through services that only forward W3C headers:
 *
 *   sw=<segment>;<span>;<service>;<instance>;<endpoint>;<peer>[;<trace>]
 *
 *   segment   parent trace segment id          span      parent span id, decimal 0..2^31-1
 *   service   parent service                   instance  parent service instance
 *   endpoint  parent endpoint (first span's operation; shortened on a UTF-8 boundary to fit)
 *   peer      the address the client used (networkAddressUsedAtPeer)
 *   trace     the SkyWalking trace id, only when it is not the traceparent's trace-id (a trace
 *             id that is not 32 lower-case hex digits, e.g. one begun by a Java agent)
 *
 * Each field is its bytes, with every byte outside %x21-7E and each of `%` `,` `=` `;` written
 * as %XX (upper-case hex). The whole member, "sw=" included, is at most 256 bytes; when the
 * fields cannot fit even with the endpoint cut to one character, no member is written.
 */
#ifndef SW_PROPAGATION_TRACESTATE_H
#define SW_PROPAGATION_TRACESTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "traceparent.h"

#define SW__TRACESTATE_MEMBERS_MAX 32
#define SW__TRACESTATE_IN_MAX      4096 /* longer incoming values are discarded */
#define SW__TRACESTATE_ENTRY_MAX   256  /* our member, "sw=" included, without the NUL */
#define SW__TRACESTATE_LONG_MEMBER 128  /* trimming removes members longer than this first */

/*
 * Parses a tracestate value of `len` bytes (no NUL needed). On success writes the members other
 * than `sw` into `others` (at least len + 1 bytes) in order, without white space, joined by ','
 * and NUL-terminated ("" when there is none), points *sw at the value of the `sw` member inside
 * `value` with *sw_len its length (NULL and 0 when absent), and returns the number of members
 * (`sw` included). Returns SW_EINVAL (reason as in sw8.h) for an invalid list; `others` is then
 * "".
 */
int sw__tracestate_parse(const char *value, size_t len, char *others, size_t others_len,
                         const char **sw, size_t *sw_len, const char **reason);

/*
 * Trims a member list as sw__tracestate_parse writes it, in place, to at most `max_members`
 * members and `max_bytes` bytes (commas included, NUL excluded): members longer than 128 bytes
 * go first, then members from the end, as the specification orders. Returns the new length.
 */
size_t sw__tracestate_trim(char *list, size_t max_members, size_t max_bytes);

/*
 * The outgoing tracestate: "sw=<ours>" first (skipped when ours is NULL or ""), then `others`
 * (NULL or a list from sw__tracestate_parse, without an `sw` member). Writes it NUL-terminated
 * into buf. Returns its length or SW_ENOSPACE (buf "").
 */
int sw__tracestate_build(const char *ours, const char *others, char *buf, size_t len);

typedef struct sw__swstate {
    const char *trace_id; /* "" (or NULL when encoding): the traceparent's trace-id */
    const char *segment_id;
    int32_t span_id;
    const char *service;
    const char *instance;
    const char *endpoint;
    const char *peer;
} sw__swstate_t;

/* Writes the value of our member (without "sw=") NUL-terminated into buf (at least 254 bytes
   for the longest). Returns its length or SW_ENOSPACE (buf ""): the fields do not fit. */
int sw__swstate_encode(const sw__swstate_t *in, char *buf, size_t len);

/*
 * Parses the value of an `sw` member. The strings of `out` point into `scratch` (at least
 * len + 8 bytes). Every field but trace must be non-empty, decode without NUL bytes and be at
 * most 255 bytes; an escape that makes invalid UTF-8 is cleaned (util/utf8.h). Returns 0 or
 * SW_EINVAL (reason).
 */
int sw__swstate_decode(const char *value, size_t len, sw__swstate_t *out, char *scratch,
                       size_t scratch_len, const char **reason);

/* What an entry takes from traceparent and tracestate (sw__w3c_extract). */
typedef struct sw__w3c_in {
    sw__traceparent_t tp;
    const char *trace_id; /* the SkyWalking trace id to continue: tp.trace_id, or the sw
                             member's trace id when it maps to tp.trace_id */
    bool has_ref;         /* `st` is a valid sw member of this trace: a reference can be made */
    sw__swstate_t st;
    char others[SW__TRACESTATE_IN_MAX + 1]; /* the other members, as sw__tracestate_parse */
    char scratch[SW__TRACESTATE_ENTRY_MAX + 16];
} sw__w3c_in_t;

/*
 * Reads an incoming traceparent and tracestate (either may be NULL). Returns 0 when traceparent
 * is valid; an absent or invalid tracestate then only leaves `others` empty and has_ref false.
 * Returns SW_EINVAL (reason) when traceparent is absent or invalid.
 */
int sw__w3c_extract(const char *traceparent, const char *tracestate, sw__w3c_in_t *out,
                    const char **reason);

#endif /* SW_PROPAGATION_TRACESTATE_H */
