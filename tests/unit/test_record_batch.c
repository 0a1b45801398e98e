/*
 * test_record_batch.c - RecordBatch v2: a hand-made one-record batch byte for byte, in-place
 * append limits, close/re-stamp, gzip, and the reader's checks on corrupt or short input.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "wire/crc32c.h"
#include "wire/record_batch.h"

Test(record_batch, one_record_bytes)
{
    uint8_t buf[128];
    kp_record_batch_t b;
    cr_assert_eq(kp__record_batch_init(&b, buf, sizeof buf, 1000), 0);
    cr_assert_eq(kp__record_batch_try_append(&b, 1000, "k", 1, "v", 1, NULL, 0), 0);
    cr_assert_eq(kp__record_batch_close(&b, -1, -1, -1, NULL), 0);
    size_t len;
    const uint8_t *data = kp__record_batch_data(&b, &len);
    uint8_t want[70] = {
        0,    0,    0,    0,    0,    0,    0,    0,    /* baseOffset */
        0,    0,    0,    58,                           /* batchLength */
        0xff, 0xff, 0xff, 0xff,                         /* partitionLeaderEpoch */
        2,                                              /* magic */
        0,    0,    0,    0,                            /* crc, filled below */
        0,    0,                                        /* attributes */
        0,    0,    0,    0,                            /* lastOffsetDelta */
        0,    0,    0,    0,    0,    0,    0x03, 0xe8, /* baseTimestamp 1000 */
        0,    0,    0,    0,    0,    0,    0x03, 0xe8, /* maxTimestamp */
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* producerId -1 */
        0xff, 0xff,                                     /* epoch -1 */
        0xff, 0xff, 0xff, 0xff,                         /* baseSequence -1 */
        0,    0,    0,    1,                            /* count */
        0x10, 0,    0,    0,    0x02, 'k',  0x02, 'v',
        0, /* record: len 8, attrs, ts 0, off 0, k, v, 0 hdrs */
    };
    uint32_t crc = crc32c_reference(want + 21, sizeof want - 21);
    want[17] = (uint8_t)(crc >> 24);
    want[18] = (uint8_t)(crc >> 16);
    want[19] = (uint8_t)(crc >> 8);
    want[20] = (uint8_t)crc;
    cr_assert_eq(len, sizeof want);
    cr_assert_arr_eq(data, want, sizeof want);
}

Test(record_batch, round_trip_with_nulls_and_headers)
{
    uint8_t buf[4096];
    kp_record_batch_t b;
    cr_assert_eq(kp__record_batch_init(&b, buf, sizeof buf, 5000), 0);
    kp_record_header_t hdrs[2] = {{"h1", 2, "x", 1}, {"h2", 2, NULL, 0}};
    cr_assert_eq(kp__record_batch_try_append(&b, 5000, NULL, 0, "value-0", 7, NULL, 0), 0);
    cr_assert_eq(kp__record_batch_try_append(&b, 4990, "key-1", 5, NULL, 0, hdrs, 2), 0);
    cr_assert_eq(kp__record_batch_try_append(&b, 7000, "", 0, "", 0, NULL, 0), 0);
    cr_assert_eq(kp__record_batch_close(&b, 77, 3, 100, NULL), 0);
    size_t len;
    const uint8_t *data = kp__record_batch_data(&b, &len);
    kp_record_batch_reader_t rd;
    cr_assert_eq(kp__record_batch_reader_open(&rd, data, len, 1 << 20), 0);
    cr_expect_eq(rd.record_count, 3);
    cr_expect_eq(rd.last_offset_delta, 2);
    cr_expect_eq(rd.max_timestamp, 7000);
    cr_expect_eq(rd.producer_id, 77);
    cr_expect_eq(rd.producer_epoch, 3);
    cr_expect_eq(rd.base_sequence, 100);
    kp_record_view_t rec;
    cr_assert_eq(kp__record_batch_reader_next(&rd, &rec), 1);
    cr_expect_null(rec.key);
    cr_expect_eq(rec.key_len, -1);
    cr_expect_eq(rec.value_len, 7);
    cr_expect_eq(memcmp(rec.value, "value-0", 7), 0);
    cr_assert_eq(kp__record_batch_reader_next(&rd, &rec), 1);
    cr_expect_eq(rec.timestamp, 4990, "negative timestamp delta");
    cr_expect_eq(rec.offset, 1);
    cr_expect_eq(rec.value_len, -1);
    cr_expect_eq(rec.n_headers, 2);
    kp_record_header_t h;
    cr_assert_eq(kp__record_view_next_header(&rec, &h), 1);
    cr_expect_eq(h.key_len, 2);
    cr_expect_eq(memcmp(h.key, "h1", 2), 0);
    cr_expect_eq(memcmp(h.value, "x", 1), 0);
    cr_assert_eq(kp__record_view_next_header(&rec, &h), 1);
    cr_expect_null(h.value);
    cr_expect_eq(kp__record_view_next_header(&rec, &h), 0);
    cr_assert_eq(kp__record_batch_reader_next(&rd, &rec), 1);
    cr_expect_eq(rec.key_len, 0);
    cr_expect_not_null(rec.key, "empty is not null");
    cr_expect_eq(kp__record_batch_reader_next(&rd, &rec), 0);
    kp__record_batch_reader_close(&rd);
}

