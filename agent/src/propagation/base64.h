/*
 * base64.h - standard base64 (RFC 4648 alphabet, '=' padding), as SkyWalking's headers use it
 * (internal). Pure functions over buffers.
 */
#ifndef SW_PROPAGATION_BASE64_H
#define SW_PROPAGATION_BASE64_H

#include <stddef.h>

/* Length of the encoding of n bytes, without the NUL. */
static inline size_t sw__base64_encoded_len(size_t n)
{
    return (n + 2) / 3 * 4;
}

/*
 * Encodes n bytes of `in` into `out` (NUL-terminated). Returns the length written, or
 * SW_ENOSPACE when out_len < sw__base64_encoded_len(n) + 1 (out is then untouched).
 */
long sw__base64_encode(const void *in, size_t n, char *out, size_t out_len);

/*
 * Decodes exactly n characters of strict base64: n a multiple of 4, alphabet characters only,
 * '=' only as the last one or two. Writes the bytes plus a NUL to out. Returns the decoded
 * length (>= 0), or SW_EINVAL for malformed input or when out_len is too small.
 */
long sw__base64_decode(const char *in, size_t n, char *out, size_t out_len);

#endif /* SW_PROPAGATION_BASE64_H */
