/*
 * swc_base64.h - standard base64 (RFC 4648 alphabet, '=' padding), as SkyWalking's headers and
 * SCRAM (RFC 5802) use it. Pure functions over buffers, any thread. Shared by the agent and the
 * producer like swc_errbuf.h (common/CMakeLists.txt).
 */
#ifndef SWC_BASE64_H
#define SWC_BASE64_H

#include <stddef.h>

/* Length of the encoding of n bytes, without the NUL. */
static inline size_t swc__base64_encoded_len(size_t n)
{
    return (n + 2) / 3 * 4;
}

/*
 * Encodes n bytes of `in` into `out` (NUL-terminated). Returns the length written, or
 * -1 when out_len < swc__base64_encoded_len(n) + 1 (out is then untouched).
 */
long swc__base64_encode(const void *in, size_t n, char *out, size_t out_len);

/*
 * Decodes exactly n characters of strict base64: n a multiple of 4, alphabet characters only,
 * '=' only as the last one or two. Writes the bytes plus a NUL to out. Returns the decoded
 * length (>= 0), or -1 for malformed input or when out_len is too small.
 */
long swc__base64_decode(const char *in, size_t n, char *out, size_t out_len);

#endif /* SWC_BASE64_H */
