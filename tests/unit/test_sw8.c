/*
 * test_sw8.c - base64, sw8, sw8-x and sw8-correlation: encode, decode, and every malformed
 * variant rejected without a crash.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "swc_base64.h"
#include "propagation/correlation.h"
#include "propagation/sw8.h"
#include "skywalking.h"

static char scratch[SW__SW8_HEADER_MAX + 16];

static int decode(const char *h, sw__sw8_t *out, const char **why)
{
    return sw__sw8_decode(h, strlen(h), out, scratch, sizeof scratch, why);
}

Test(base64, round_trips_every_length_and_rejects_malformed)
{
    const char *in = "sky\xffwalking-c";
    char enc[64], dec[64];
    for (size_t n = 0; n <= strlen(in); n++) {
        long e = swc__base64_encode(in, n, enc, sizeof enc);
        cr_assert_eq((size_t)e, swc__base64_encoded_len(n));
        long d = swc__base64_decode(enc, (size_t)e, dec, sizeof dec);
        cr_assert_eq((size_t)d, n);
        cr_assert_eq(memcmp(dec, in, n), 0);
    }
    cr_expect_str_eq((swc__base64_encode("ab", 2, enc, sizeof enc), enc), "YWI=");
    const char *bad[] = {"YWI", "YW=I", "Y===", "====", "YWI*", "YW I", "=YWI"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(swc__base64_decode(bad[i], strlen(bad[i]), dec, sizeof dec), -1, "%s", bad[i]);
    }
    cr_expect_eq(swc__base64_decode("YWJj", 4, dec, 3), -1, "too small output");
    cr_expect_eq(swc__base64_encode("abc", 3, enc, 4), -1, "too small output");
}

static const sw__sw8_t sample = {
    .sample = 1,
    .parent_span_id = 7,
    .trace_id = "a9a8.45.16000000000000001",
    .parent_segment_id = "b7b7.45.16000000000000002",
    .parent_service = "orders",
    .parent_instance = "orders-1@host",
    .parent_endpoint = "GET /orders/{id}",
    .address = "10.0.0.1:8080",
};

Test(sw8, encodes_to_the_documented_shape_and_decodes_back)
{
    char h[SW_SW8_MAX];
    int n = sw__sw8_encode(&sample, h, sizeof h);
    cr_assert_gt(n, 0);
    cr_assert_eq((size_t)n, strlen(h));
    /* 1-b64(trace)-b64(segment)-7-b64(service)-... */
    char expect[SW_SW8_MAX], t[128], s[128], sv[64], in[64], ep[64], ad[64];
    swc__base64_encode(sample.trace_id, strlen(sample.trace_id), t, sizeof t);
    swc__base64_encode(sample.parent_segment_id, strlen(sample.parent_segment_id), s, sizeof s);
    swc__base64_encode(sample.parent_service, strlen(sample.parent_service), sv, sizeof sv);
    swc__base64_encode(sample.parent_instance, strlen(sample.parent_instance), in, sizeof in);
    swc__base64_encode(sample.parent_endpoint, strlen(sample.parent_endpoint), ep, sizeof ep);
    swc__base64_encode(sample.address, strlen(sample.address), ad, sizeof ad);
    snprintf(expect, sizeof expect, "1-%s-%s-7-%s-%s-%s-%s", t, s, sv, in, ep, ad);
    cr_expect_str_eq(h, expect);

    sw__sw8_t out;
    cr_assert_eq(decode(h, &out, NULL), 0);
    cr_expect_eq(out.sample, 1);
    cr_expect_eq(out.parent_span_id, 7);
    cr_expect_str_eq(out.trace_id, sample.trace_id);
    cr_expect_str_eq(out.parent_segment_id, sample.parent_segment_id);
    cr_expect_str_eq(out.parent_service, sample.parent_service);
    cr_expect_str_eq(out.parent_instance, sample.parent_instance);
    cr_expect_str_eq(out.parent_endpoint, sample.parent_endpoint);
    cr_expect_str_eq(out.address, sample.address);
    cr_expect_eq(sw__sw8_encode(&sample, h, 20), SW_ENOSPACE);
    cr_expect_str_eq(h, "");
}

