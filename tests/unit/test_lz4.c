/*
 * test_lz4.c - RecordBatch codec 3 (producer/src/wire/lz4.c): the frame is the one Kafka's
 * Lz4BlockOutputStream writes, it round-trips, and bad or oversized input is refused.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/lz4.h"

/* Text that compresses like trace data: repeated words with varying numbers. */
static size_t fill_text(uint8_t *buf, size_t n)
{
    size_t len = 0;
    for (int i = 0; len + 64 < n; i++) {
        len += (size_t)snprintf((char *)buf + len, n - len, "GET:/api/orders/%d status=200 ", i);
    }
    return len;
}

Test(lz4, frame_is_kafkas_and_round_trips)
{
    static uint8_t in[200000], out[220000];
    size_t in_len = fill_text(in, sizeof in), out_len = 0;
    cr_assert_geq(sizeof out, kp__lz4_bound(in_len));
    cr_assert_eq(kp__lz4_compress(in, in_len, out, sizeof out, &out_len), 0);
    cr_assert_lt(out_len, in_len / 2, "text compresses (%zu of %zu bytes)", out_len, in_len);
    /* Magic 0x184D2204 little-endian; FLG: version 1, independent blocks, no checksums, no
     * content size (0x60); BD: 64 KiB blocks (0x40). */
    const uint8_t magic[] = {0x04, 0x22, 0x4d, 0x18};
    cr_expect_eq(memcmp(out, magic, 4), 0, "LZ4 frame magic");
    cr_expect_eq(out[4], 0x60, "FLG %#x", out[4]);
    cr_expect_eq(out[5], 0x40, "BD %#x", out[5]);
    /* The last 4 bytes are the EndMark (0), no content checksum after it. */
    const uint8_t end[4] = {0};
    cr_expect_eq(memcmp(out + out_len - 4, end, 4), 0, "end mark");
    uint8_t *back = NULL;
    size_t back_len = 0;
    cr_assert_eq(kp__lz4_decompress(out, out_len, 1 << 20, &back, &back_len), 0);
    cr_assert_eq(back_len, in_len);
    cr_expect_eq(memcmp(back, in, in_len), 0);
    free(back);
}

Test(lz4, two_concatenated_frames_and_empty_input)
{
    uint8_t in[100] = "abcabcabcabc", out[2][256];
    size_t n[2];
    cr_assert_eq(kp__lz4_compress(in, 12, out[0], sizeof out[0], &n[0]), 0);
    cr_assert_eq(kp__lz4_compress(NULL, 0, out[1], sizeof out[1], &n[1]), 0, "empty input");
    uint8_t both[512];
    memcpy(both, out[0], n[0]);
    memcpy(both + n[0], out[0], n[0]);
    uint8_t *back = NULL;
    size_t back_len = 0;
    cr_assert_eq(kp__lz4_decompress(both, 2 * n[0], 4096, &back, &back_len), 0);
    cr_assert_eq(back_len, 24);
    cr_expect_eq(memcmp(back + 12, in, 12), 0);
    free(back);
}

Test(lz4, refuses_small_output_corrupt_truncated_and_bombs)
{
    static uint8_t in[100000], out[110000];
    size_t in_len = fill_text(in, sizeof in), out_len = 0;
    cr_expect_eq(kp__lz4_compress(in, in_len, out, 100, &out_len), KP_ENOSPACE);
    cr_assert_eq(kp__lz4_compress(in, in_len, out, sizeof out, &out_len), 0);
    uint8_t *back = NULL;
    size_t back_len = 0;
    cr_expect_eq(kp__lz4_decompress(out, out_len, in_len - 1, &back, &back_len), KP_ECOMPRESSION,
                 "output over max_out");
    cr_expect_null(back);
    cr_expect_eq(kp__lz4_decompress(out, out_len / 2, 1 << 20, &back, &back_len), KP_ECOMPRESSION,
                 "truncated frame");
    out[0] ^= 0xff;
    cr_expect_eq(kp__lz4_decompress(out, out_len, 1 << 20, &back, &back_len), KP_ECOMPRESSION,
                 "bad magic");
    cr_expect_eq(kp__lz4_decompress(NULL, 0, 1 << 20, &back, &back_len), KP_ECOMPRESSION);
}
