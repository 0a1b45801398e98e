/*
 * correlation.h - correlation data and its `sw8-correlation` header value (internal):
 * `b64(key):b64(value)` elements joined by ','; at most SW_CORRELATION_MAX_ELEMENTS elements,
 * keys and values at most SW_CORRELATION_VALUE_MAX bytes (SkyWalking's limits). Pure functions
 * over buffers (fuzzed by tests/fuzz/fuzz_correlation.c).
 */
#ifndef SW_PROPAGATION_CORRELATION_H
#define SW_PROPAGATION_CORRELATION_H

#include <stddef.h>

#include "skywalking.h"

#define SW__CORRELATION_HEADER_IN_MAX 4096 /* longer incoming values are ignored */

/*
 * Replaces `out` with the elements of a header value. Malformed elements (no ':', bad base64,
 * empty key, a NUL inside, over the size limit) are skipped like SkyWalking does; elements past
 * the third are ignored. Returns the number kept.
 */
int sw__correlation_decode(const char *header, size_t len, sw_correlation_t *out);

/* Writes the header value (NUL-terminated, "" when empty). Returns its length or SW_ENOSPACE. */
int sw__correlation_encode(const sw_correlation_t *c, char *buf, size_t len);

/*
 * Sets key to value (value NULL or "" removes the key). Returns 0, SW_EINVAL (NULL or empty key)
 * or SW_ELIMIT (key or value over 128 bytes, or a 4th key); `c` is unchanged on error.
 */
int sw__correlation_put(sw_correlation_t *c, const char *key, const char *value);

/* Index of key in c (>= 0), or SW_ENOTFOUND. */
int sw__correlation_find(const sw_correlation_t *c, const char *key);

#endif /* SW_PROPAGATION_CORRELATION_H */
