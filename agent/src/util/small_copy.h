/*
 * small_copy.h - copying the short strings of a span (names, peers, tag keys and values, ids)
 * without a call to memcpy (internal).
 *
 * Why: a 3-span segment copies a dozen strings of 3 to 60 bytes twice (into the segment's arena
 * when recorded, into the encoded record when finished). Each memcpy call costs about 20
 * instructions of call, size dispatch and return for a few bytes of copy (callgrind of
 * span_bench's segment3 loop); two overlapping fixed-size moves do a copy of up to 32 bytes in
 * 4 to 6 instructions.
 */
#ifndef SW_UTIL_SMALL_COPY_H
#define SW_UTIL_SMALL_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "locality.h"

/* Copies the first and the last `width` bytes of src[0..n) (width <= n <= 2 * width; the two
   overlap when n < 2 * width). `width` is a constant at every call, so the fixed-size memcpy
   calls compile to single loads and stores. */
static inline __attribute__((always_inline)) void
sw__copy_ends(unsigned char *d, const unsigned char *s, size_t n, size_t width)
{
    unsigned char head[16], tail[16];
    memcpy(head, s, width);
    memcpy(tail, s + n - width, width);
    memcpy(d, head, width);
    memcpy(d + n - width, tail, width);
}

/* Copies n bytes from src to dst (which must not overlap), like memcpy: up to 32 bytes as the
   first and the last 16, 8 or 4 bytes, below 4 byte by byte, beyond 32 with memcpy. SW__HOT: a
   copy the compiler keeps out of line lies in .text.hot with the rest of the per-call path. */
static inline SW__HOT void sw__copy(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (n > 32) {
        memcpy(d, s, n);
    } else if (n >= 16) {
        sw__copy_ends(d, s, n, 16);
    } else if (n >= 8) {
        sw__copy_ends(d, s, n, 8);
    } else if (n >= 4) {
        sw__copy_ends(d, s, n, 4);
    } else if (n > 0) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

#endif /* SW_UTIL_SMALL_COPY_H */