Test(sw8, accepts_a_header_encoded_by_another_base64_implementation)
{
    /* Built with Python's base64 module: Java-agent-shaped ids, sample 1, span id 3. */
    const char *h = "1-YTNiN2MxZTBmNmE2NGMyYjliOWMyYjFkMmUzZjRhNWIuMS4xNjk0MjA0MDQ0MjY3MDAwMQ==-"
                    "YTNiN2MxZTBmNmE2NGMyYjliOWMyYjFkMmUzZjRhNWIuMS4xNjk0MjA0MDQ0MjY3MDAwMg==-3-"
                    "c2VydmljZQ==-aW5zdGFuY2U=-L2FwcA==-MTI3LjAuMC4xOjgwODA=";
    sw__sw8_t out;
    const char *why = NULL;
    cr_assert_eq(decode(h, &out, &why), 0, "%s", why ? why : "");
    cr_expect_str_eq(out.trace_id, "a3b7c1e0f6a64c2b9b9c2b1d2e3f4a5b.1.16942040442670001");
    cr_expect_str_eq(out.parent_service, "service");
    cr_expect_str_eq(out.parent_instance, "instance");
    cr_expect_str_eq(out.parent_endpoint, "/app");
    cr_expect_str_eq(out.address, "127.0.0.1:8080");
    cr_expect_eq(out.parent_span_id, 3);
}

/* Every malformed variant: rejected with a reason, never a crash. */
Test(sw8, rejects_every_malformed_variant)
{
    const char *ok = "1-dA==-cw==-3-c3Y=-aW4=-ZXA=-YWQ=";
    sw__sw8_t out;
    cr_assert_eq(decode(ok, &out, NULL), 0);
    const char *bad[] = {
        "",                                                     /* empty */
        "1",                                                    /* one field */
        "1-dA==-cw==-3-c3Y=-aW4=-ZXA=",                         /* 7 fields: address missing */
        "1-dA==-cw==-3-c3Y=-aW4=-ZXA=-YWQ=-eA==",               /* 9 fields */
        "1--cw==-3-c3Y=-aW4=-ZXA=-YWQ=",                        /* empty trace id */
        "1-dA==-cw==-3-c3Y=-aW4=-ZXA=-",                        /* empty address */
        "-dA==-cw==-3-c3Y=-aW4=-ZXA=-YWQ=",                     /* empty sample */
        "2-dA==-cw==-3-c3Y=-aW4=-ZXA=-YWQ=",                    /* sample not 0/1 */
        "11-dA==-cw==-3-c3Y=-aW4=-ZXA=-YWQ=",                   /* sample too long */
        "1-dA==-cw==--1-c3Y=-aW4=-ZXA=-YWQ=",                   /* negative span id */
        "1-dA==-cw==-x-c3Y=-aW4=-ZXA=-YWQ=",                    /* non-numeric span id */
        "1-dA==-cw==-3a-c3Y=-aW4=-ZXA=-YWQ=",                   /* trailing garbage in span id */
        "1-dA==-cw==-+3-c3Y=-aW4=-ZXA=-YWQ=",                   /* signed span id */
        "1-dA==-cw==-2147483648-c3Y=-aW4=-ZXA=-YWQ=",           /* span id over int32 */
        "1-dA==-cw==-99999999999999999999-c3Y=-aW4=-ZXA=-YWQ=", /* huge span id */
        "1-dA=-cw==-3-c3Y=-aW4=-ZXA=-YWQ=",                     /* bad base64 length */
        "1-d!==-cw==-3-c3Y=-aW4=-ZXA=-YWQ=",                    /* bad base64 character */
        "1-dA==-c=w=-3-c3Y=-aW4=-ZXA=-YWQ=",                    /* padding in the middle */
        "1-AA==-cw==-3-c3Y=-aW4=-ZXA=-YWQ=",                    /* decodes to a NUL byte */
        "1-dA==-cw==-3-c3Y=-aW4=-ZXA=-====",                    /* decodes to nothing */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *why = NULL;
        cr_expect_eq(decode(bad[i], &out, &why), SW_EINVAL, "accepted: '%s'", bad[i]);
        cr_expect_not_null(why, "no reason for '%s'", bad[i]);
    }
    /* Oversize: longer than 4096 bytes. */
    static char big[5000];
    memset(big, 'A', sizeof big - 1);
    memcpy(big, "1-", 2);
    const char *why = NULL;
    cr_expect_eq(sw__sw8_decode(big, strlen(big), &out, scratch, sizeof scratch, &why), SW_EINVAL);
    cr_expect_str_eq(why, "value longer than 4096 bytes");
    /* A trace id of 256+ bytes is refused (it would not fit a segment). */
    char longid[300], b64[420], h[600];
    memset(longid, 't', 256);
    longid[256] = '\0';
    swc__base64_encode(longid, 256, b64, sizeof b64);
    snprintf(h, sizeof h, "1-%s-cw==-3-c3Y=-aW4=-ZXA=-YWQ=", b64);
    cr_expect_eq(decode(h, &out, NULL), SW_EINVAL);
    /* Bytes not terminated by a NUL: the length is what counts. */
    cr_expect_eq(sw__sw8_decode(ok, 10, &out, scratch, sizeof scratch, NULL), SW_EINVAL);
    cr_expect_eq(sw__sw8_decode(NULL, 0, &out, scratch, sizeof scratch, NULL), SW_EINVAL);
}

