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
#ifndef SW_CORE_SMALL_COPY_H
#define SW_CORE_SMALL_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Copies n bytes from src to dst (which must not overlap), like memcpy. Up to 32 bytes it moves
   the first and the last 4, 8 or 16 bytes (the two moves overlap when n is not twice that);
   the fixed-size memcpy calls below compile to single loads and stores. */
static inline void sw__copy(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (n > 32) {
        memcpy(d, s, n);
    } else if (n >= 16) {
        struct sixteen {
            uint64_t a, b;
        } head, tail;
        memcpy(&head, s, 16);
        memcpy(&tail, s + n - 16, 16);
        memcpy(d, &head, 16);
        memcpy(d + n - 16, &tail, 16);
    } else if (n >= 8) {
        uint64_t head, tail;
        memcpy(&head, s, 8);
        memcpy(&tail, s + n - 8, 8);
        memcpy(d, &head, 8);
        memcpy(d + n - 8, &tail, 8);
    } else if (n >= 4) {
        uint32_t head, tail;
        memcpy(&head, s, 4);
        memcpy(&tail, s + n - 4, 4);
        memcpy(d, &head, 4);
        memcpy(d + n - 4, &tail, 4);
    } else if (n > 0) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

#endif /* SW_CORE_SMALL_COPY_H */