Test(record_batch, append_fills_exactly_and_then_refuses)
{
    /* One record of key 1, value 20 at delta 0, offset 0: body 1+1+1+2+21+1 = 27, +1 prefix. */
    size_t rec = kp__record_size(0, 0, "k", 1, "01234567890123456789", 20, NULL, 0);
    cr_assert_eq(rec, 28);
    uint8_t buf[KP_RECORD_BATCH_HEADER_SIZE + 28];
    kp_record_batch_t b;
    cr_assert_eq(kp__record_batch_init(&b, buf, sizeof buf, 0), 0);
    cr_expect_eq(kp__record_batch_try_append(&b, 0, "k", 1, "012345678901234567890", 21, NULL, 0),
                 KP_ENOSPACE, "one byte too many");
    cr_expect_eq(b.count, 0, "a refused append changes nothing");
    cr_expect_eq(kp__record_batch_try_append(&b, 0, "k", 1, "01234567890123456789", 20, NULL, 0), 0,
                 "the first record is accepted when it fits exactly");
    cr_expect_eq(b.len, sizeof buf);
    cr_expect_eq(kp__record_batch_try_append(&b, 0, NULL, 0, NULL, 0, NULL, 0), KP_ENOSPACE);
    cr_expect(kp__record_batch_size_upper_bound(1, 20, NULL, 0) >= sizeof buf);
    kp_record_batch_t tiny;
    cr_expect_eq(kp__record_batch_init(&tiny, buf, 60, 0), KP_EINVAL);
}

Test(record_batch, close_rules_and_restamp)
{
    uint8_t buf[256];
    kp_record_batch_t b;
    cr_assert_eq(kp__record_batch_init(&b, buf, sizeof buf, 1), 0);
    cr_expect_eq(kp__record_batch_close(&b, 1, 0, 0, NULL), KP_EINVAL, "empty batch");
    cr_assert_eq(kp__record_batch_try_append(&b, 1, "a", 1, "b", 1, NULL, 0), 0);
    cr_assert_eq(kp__record_batch_close(&b, 1, 0, 0, NULL), 0);
    cr_expect_eq(kp__record_batch_close(&b, 1, 0, 0, NULL), KP_EINVAL, "closed twice");
    cr_expect_eq(kp__record_batch_try_append(&b, 1, "a", 1, "b", 1, NULL, 0), KP_EINVAL);
    cr_assert_eq(kp__record_batch_set_producer(&b, 900, 7, 42), 0);
    size_t len;
    const uint8_t *data = kp__record_batch_data(&b, &len);
    kp_record_batch_reader_t rd;
    cr_assert_eq(kp__record_batch_reader_open(&rd, data, len, 4096), 0, "crc recomputed");
    cr_expect_eq(rd.producer_id, 900);
    cr_expect_eq(rd.producer_epoch, 7);
    cr_expect_eq(rd.base_sequence, 42);
    kp__record_batch_reader_close(&rd);
    kp_record_batch_t open;
    kp__record_batch_init(&open, buf, sizeof buf, 0);
    cr_expect_eq(kp__record_batch_set_producer(&open, 1, 1, 1), KP_EINVAL, "not closed");
}

