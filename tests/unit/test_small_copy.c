/*
 * test_small_copy.c - sw__copy (agent/src/util/small_copy.h) copies exactly n bytes for every
 * n, at every alignment, and writes nothing outside them.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "util/small_copy.h"

Test(small_copy, every_length_and_alignment_copies_exactly_n_bytes)
{
    unsigned char src[128], dst[160], want[160];
    for (size_t i = 0; i < sizeof src; i++) {
        src[i] = (unsigned char)(i * 7 + 1); /* no two neighbours alike */
    }
    for (size_t n = 0; n <= 70; n++) {
        for (size_t from = 0; from < 8; from++) {
            for (size_t to = 0; to < 8; to++) {
                memset(dst, 0xEE, sizeof dst);
                memset(want, 0xEE, sizeof want);
                memcpy(want + 16 + to, src + from, n);
                sw__copy(dst + 16 + to, src + from, n);
                cr_assert_eq(memcmp(dst, want, sizeof dst), 0,
                             "n=%zu from+%zu to+%zu: wrong bytes or a write outside them", n, from,
                             to);
            }
        }
    }
}
