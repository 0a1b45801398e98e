/*
 * test_zstd.c - RecordBatch codec 4 (producer/src/wire/zstd.c): standard zstd frames that
 * round-trip, levels, and bad or oversized input refused.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/zstd.h"

static size_t fill_text(uint8_t *buf, size_t n)
{
    size_t len = 0;
    for (int i = 0; len + 64 < n; i++) {
        len += (size_t)snprintf((char *)buf + len, n - len, "GET:/api/orders/%d status=200 ", i);
    }
    return len;
}

Test(zstd, frame_round_trips_at_the_default_level)
{
    static uint8_t in[200000], out[220000];
    size_t in_len = fill_text(in, sizeof in), out_len = 0;
    cr_assert_geq(sizeof out, kp__zstd_bound(in_len));
    cr_assert_eq(kp__zstd_compress(in, in_len, out, sizeof out, KP_ZSTD_LEVEL_DEFAULT, &out_len),
                 0);
    cr_assert_lt(out_len, in_len / 4, "text compresses (%zu of %zu bytes)", out_len, in_len);
    const uint8_t magic[] = {0x28, 0xb5, 0x2f, 0xfd}; /* 0xFD2FB528 little-endian */
    cr_expect_eq(memcmp(out, magic, 4), 0, "zstd frame magic");
    uint8_t *back = NULL;
    size_t back_len = 0;
    cr_assert_eq(kp__zstd_decompress(out, out_len, 1 << 20, &back, &back_len), 0);
    cr_assert_eq(back_len, in_len);
    cr_expect_eq(memcmp(back, in, in_len), 0);
    free(back);
}

Test(zstd, levels_concatenated_frames_and_empty_input)
{
    uint8_t in[100] = "abcabcabcabc", out[2][256];
    size_t n[2];
    cr_assert_eq(kp__zstd_compress(in, 12, out[0], sizeof out[0], 19, &n[0]), 0);
    cr_assert_eq(kp__zstd_compress(NULL, 0, out[1], sizeof out[1], 1, &n[1]), 0, "empty input");
    cr_expect_eq(kp__zstd_compress(in, 12, out[1], sizeof out[1], 0, &n[1]), KP_EINVAL, "level 0");
    cr_expect_eq(kp__zstd_compress(in, 12, out[1], sizeof out[1], 99, &n[1]), KP_EINVAL,
                 "level 99");
    uint8_t both[512];
    memcpy(both, out[0], n[0]);
    memcpy(both + n[0], out[0], n[0]);
    uint8_t *back = NULL;
    size_t back_len = 0;
    cr_assert_eq(kp__zstd_decompress(both, 2 * n[0], 4096, &back, &back_len), 0);
    cr_assert_eq(back_len, 24);
    cr_expect_eq(memcmp(back + 12, in, 12), 0);
    free(back);
}

Test(zstd, refuses_small_output_corrupt_truncated_and_bombs)
{
    static uint8_t in[100000], out[110000];
    size_t in_len = fill_text(in, sizeof in), out_len = 0;
    cr_expect_eq(kp__zstd_compress(in, in_len, out, 10, 3, &out_len), KP_ENOSPACE);
    cr_assert_eq(kp__zstd_compress(in, in_len, out, sizeof out, 3, &out_len), 0);
    uint8_t *back = NULL;
    size_t back_len = 0;
    cr_expect_eq(kp__zstd_decompress(out, out_len, in_len - 1, &back, &back_len), KP_ECOMPRESSION,
                 "output over max_out");
    cr_expect_null(back);
    cr_expect_eq(kp__zstd_decompress(out, out_len / 2, 1 << 20, &back, &back_len), KP_ECOMPRESSION,
                 "truncated frame");
    out[0] ^= 0xff;
    cr_expect_eq(kp__zstd_decompress(out, out_len, 1 << 20, &back, &back_len), KP_ECOMPRESSION,
                 "bad magic");
    cr_expect_eq(kp__zstd_decompress(NULL, 0, 1 << 20, &back, &back_len), KP_ECOMPRESSION);
}
