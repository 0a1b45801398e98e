/*
 * test_utf8.c - the agent's one cleaner of strings for proto3 string fields
 * (agent/src/util/utf8.h), checked against the tests' own oracle (tests/support/utf8_valid.h,
 * written from the Unicode table, not from the cleaner):
 *
 *   - the ASCII fast path answers right for every length and position of a high byte;
 *   - every 1-, 2- and 3-byte string and a million random longer ones come out valid, and a
 *     valid one comes out unchanged;
 *   - cuts back up to a sequence boundary;
 *   - through the agent (file reporter): an operation name, peer, tag and span log with hostile
 *     bytes are recorded cleaned, and a span log field is cut to SW_LOG_TAG_MAX bytes.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "segment/segment.h"
#include "util/utf8.h"
#include "test_agent_support.h"
#include "utf8_valid.h"

Test(utf8, ascii_fast_path_sees_a_high_byte_at_every_length_and_position)
{
    unsigned char buf[96];
    for (size_t n = 0; n <= 40; n++) {
        for (size_t off = 0; off < 8; off++) {
            memset(buf, 0x80, sizeof buf); /* high bytes around the string must not count */
            memset(buf + 16 + off, 'a', n);
            cr_assert(sw__utf8_ascii(buf + 16 + off, n), "n=%zu off=%zu: ASCII seen as not", n,
                      off);
            for (size_t at = 0; at < n; at++) {
                buf[16 + off + at] = 0xc3;
                cr_assert_not(sw__utf8_ascii(buf + 16 + off, n), "n=%zu: high byte at %zu missed",
                              n, at);
                buf[16 + off + at] = 'a';
            }
        }
    }
}

static void expect_clean(const char *in, size_t len, const char *want)
{
    char buf[64];
    memcpy(buf, in, len);
    bool cut = true;
    size_t n = sw__utf8_clean(buf, len, sizeof buf, &cut);
    cr_assert_not(cut);
    cr_assert_eq(n, len);
    cr_assert_eq(memcmp(buf, want, len), 0, "cleaned to '%.*s', want '%s'", (int)len, buf, want);
}

Test(utf8, hostile_sequences_become_question_marks)
{
    expect_clean("/\xff\xfe", 3, "/??");         /* GET /%FF%FE unescaped */
    expect_clean("/\xc3\x28", 3, "/?(");         /* a lead byte without continuation */
    expect_clean("\xc0\xaf", 2, "??");           /* overlong '/' */
    expect_clean("\xe0\x80\xaf", 3, "???");      /* overlong, 3 bytes */
    expect_clean("\xed\xa0\x80", 3, "???");      /* a surrogate */
    expect_clean("\xf4\x90\x80\x80", 4, "????"); /* above U+10FFFF */
    expect_clean("ab\xe2\x82", 4, "ab??");       /* cut short at the end */
    expect_clean("\x80x", 2, "?x");              /* a stray continuation byte */
    expect_clean("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80", 14,
                 "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80"); /* valid: unchanged */
}

/* Cleans in[0..len) and checks it with the oracle; a valid input must come out unchanged. */
static void clean_check(const unsigned char *in, size_t len)
{
    char buf[16];
    memcpy(buf, in, len);
    sw__utf8_fix(buf, len);
    if (!test_utf8_valid(buf, len)) {
        cr_assert_fail("cleaned bytes are not valid UTF-8 (len %zu, first %02x)", len, in[0]);
    }
    if (test_utf8_valid((const char *)in, len) && memcmp(buf, in, len) != 0) {
        cr_assert_fail("a valid string was changed (len %zu, first %02x)", len, in[0]);
    }
}

Test(utf8, every_short_string_and_random_long_ones_come_out_valid, .timeout = 120)
{
    unsigned char s[16];
    for (unsigned a = 0; a < 256; a++) {
        s[0] = (unsigned char)a;
        clean_check(s, 1);
        for (unsigned b = 0; b < 256; b++) {
            s[1] = (unsigned char)b;
            clean_check(s, 2);
            for (unsigned c = 0; c < 256; c++) {
                s[2] = (unsigned char)c;
                clean_check(s, 3);
            }
        }
    }
    /* Random strings of 4..16 bytes mostly from the bytes that make sequences. */
    static const unsigned char pool[] = {'a',  0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf,
                                         0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed,
                                         0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff};
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < 1000000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t len = 4 + (size_t)(x % 13);
        for (size_t k = 0; k < len; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            s[k] = pool[x % sizeof pool];
        }
        clean_check(s, len);
    }
}