static void fill_batch(kp_record_batch_t *b, uint8_t *buf, size_t cap, int n)
{
    cr_assert_eq(kp__record_batch_init(b, buf, cap, 1700000000000LL), 0);
    char value[200];
    for (int i = 0; i < n; i++) {
        int vlen = snprintf(value, sizeof value, "segment-%d-%0100d", i, i);
        char key[32];
        int klen = snprintf(key, sizeof key, "key-%d", i);
        cr_assert_eq(kp__record_batch_try_append(b, 1700000000000LL + i, key, (size_t)klen, value,
                                                 (size_t)vlen, NULL, 0),
                     0);
    }
}

Test(record_batch, gzip_round_trip_both_output_modes)
{
    static uint8_t buf[16384];
    kp_record_batch_t b;
    fill_batch(&b, buf, sizeof buf, 50);
    size_t bound = kp__record_batch_compressed_bound(&b, KP_COMPRESSION_GZIP);
    uint8_t *out = malloc(bound);
    kp_batch_compression_t gz = {KP_COMPRESSION_GZIP, -1, out, bound};
    cr_assert_eq(kp__record_batch_close(&b, 5, 1, 0, &gz), 0);
    size_t len;
    const uint8_t *data = kp__record_batch_data(&b, &len);
    cr_expect_eq(data, out);
    cr_expect_lt(len, b.len, "compressed smaller than %zu", b.len);
    cr_expect_eq(data[22] & 7, 1, "attributes codec gzip");
    kp_record_batch_reader_t rd;
    cr_assert_eq(kp__record_batch_reader_open(&rd, data, len, 1 << 20), 0);
    kp_record_view_t rec;
    int n = 0, rc;
    while ((rc = kp__record_batch_reader_next(&rd, &rec)) == 1) {
        cr_expect_eq(rec.offset, n);
        cr_expect_eq(rec.timestamp, 1700000000000LL + n);
        n++;
    }
    cr_expect_eq(rc, 0);
    cr_expect_eq(n, 50);
    kp__record_batch_reader_close(&rd);
    cr_expect_eq(kp__record_batch_set_producer(&b, 6, 2, 10), 0);
    cr_assert_eq(kp__record_batch_reader_open(&rd, data, len, 1 << 20), 0);
    cr_expect_eq(rd.base_sequence, 10);
    kp__record_batch_reader_close(&rd);
    kp__record_batch_release(&b);
    free(out);

    /* The batch allocates the output itself; a too small caller buffer is KP_ENOSPACE. */
    fill_batch(&b, buf, sizeof buf, 50);
    uint8_t small[80];
    kp_batch_compression_t tiny = {KP_COMPRESSION_GZIP, 1, small, sizeof small};
    cr_expect_eq(kp__record_batch_close(&b, 5, 1, 0, &tiny), KP_ENOSPACE);
    kp_batch_compression_t own = {KP_COMPRESSION_GZIP, 9, NULL, 0};
    cr_assert_eq(kp__record_batch_close(&b, 5, 1, 0, &own), 0, "close again after an error");
    data = kp__record_batch_data(&b, &len);
    cr_assert_eq(kp__record_batch_reader_open(&rd, data, len, 1 << 20), 0);
    kp__record_batch_reader_close(&rd);
    kp__record_batch_release(&b);
    cr_expect_null(kp__record_batch_data(&b, &len));
    kp_batch_compression_t bad = {KP_COMPRESSION_GZIP, 42, NULL, 0};
    fill_batch(&b, buf, sizeof buf, 1);
    cr_expect_eq(kp__record_batch_close(&b, 5, 1, 0, &bad), KP_EINVAL, "level 42");
}

