/*
 * test_kafka_codec.c - protocol primitives: integers, varints at their edges, strings, bytes,
 * arrays, tagged fields; sticky errors; truncated and lying input; error names.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <string.h>

#include "wire/codec.h"

Test(codec, big_endian_integers)
{
    uint8_t buf[32];
    kp_writer_t w;
    kp__writer_init(&w, buf, sizeof buf);
    kp__write_i8(&w, -2);
    kp__write_i16(&w, 0x1234);
    kp__write_i32(&w, -1);
    kp__write_i64(&w, 0x0102030405060708LL);
    kp__write_bool(&w, true);
    cr_assert_eq(w.err, 0);
    static const uint8_t want[] = {0xfe, 0x12, 0x34, 0xff, 0xff, 0xff, 0xff, 1,
                                   2,    3,    4,    5,    6,    7,    8,    1};
    cr_assert_eq(w.len, sizeof want);
    cr_assert_arr_eq(buf, want, sizeof want);
    kp_reader_t r;
    kp__reader_init(&r, buf, w.len);
    cr_expect_eq(kp__read_i8(&r), -2);
    cr_expect_eq(kp__read_i16(&r), 0x1234);
    cr_expect_eq(kp__read_i32(&r), -1);
    cr_expect_eq(kp__read_i64(&r), 0x0102030405060708LL);
    cr_expect_eq(kp__read_bool(&r), true);
    cr_expect_eq(r.err, 0);
    cr_expect_eq(kp__read_i8(&r), 0);
    cr_expect_eq(r.err, KP_ETRUNCATED, "reading past the end is KP_ETRUNCATED");
}

Test(codec, varint_edges_round_trip)
{
    static const int32_t v32[] = {0, 1, -1, 63, -64, 64, INT32_MAX, INT32_MIN};
    static const int64_t v64[] = {0, 1, -1, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
    uint8_t buf[256];
    kp_writer_t w;
    kp__writer_init(&w, buf, sizeof buf);
    for (size_t i = 0; i < sizeof v32 / sizeof v32[0]; i++) {
        kp__write_varint(&w, v32[i]);
    }
    for (size_t i = 0; i < sizeof v64 / sizeof v64[0]; i++) {
        kp__write_varlong(&w, v64[i]);
    }
    kp__write_uvarint(&w, UINT32_MAX);
    cr_assert_eq(w.err, 0);
    kp_reader_t r;
    kp__reader_init(&r, buf, w.len);
    for (size_t i = 0; i < sizeof v32 / sizeof v32[0]; i++) {
        cr_expect_eq(kp__read_varint(&r), v32[i], "varint %d", v32[i]);
    }
    for (size_t i = 0; i < sizeof v64 / sizeof v64[0]; i++) {
        cr_expect_eq(kp__read_varlong(&r), v64[i], "varlong %lld", (long long)v64[i]);
    }
    cr_expect_eq(kp__read_uvarint(&r), UINT32_MAX);
    cr_expect_eq(r.err, 0);
    cr_expect_eq(kp__reader_remaining(&r), 0);
}

Test(codec, varint_encodings_and_sizes)
{
    uint8_t buf[16];
    kp_writer_t w;
    kp__writer_init(&w, buf, sizeof buf);
    kp__write_varint(&w, -1); /* zig-zag 1 */
    kp__write_varint(&w, 1);  /* zig-zag 2 */
    kp__write_varint(&w, 64); /* zig-zag 128 = 0x80 0x01 */
    kp__write_varint(&w, INT32_MIN);
    static const uint8_t want[] = {0x01, 0x02, 0x80, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f};
    cr_assert_eq(w.len, sizeof want);
    cr_assert_arr_eq(buf, want, sizeof want);
    cr_expect_eq(kp__varint_size(0), 1);
    cr_expect_eq(kp__varint_size(-64), 1);
    cr_expect_eq(kp__varint_size(64), 2);
    cr_expect_eq(kp__varint_size(INT32_MIN), 5);
    cr_expect_eq(kp__varlong_size(INT64_MIN), 10);
    cr_expect_eq(kp__varlong_size(-1), 1);
    cr_expect_eq(kp__uvarint_size(UINT32_MAX), 5);
}

