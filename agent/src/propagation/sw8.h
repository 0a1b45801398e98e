/*
 * sw8.h - the SkyWalking v3 `sw8` and `sw8-x` header values (internal). Pure functions over
 * buffers: no allocation, no global state, safe on any input (fuzzed by tests/fuzz/fuzz_sw8.c).
 *
 *   sw8   = sample "-" b64(traceId) "-" b64(parentSegmentId) "-" parentSpanId "-"
 *           b64(parentService) "-" b64(parentInstance) "-" b64(parentEndpoint) "-"
 *           b64(addressUsedAtClient)
 *   sw8-x = skipAnalysis(0|1) "-" [clientSendTimestampMs]
 *
 * A value is valid when it has exactly 8 fields, sample is 0 or 1, every base64 field is
 * non-empty strict base64 that decodes to a non-empty string without NUL bytes, and the span id
 * is a decimal in 0..INT32_MAX (SkyWalking's ContextCarrier.isValid, made strict). A decoded
 * string that is not valid UTF-8 is cleaned (util/utf8.h: '?' for each bad byte), not
 * rejected: the strings go into proto3 string fields.
 */
#ifndef SW_PROPAGATION_SW8_H
#define SW_PROPAGATION_SW8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW__SW8_HEADER_MAX 4096 /* longer incoming values are rejected */

typedef struct sw__sw8 {
    int sample; /* 0 or 1 */
    int32_t parent_span_id;
    const char *trace_id;
    const char *parent_segment_id;
    const char *parent_service;
    const char *parent_instance;
    const char *parent_endpoint;
    const char *address;
} sw__sw8_t;

/*
 * Parses `len` bytes of `header` (no NUL needed). The strings of `out` point into `scratch`,
 * which needs at least len + 8 bytes (SW__SW8_HEADER_MAX + 8 suffices for anything valid).
 * Returns 0, or SW_EINVAL with *reason (if not NULL) set to a static description.
 */
int sw__sw8_decode(const char *header, size_t len, sw__sw8_t *out, char *scratch,
                   size_t scratch_len, const char **reason);

/* Writes `in` as an sw8 value (NUL-terminated). Returns its length or SW_ENOSPACE. */
int sw__sw8_encode(const sw__sw8_t *in, char *buf, size_t len);

typedef struct sw__sw8x {
    bool skip_analysis;
    bool has_timestamp;
    int64_t send_ms;
} sw__sw8x_t;

/* Parses an sw8-x value. Returns 0 or SW_EINVAL (reason as above). */
int sw__sw8x_decode(const char *header, size_t len, sw__sw8x_t *out, const char **reason);

/* Writes "0-<send_ms>" (SkyWalking's shape). Returns its length or SW_ENOSPACE. */
int sw__sw8x_encode(int64_t send_ms, char *buf, size_t len);

#endif /* SW_PROPAGATION_SW8_H */