Test(record_batch, reader_rejects_corruption_and_truncation)
{
    uint8_t buf[1024];
    kp_record_batch_t b;
    fill_batch(&b, buf, sizeof buf, 3);
    cr_assert_eq(kp__record_batch_close(&b, -1, -1, -1, NULL), 0);
    size_t len;
    const uint8_t *data = kp__record_batch_data(&b, &len);
    uint8_t copy[1024];
    memcpy(copy, data, len);
    kp_record_batch_reader_t rd;
    copy[len - 1] ^= 1;
    cr_expect_eq(kp__record_batch_reader_open(&rd, copy, len, 4096), KP_ECORRUPT);
    copy[len - 1] ^= 1;
    copy[16] = 1;
    cr_expect_eq(kp__record_batch_reader_open(&rd, copy, len, 4096), KP_EUNSUPPORTED_VERSION);
    copy[16] = 2;
    for (size_t cut = 0; cut < len; cut++) {
        cr_assert_eq(kp__record_batch_reader_open(&rd, copy, cut, 4096), KP_ETRUNCATED, "cut %zu",
                     cut);
    }
    /* A count that lies (more records than bytes) with a recomputed crc. */
    copy[60] = 4;
    uint32_t crc = kp__crc32c(0, copy + 21, len - 21);
    copy[17] = (uint8_t)(crc >> 24);
    copy[18] = (uint8_t)(crc >> 16);
    copy[19] = (uint8_t)(crc >> 8);
    copy[20] = (uint8_t)crc;
    cr_assert_eq(kp__record_batch_reader_open(&rd, copy, len, 4096), 0);
    kp_record_view_t rec;
    int rc;
    int n = 0;
    while ((rc = kp__record_batch_reader_next(&rd, &rec)) == 1) {
        n++;
    }
    cr_expect_eq(n, 3);
    cr_expect_lt(rc, 0, "the 4th record is missing: %d", rc);
    kp__record_batch_reader_close(&rd);
}

/* lz4 and zstd batches: codec bits, the reader decompresses them, set_producer restamps. */
static void codec_round_trip(kp_compression_t type)
{
    static uint8_t buf[16384];
    kp_record_batch_t b;
    fill_batch(&b, buf, sizeof buf, 50);
    size_t plain = b.len;
    kp_batch_compression_t c = {type, -1, NULL, 0};
    cr_assert_gt(kp__record_batch_compressed_bound(&b, type), KP_RECORD_BATCH_HEADER_SIZE);
    cr_assert_eq(kp__record_batch_close(&b, 5, 1, 0, &c), 0);
    size_t len;
    const uint8_t *data = kp__record_batch_data(&b, &len);
    cr_expect_lt(len, plain, "compressed %zu of %zu bytes", len, plain);
    cr_expect_eq(data[22] & 7, (int)type, "attributes codec");
    cr_expect_eq(kp__record_batch_set_producer(&b, 6, 2, 10), 0);
    kp_record_batch_reader_t rd;
    cr_assert_eq(kp__record_batch_reader_open(&rd, data, len, 1 << 20), 0);
    cr_expect_eq(rd.base_sequence, 10);
    kp_record_view_t rec;
    int n = 0, rc;
    while ((rc = kp__record_batch_reader_next(&rd, &rec)) == 1) {
        char key[32];
        int klen = snprintf(key, sizeof key, "key-%d", n);
        cr_expect_eq(rec.key_len, klen);
        cr_expect_eq(memcmp(rec.key, key, (size_t)klen), 0);
        cr_expect_eq(rec.offset, n++);
    }
    cr_expect_eq(rc, 0);
    cr_expect_eq(n, 50);
    kp__record_batch_reader_close(&rd);
    cr_expect_eq(kp__record_batch_reader_open(&rd, data, len, 100), KP_ECOMPRESSION,
                 "decompressed size over max_inflated");
    kp__record_batch_release(&b);
}

Test(record_batch, lz4_round_trip)
{
    codec_round_trip(KP_COMPRESSION_LZ4);
}

Test(record_batch, zstd_round_trip)
{
    codec_round_trip(KP_COMPRESSION_ZSTD);
}