Test(codec, truncated_and_overlong_varints_rejected)
{
    static const uint8_t truncated[] = {0x80, 0x80};
    kp_reader_t r;
    kp__reader_init(&r, truncated, sizeof truncated);
    cr_expect_eq(kp__read_varint(&r), 0);
    cr_expect_eq(r.err, KP_ETRUNCATED);

    static const uint8_t overlong[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    kp__reader_init(&r, overlong, sizeof overlong);
    kp__read_varint(&r);
    cr_expect_eq(r.err, KP_EMALFORMED, "a 6-byte varint is malformed");

    static const uint8_t too_big[] = {0xff, 0xff, 0xff, 0xff, 0x1f};
    kp__reader_init(&r, too_big, sizeof too_big);
    kp__read_uvarint(&r);
    cr_expect_eq(r.err, KP_EMALFORMED, "a uvarint over 32 bits is malformed");

    uint8_t long11[11];
    memset(long11, 0x80, sizeof long11);
    kp__reader_init(&r, long11, sizeof long11);
    kp__read_varlong(&r);
    cr_expect_eq(r.err, KP_EMALFORMED, "an 11-byte varlong is malformed");

    kp__reader_init(&r, truncated, 1);
    kp__read_varlong(&r);
    cr_expect_eq(r.err, KP_ETRUNCATED);
}

Test(codec, strings_and_bytes)
{
    uint8_t buf[128];
    kp_writer_t w;
    kp__writer_init(&w, buf, sizeof buf);
    kp__write_string(&w, "ab", 2);
    kp__write_nullable_string(&w, NULL, 0);
    kp__write_compact_string(&w, "xyz", 3);
    kp__write_compact_nullable_string(&w, NULL, 0);
    kp__write_nullable_bytes(&w, "\x01\x02", 2);
    kp__write_compact_nullable_bytes(&w, NULL, 0);
    kp__write_compact_bytes(&w, "", 0);
    kp__write_array_len(&w, -1);
    kp__write_compact_array_len(&w, 2);
    kp__write_tagged_fields_empty(&w);
    cr_assert_eq(w.err, 0);
    static const uint8_t want[] = {0, 2, 'a', 'b', 0xff, 0xff, 4,    'x',  'y',  'z',  0, 0, 0,
                                   0, 2, 1,   2,   0,    1,    0xff, 0xff, 0xff, 0xff, 3, 0};
    cr_assert_eq(w.len, sizeof want);
    cr_assert_arr_eq(buf, want, sizeof want);

    kp_reader_t r;
    kp__reader_init(&r, buf, w.len);
    char *s = kp__read_str_dup(&r, false);
    cr_expect_str_eq(s, "ab");
    free(s);
    cr_expect_null(kp__read_nullable_str_dup(&r, false));
    s = kp__read_str_dup(&r, true);
    cr_expect_str_eq(s, "xyz");
    free(s);
    cr_expect_null(kp__read_nullable_str_dup(&r, true));
    const uint8_t *p;
    size_t n;
    cr_expect_eq(kp__read_nullable_bytes(&r, false, &p, &n), 0);
    cr_expect_eq(n, 2);
    cr_expect_eq(p[1], 2);
    kp__read_nullable_bytes(&r, true, &p, &n);
    cr_expect_null(p);
    kp__read_nullable_bytes(&r, true, &p, &n);
    cr_expect_not_null(p);
    cr_expect_eq(n, 0);
    bool is_null;
    cr_expect_eq(kp__read_array_len(&r, false, 1, &is_null), 0);
    cr_expect(is_null);
    /* compact array of 2, then 1 byte left: fits with min element size 0/1? 2 > 1 left. */
    kp_reader_t copy = r;
    cr_expect_eq(kp__read_array_len(&copy, true, 1, NULL), 0);
    cr_expect_eq(copy.err, KP_ETRUNCATED, "2 elements cannot fit in 1 byte");
    cr_expect_eq(r.err, 0);
}

Test(codec, non_nullable_string_null_is_malformed)
{
    static const uint8_t null16[] = {0xff, 0xff};
    kp_reader_t r;
    kp__reader_init(&r, null16, sizeof null16);
    cr_expect_null(kp__read_str_dup(&r, false));
    cr_expect_eq(r.err, KP_EMALFORMED);
    static const uint8_t neg[] = {0xff, 0xfe};
    kp__reader_init(&r, neg, sizeof neg);
    kp__read_nullable_str_dup(&r, false);
    cr_expect_eq(r.err, KP_EMALFORMED, "length -2 is malformed");
    static const uint8_t lying[] = {0x00, 0x10, 'a'};
    kp__reader_init(&r, lying, sizeof lying);
    kp__read_str_dup(&r, false);
    cr_expect_eq(r.err, KP_ETRUNCATED, "a length past the end is KP_ETRUNCATED");
}

Test(codec, lying_array_length_never_allocates)
{
    static const uint8_t lying[] = {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0};
    kp_reader_t r;
    kp__reader_init(&r, lying, sizeof lying);
    cr_expect_eq(kp__read_array_len(&r, false, 4, NULL), 0);
    cr_expect_eq(r.err, KP_ETRUNCATED);
    static const uint8_t neg[] = {0xff, 0xff, 0xff, 0xfe};
    kp__reader_init(&r, neg, sizeof neg);
    kp__read_array_len(&r, false, 4, NULL);
    cr_expect_eq(r.err, KP_EMALFORMED);
}

Test(codec, tagged_fields_skipped)
{
    /* two tags: tag 0 size 2, tag 5 size 0, then one byte 0x42 */
    static const uint8_t data[] = {2, 0, 2, 0xaa, 0xbb, 5, 0, 0x42};
    kp_reader_t r;
    kp__reader_init(&r, data, sizeof data);
    kp__read_tagged_fields_skip(&r);
    cr_expect_eq(r.err, 0);
    cr_expect_eq(kp__read_i8(&r), 0x42);
    static const uint8_t lying[] = {1, 0, 9, 0xaa};
    kp__reader_init(&r, lying, sizeof lying);
    kp__read_tagged_fields_skip(&r);
    cr_expect_eq(r.err, KP_ETRUNCATED);
}

Test(codec, fixed_writer_error_is_sticky)
{
    uint8_t buf[5];
    kp_writer_t w;
    kp__writer_init(&w, buf, sizeof buf);
    kp__write_i32(&w, 7);
    kp__write_i16(&w, 1);
    cr_expect_eq(w.err, KP_ENOSPACE);
    cr_expect_eq(w.len, 4, "a failed write leaves the written bytes alone");
    kp__write_i8(&w, 1);
    cr_expect_eq(w.len, 4, "no write after an error");
    kp_writer_t s;
    kp__writer_init(&s, buf, sizeof buf);
    kp__write_string(&s, NULL, 0);
    cr_expect_eq(s.err, KP_EINVAL, "NULL for a non-nullable string");
}

Test(codec, growable_writer_and_size_patch)
{
    kp_writer_t w;
    cr_assert_eq(kp__writer_init_growable(&w, 1), 0);
    kp__write_i32(&w, 0);
    for (int i = 0; i < 1000; i++) {
        kp__write_i32(&w, i);
    }
    kp__write_i32_at(&w, 0, (int32_t)(w.len - 4));
    cr_assert_eq(w.err, 0);
    size_t len;
    uint8_t *buf = kp__writer_detach(&w, &len);
    cr_assert_not_null(buf);
    cr_expect_eq(len, 4004);
    kp_reader_t r;
    kp__reader_init(&r, buf, len);
    cr_expect_eq(kp__read_i32(&r), 4000);
    cr_expect_eq(kp__read_i32(&r), 0);
    cr_expect_eq(kp__read_i32(&r), 1);
    free(buf);
    kp_writer_t f;
    uint8_t small[4];
    kp__writer_init(&f, small, sizeof small);
    kp__write_i32_at(&f, 2, 1);
    cr_expect_eq(f.err, KP_EINVAL, "patching bytes not yet written");
}

Test(codec, error_names)
{
    cr_expect_str_eq(kp_err_name(KP_ETRUNCATED), "KP_ETRUNCATED");
    cr_expect_str_eq(kp_err_name(KP_EUNSUPPORTED_VERSION), "KP_EUNSUPPORTED_VERSION");
    cr_expect_str_eq(kp_err_name(0), "KP_OK");
    cr_expect_str_eq(kp_err_name(-9999), "unknown");
    cr_expect_str_eq(kp_strerror(KP_ECORRUPT), "checksum mismatch");
    cr_expect_not_null(kp_strerror(12345));
}