/* Base64 may encode any bytes: decoded fields that are not valid UTF-8 are cleaned ('?'), not
   rejected, since they become a segment's trace id and reference strings (proto3 strings). */
Test(sw8, cleans_decoded_fields_that_are_not_utf8)
{
    /* trace "utf8.trace.\xff" "1", endpoint "/bad\xc3\x28" "end", service "caf\xc3\xa9". */
    const char *h = "1-dXRmOC50cmFjZS7/MQ==-dXRmOC5wYXJlbnQuc2VnbWVudA==-3-Y2Fmw6k=-"
                    "dXRmOC11cHN0cmVhbS0x-L2JhZMMoZW5k-MTI3LjAuMC4xOjgwODA=";
    sw__sw8_t out;
    cr_assert_eq(decode(h, &out, NULL), 0);
    cr_expect_str_eq(out.trace_id, "utf8.trace.?1");
    cr_expect_str_eq(out.parent_endpoint, "/bad?(end");
    cr_expect_str_eq(out.parent_service, "caf\xc3\xa9", "valid UTF-8 is kept");
}

Test(sw8x, encodes_and_decodes)
{
    char x[SW_SW8_X_MAX];
    cr_assert_eq(sw__sw8x_encode(1700000000123, x, sizeof x), 15);
    cr_expect_str_eq(x, "0-1700000000123");
    sw__sw8x_t out;
    cr_assert_eq(sw__sw8x_decode(x, strlen(x), &out, NULL), 0);
    cr_expect(!out.skip_analysis && out.has_timestamp && out.send_ms == 1700000000123);
    cr_assert_eq(sw__sw8x_decode("1-", 2, &out, NULL), 0);
    cr_expect(out.skip_analysis && !out.has_timestamp);
    const char *bad[] = {"", "1", "2-5", "1-x", "1--5", "15"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(sw__sw8x_decode(bad[i], strlen(bad[i]), &out, NULL), SW_EINVAL, "%s", bad[i]);
    }
    cr_expect_eq(sw__sw8x_encode(5, x, 3), SW_ENOSPACE);
}

Test(correlation, round_trips_and_enforces_limits)
{
    sw_correlation_t c = {0};
    cr_assert_eq(sw__correlation_put(&c, "a", "1"), 0);
    cr_assert_eq(sw__correlation_put(&c, "b", "2"), 0);
    cr_assert_eq(sw__correlation_put(&c, "c", "3"), 0);
    cr_expect_eq(sw__correlation_put(&c, "d", "4"), SW_ELIMIT, "a 4th key is refused");
    cr_expect_eq(sw__correlation_put(&c, "a", "one"), 0, "updating a key is fine");
    char v129[130];
    memset(v129, 'v', 129);
    v129[129] = '\0';
    cr_expect_eq(sw__correlation_put(&c, "a", v129), SW_ELIMIT);
    v129[128] = '\0';
    cr_expect_eq(sw__correlation_put(&c, "a", v129), 0, "128 bytes is the limit");
    cr_expect_eq(sw__correlation_put(&c, "", "x"), SW_EINVAL);
    cr_expect_eq(sw__correlation_put(&c, "b", ""), 0, "empty value removes");
    cr_expect_eq(c.count, 2);

    char h[SW_CORRELATION_HEADER_MAX];
    int n = sw__correlation_encode(&c, h, sizeof h);
    cr_assert_gt(n, 0);
    sw_correlation_t back;
    cr_assert_eq(sw__correlation_decode(h, (size_t)n, &back), 2);
    cr_expect_str_eq(back.items[0].key, "a");
    cr_expect_str_eq(back.items[0].value, v129);
    cr_expect_str_eq(back.items[1].key, "c");
    cr_expect_str_eq(back.items[1].value, "3");
    cr_expect_eq(sw__correlation_encode(&c, h, 10), SW_ENOSPACE);
}

Test(correlation, skips_malformed_elements_and_keeps_three)
{
    sw_correlation_t c;
    /* a:1, junk, b:2 with bad base64, c:3, d:4, e:5 */
    const char *h = "YQ==:MQ==,junk,Yg==:M!==,Yw==:Mw==,ZA==:NA==,ZQ==:NQ==";
    cr_assert_eq(sw__correlation_decode(h, strlen(h), &c), 3);
    cr_expect_str_eq(c.items[0].key, "a");
    cr_expect_str_eq(c.items[1].key, "c");
    cr_expect_str_eq(c.items[2].key, "d");
    cr_expect_eq(sw__correlation_decode("", 0, &c), 0);
    cr_expect_eq(sw__correlation_decode(":", 1, &c), 0);
    cr_expect_eq(sw__correlation_decode(",,,", 3, &c), 0);
    cr_expect_eq(sw__correlation_decode("YQ==:", 5, &c), 0, "empty value");
}