Test(utf8, a_cut_never_splits_a_sequence)
{
    const char *s = "a\xf0\x9f\x98\x80z"; /* 'a', U+1F600, 'z' */
    cr_assert_eq(sw__utf8_cut(s, 6, 6), 6);
    cr_assert_eq(sw__utf8_cut(s, 6, 5), 5, "before the z");
    for (size_t max = 1; max <= 4; max++) {
        cr_assert_eq(sw__utf8_cut(s, 6, max), 1, "max %zu splits the emoji: back to 1", max);
    }
    cr_assert_eq(sw__utf8_len_capped("\xc3\xa9\xc3\xa9", 3), 2);
    cr_assert_eq(sw__utf8_len_capped("abc", 3), 3);
    cr_assert_eq(sw__utf8_len_capped(NULL, 3), 0);
}

Test(utf8, the_segment_arena_cleans_and_cuts_on_a_boundary)
{
    size_t size = sw__segment_block_size(4, 256);
    sw__segment_t *seg = aligned_alloc(64, (size + 63) & ~(size_t)63);
    cr_assert_not_null(seg);
    sw__segment_format(seg, 4, 256);
    uint32_t len;
    const char *op = sw__segment_strdup_len(seg, "GET /\xff\xfe", &len);
    cr_assert_str_eq(op, "GET /??");
    cr_assert_eq(len, 7);
    /* Fill the arena with 2-byte sequences: the cut keeps whole ones only. */
    char big[600];
    for (size_t i = 0; i + 1 < sizeof big; i += 2) {
        big[i] = '\xc3', big[i + 1] = '\xa9';
    }
    big[sizeof big - 1] = '\0';
    const char *cut = sw__segment_strdup_len(seg, big, &len);
    cr_assert_gt(len, 0);
    cr_assert_lt(len, sizeof big - 1);
    cr_assert_eq(strlen(cut), len);
    cr_assert(test_utf8_valid(cut, len), "a cut split a sequence");
    cr_assert_eq(memcmp(cut, big, len), 0, "nothing but the cut changed");
    free(seg);
}

/* ---- through the agent ------------------------------------------------------------------- */

static const char *kv_value(Skywalking__V3__KeyStringValuePair **kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(kv[i]->key, key) == 0) {
            return kv[i]->value;
        }
    }
    return NULL;
}

Test(utf8, hostile_strings_through_the_api_arrive_cleaned_and_log_fields_capped)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    char *long_value = malloc(5000);
    cr_assert_not_null(long_value);
    long_value[0] = 'a';
    for (size_t i = 1; i + 1 < 5000; i += 2) {
        long_value[i] = '\xc3', long_value[i + 1] = '\xa9'; /* "a" then "é"s */
    }
    long_value[4999] = '\0';
    sw_entry_span_begin("GET /\xff\xfe", NULL);
    sw_exit_span_begin("exit \xc3\x28", "peer\xed\xa0\x80:80");
    cr_assert_eq(sw_span_tag("key\xc0", "value\xf4\x90\x80\x80"), 0);
    sw_kv_t fields[] = {{"event", "bad \xe2\x82"}, {"stack", long_value}};
    cr_assert_eq(sw_span_log(fields, 2), 0);
    sw_span_end();
    sw_span_end();
    free(long_value);
    agent_test_stop();

    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 1);
    const Skywalking__V3__SegmentObject *seg = d.items[0];
    cr_assert_eq(seg->n_spans, 2);
    const Skywalking__V3__SpanObject *entry = seg->spans[1], *exit_span = seg->spans[0];
    if (entry->spantype != SKYWALKING__V3__SPAN_TYPE__Entry) {
        entry = seg->spans[0], exit_span = seg->spans[1];
    }
    cr_expect_str_eq(entry->operationname, "GET /??");
    cr_expect_str_eq(exit_span->operationname, "exit ?(");
    cr_expect_str_eq(exit_span->peer, "peer???:80");
    cr_assert_eq(exit_span->n_tags, 1);
    cr_expect_str_eq(exit_span->tags[0]->key, "key?");
    cr_expect_str_eq(exit_span->tags[0]->value, "value????");
    cr_assert_eq(exit_span->n_logs, 1);
    const Skywalking__V3__Log *log = exit_span->logs[0];
    cr_expect_str_eq(kv_value(log->data, log->n_data, "event"), "bad ??");
    const char *stack = kv_value(log->data, log->n_data, "stack");
    cr_assert_not_null(stack);
    /* 1024 bytes would split an "é" (1 + 2k): cut back to 1023. */
    cr_expect_eq(strlen(stack), SW_LOG_TAG_MAX - 1, "a span log field is cut to SW_LOG_TAG_MAX");
    cr_expect(test_utf8_valid_str(stack));
    agent_test_free(&d);
}
