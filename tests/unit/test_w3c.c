/*
 * test_w3c.c - W3C Trace Context: the traceparent and tracestate parsers against the valid and
 * invalid examples of the specification and of its test suite (w3c/trace-context test/test.py),
 * our `sw` tracestate member, SW_AGENT_PROPAGATION, and the API (sw_entry_span_begin_w3c,
 * sw_inject_w3c) through the file reporter.
 */
#include "segment/ids.h"
#include "propagation/sw8.h"
#include "propagation/traceparent.h"
#include "propagation/tracestate.h"
#include "test_agent_support.h"

#define TID "4bf92f3577b34da6a3ce929d0e0e4736"
#define PID "00f067aa0ba902b7"

Test(traceparent, valid_examples_parse_exactly)
{
    static const struct {
        const char *value;
        uint8_t version, flags;
        const char *trace_id, *parent_id;
    } ok[] = {
        {"00-" TID "-" PID "-01", 0, 1, TID, PID},
        {"00-" TID "-" PID "-00", 0, 0, TID, PID},
        {"00-12345678901234567890123456789012-1234567890123456-01", 0, 1,
         "12345678901234567890123456789012", "1234567890123456"},
        {" 00-" TID "-" PID "-01", 0, 1, TID, PID},   /* optional white space */
        {"00-" TID "-" PID "-01 \t", 0, 1, TID, PID}, /* around the value */
        {"\t00-" TID "-" PID "-01", 0, 1, TID, PID},
        {"00-" TID "-" PID "-09", 0, 9, TID, PID}, /* unknown flags are kept, bit 0 sampled */
        {"00-" TID "-" PID "-ff", 0, 0xff, TID, PID},
        {"cc-" TID "-" PID "-01", 0xcc, 1, TID, PID}, /* a future version, parsed as 00 */
        {"cc-" TID "-" PID "-01-what-the-future-will-be-like", 0xcc, 1, TID, PID},
        {"01-" TID "-" PID "-00-", 1, 0, TID, PID},
        {"fe-" TID "-" PID "-01-", 0xfe, 1, TID, PID},
        {"00-0000000000000000000000000000000f-000000000000000a-01", 0, 1,
         "0000000000000000000000000000000f", "000000000000000a"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        sw__traceparent_t t;
        const char *why = NULL;
        cr_assert_eq(sw__traceparent_decode(ok[i].value, strlen(ok[i].value), &t, &why), 0,
                     "rejected '%s': %s", ok[i].value, why);
        cr_expect_eq(t.version, ok[i].version, "%s", ok[i].value);
        cr_expect_eq(t.flags, ok[i].flags, "%s", ok[i].value);
        cr_expect_str_eq(t.trace_id, ok[i].trace_id);
        cr_expect_str_eq(t.parent_id, ok[i].parent_id);
    }
}

Test(traceparent, invalid_examples_are_rejected)
{
    static const char *const bad[] = {
        "",
        "00",
        "0-" TID "-" PID "-01",                               /* version of 1 digit */
        "000-" TID "-" PID "-01",                             /* 3 digits */
        ".0-" TID "-" PID "-01",                              /* not hex */
        "0.-" TID "-" PID "-01",                              /* not hex */
        "0A-" TID "-" PID "-01",                              /* upper case */
        "ff-" TID "-" PID "-01",                              /* version ff is invalid */
        "ff-" TID "-" PID "-01-x",                            /* also when longer */
        "00-" TID "-" PID "-01-what-the-future-will-be-like", /* 00 is exactly 55 */
        "00-" TID "-" PID "-01-",
        "cc-" TID "-" PID "-01.what-the-future-will-be-like", /* no '-' after the flags */
        "cc-" TID "-" PID "-010",
        "00-00000000000000000000000000000000-" PID "-01",  /* all-zero trace-id */
        "00-" TID "-0000000000000000-01",                  /* all-zero parent-id */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-" PID "-01",  /* upper-case trace-id */
        "00-" TID "-00F067AA0BA902B7-01",                  /* upper-case parent-id */
        "00-" TID "-" PID "-0A",                           /* upper-case flags */
        "00-4bf92f3577b34da6a3ce929d0e0e473-" PID "-01",   /* trace-id of 31 */
        "00-4bf92f3577b34da6a3ce929d0e0e47366-" PID "-01", /* trace-id of 33 */
        "00-" TID "-00f067aa0ba902b-01",                   /* parent-id of 15 */
        "00-" TID "-00f067aa0ba902b77-01",                 /* parent-id of 17 */
        "00-" TID "-" PID "-0",                            /* flags of 1 */
        "00-" TID "-" PID "-000",                          /* flags of 3 */
        "00-" TID "-" PID "-.0",
        "00-" TID "-" PID "-0.",
        "00-" TID "-" PID "-0g",
        "00-4bf92f3577b34da6a3ce929d0e0e473.-" PID "-01",
        "00-" TID "-00f067aa0ba902b.-01",
        "00_" TID "-" PID "-01", /* wrong separators */
        "00-" TID "_" PID "-01",
        "00-" TID "-" PID "_01",
        "00 - " TID "-" PID "-01",
        "00-" TID "-" PID "-01\n",                     /* a line end is not white space */
        "00-" TID "-" PID "-01,00-" TID "-" PID "-01", /* two values in one */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sw__traceparent_t t;
        const char *why = NULL;
        cr_expect_eq(sw__traceparent_decode(bad[i], strlen(bad[i]), &t, &why), SW_EINVAL,
                     "accepted '%s'", bad[i]);
        cr_expect_not_null(why);
    }
    sw__traceparent_t t;
    cr_expect_eq(sw__traceparent_decode(NULL, 0, &t, NULL), SW_EINVAL);
    static char big[600];
    memset(big, '-', sizeof big);
    memcpy(big, "cc-" TID "-" PID "-01", 55);
    cr_expect_eq(sw__traceparent_decode(big, sizeof big, &t, NULL), SW_EINVAL, "over 512 bytes");
}

Test(traceparent, encode_and_the_id_mapping)
{
    char buf[SW_TRACEPARENT_MAX];
    cr_assert_eq(sw__traceparent_encode(TID, PID, true, buf, sizeof buf), 55);
    cr_expect_str_eq(buf, "00-" TID "-" PID "-01");
    cr_assert_eq(sw__traceparent_encode(TID, PID, false, buf, sizeof buf), 55);
    cr_expect_str_eq(buf, "00-" TID "-" PID "-00");
    cr_expect_eq(sw__traceparent_encode(TID, PID, true, buf, 55), SW_ENOSPACE);
    cr_expect_str_eq(buf, "");
    cr_expect_eq(
        sw__traceparent_encode("00000000000000000000000000000000", PID, true, buf, sizeof buf),
        SW_ENOSPACE);

    char a[33], b[33];
    sw__w3c_trace_id(TID, a);
    cr_expect_str_eq(a, TID, "a W3C-shaped trace id maps to itself");
    sw__w3c_trace_id("5e7a2f1c.42.17000000000001", a);
    sw__w3c_trace_id("5e7a2f1c.42.17000000000001", b);
    cr_expect_str_eq(a, b, "the mapping is stable");
    cr_expect(sw__w3c_id_valid(a, 32), "'%s' is not a W3C trace-id", a);
    sw__w3c_trace_id("5e7a2f1c.42.17000000000002", b);
    cr_expect_str_neq(a, b);
    sw__w3c_trace_id("00000000000000000000000000000000", a);
    cr_expect(sw__w3c_id_valid(a, 32), "all zeros is not a trace-id: hashed");
    sw__w3c_trace_id("4BF92F3577B34DA6A3CE929D0E0E4736", a);
    cr_expect(sw__w3c_id_valid(a, 32));
    cr_expect_str_neq(a, "4BF92F3577B34DA6A3CE929D0E0E4736");

    char s0[17], s0b[17], s1[17], t0[17];
    sw__w3c_span_id("seg.1.2", 0, s0);
    sw__w3c_span_id("seg.1.2", 0, s0b);
    sw__w3c_span_id("seg.1.2", 1, s1);
    sw__w3c_span_id("seg.1.3", 0, t0);
    cr_expect_str_eq(s0, s0b, "stable per span");
    cr_expect_str_neq(s0, s1);
    cr_expect_str_neq(s0, t0);
    cr_expect(sw__w3c_id_valid(s0, 16) && sw__w3c_id_valid(s1, 16));
}

/* Parses `v`; returns the member count or SW_EINVAL, the other members in others[]. */
static int ts(const char *v, char *others, size_t len, const char **sw, size_t *sw_len)
{
    return sw__tracestate_parse(v, strlen(v), others, len, sw, sw_len, NULL);
}

static char *repeat(char c, size_t n)
{
    char *s = malloc(n + 1);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

Test(tracestate, valid_lists_are_normalised)
{
    static const struct {
        const char *value;
        int members;
        const char *others;
    } ok[] = {
        {"", 0, ""},
        {" \t ", 0, ""},
        {"foo=1", 1, "foo=1"},
        {"foo=1,bar=2", 2, "foo=1,bar=2"},
        {" foo=1 , \tbar=2\t", 2, "foo=1,bar=2"},
        {"foo=1,,bar=2", 2, "foo=1,bar=2"}, /* empty members are allowed */
        {",foo=1, ,", 1, "foo=1"},
        {"congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", 2, "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"},
        {"foo-_*/bar=1", 1, "foo-_*/bar=1"},
        {"1a-2f@foo=bar1,1a-_*/2b@foo=bar2", 2, "1a-2f@foo=bar1,1a-_*/2b@foo=bar2"},
        {"foo=bar baz", 1, "foo=bar baz"}, /* a blank inside a value */
        {"foo= bar", 1, "foo= bar"},
        {"foo=!\"#$%&'()*+-./0123456789:;<>?@ABCXYZ[\\]^_`abcxyz{|}~", 1,
         "foo=!\"#$%&'()*+-./0123456789:;<>?@ABCXYZ[\\]^_`abcxyz{|}~"},
        {"a=1,sw=x;y,b=2", 3, "a=1,b=2"}, /* our member is taken out */
        {"foo=1;bar", 1, "foo=1;bar"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char others[256];
        const char *sw;
        size_t sw_len;
        cr_expect_eq(ts(ok[i].value, others, sizeof others, &sw, &sw_len), ok[i].members, "'%s'",
                     ok[i].value);
        cr_expect_str_eq(others, ok[i].others, "'%s'", ok[i].value);
    }
    char others[64];
    const char *sw;
    size_t sw_len;
    cr_assert_eq(ts("a=1,sw=x;y,b=2", others, sizeof others, &sw, &sw_len), 3);
    cr_assert_not_null(sw);
    cr_expect_eq(sw_len, 3);
    cr_expect_eq(memcmp(sw, "x;y", 3), 0);
}

Test(tracestate, limits_of_keys_values_and_members)
{
    char *others = malloc(SW__TRACESTATE_IN_MAX + 1);
    char v[1200];
    const char *sw;
    size_t sw_len;
    char *k256 = repeat('a', 256), *k257 = repeat('a', 257), *t241 = repeat('1', 241),
         *t242 = repeat('1', 242), *s14 = repeat('b', 14), *s15 = repeat('b', 15),
         *v256 = repeat('x', 256), *v257 = repeat('x', 257);
    snprintf(v, sizeof v, "%s=1", k256);
    cr_expect_eq(ts(v, others, SW__TRACESTATE_IN_MAX + 1, &sw, &sw_len), 1, "key of 256");
    snprintf(v, sizeof v, "%s=1", k257);
    cr_expect_eq(ts(v, others, SW__TRACESTATE_IN_MAX + 1, &sw, &sw_len), SW_EINVAL);
    snprintf(v, sizeof v, "%s@%s=1", t241, s14);
    cr_expect_eq(ts(v, others, SW__TRACESTATE_IN_MAX + 1, &sw, &sw_len), 1, "tenant 241, sys 14");
    snprintf(v, sizeof v, "%s@%s=1", t242, s14);
    cr_expect_eq(ts(v, others, SW__TRACESTATE_IN_MAX + 1, &sw, &sw_len), SW_EINVAL);
    snprintf(v, sizeof v, "%s@%s=1", t241, s15);
    cr_expect_eq(ts(v, others, SW__TRACESTATE_IN_MAX + 1, &sw, &sw_len), SW_EINVAL);
    snprintf(v, sizeof v, "foo=%s", v256);
    cr_expect_eq(ts(v, others, SW__TRACESTATE_IN_MAX + 1, &sw, &sw_len), 1, "value of 256");
    snprintf(v, sizeof v, "foo=%s", v257);
    cr_expect_eq(ts(v, others, SW__TRACESTATE_IN_MAX + 1, &sw, &sw_len), SW_EINVAL);

    /* 32 members are fine, 33 are not. */
    size_t pos = 0;
    for (int i = 0; i < 33; i++) {
        pos += (size_t)snprintf(v + pos, sizeof v - pos, "%sk%d=%d", i ? "," : "", i, i);
        int want = i < 32 ? i + 1 : SW_EINVAL;
        cr_expect_eq(ts(v, others, SW__TRACESTATE_IN_MAX + 1, &sw, &sw_len), want, "%d", i + 1);
    }
    cr_expect_str_eq(others, "", "nothing kept from an invalid list");
    free(k256);
    free(k257);
    free(t241);
    free(t242);
    free(s14);
    free(s15);
    free(v256);
    free(v257);
    free(others);
}

Test(tracestate, invalid_lists_are_discarded_whole)
{
    static const char *const bad[] = {
        "foo=1,foo=1", /* a duplicate key */
        "foo=1,foo=2",
        "sw=a,sw=b",
        "foo",
        "foo=",   /* empty value */
        "=1",     /* empty key */
        "Foo=1",  /* upper case */
        "1foo=1", /* a simple key starts with a letter */
        "foo.bar=1",
        "foo@=1",
        "@foo=1",
        "foo@1bar=1", /* a system id starts with a letter */
        "foo@bar@baz=1",
        "foo=a=b",
        "foo=a,b=c,=d",
        "foo=\x7f",
        "foo=\xc3\xa9", /* not ASCII */
        "foo=1\tx",
        "foo=1 bar=2",
        "good=1,bad key=2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char others[64];
        const char *sw = "x";
        size_t sw_len = 9;
        const char *why = NULL;
        cr_expect_eq(
            sw__tracestate_parse(bad[i], strlen(bad[i]), others, sizeof others, &sw, &sw_len, &why),
            SW_EINVAL, "accepted '%s'", bad[i]);
        cr_expect_str_eq(others, "");
        cr_expect_null(sw);
        cr_expect_not_null(why);
    }
    char others[16];
    const char *sw;
    size_t sw_len;
    cr_expect_eq(sw__tracestate_parse("foo=1,bar=22222222", 18, others, 8, &sw, &sw_len, NULL),
                 SW_EINVAL, "a short output buffer is refused, not overrun");
}

Test(tracestate, trim_and_build_follow_the_specification)
{
    char *long_member = repeat('l', 150);
    long_member[0] = 'x';
    long_member[1] = '=';
    char list[600];
    snprintf(list, sizeof list, "a=1,%s,b=2,c=3", long_member);
    /* Over the byte budget: the long member goes first, then members from the end. */
    cr_expect_eq(sw__tracestate_trim(list, 32, 100), strlen("a=1,b=2,c=3"));
    cr_expect_str_eq(list, "a=1,b=2,c=3");
    cr_expect_eq(sw__tracestate_trim(list, 32, 8), 7);
    cr_expect_str_eq(list, "a=1,b=2");
    cr_expect_eq(sw__tracestate_trim(list, 1, 100), 3);
    cr_expect_str_eq(list, "a=1");
    cr_expect_eq(sw__tracestate_trim(list, 0, 100), 0);
    cr_expect_str_eq(list, "");
    snprintf(list, sizeof list, "%s,a=1", long_member);
    cr_expect_eq(sw__tracestate_trim(list, 32, 200), strlen(long_member) + 4, "within: kept");
    free(long_member);

    char buf[64];
    cr_expect_eq(sw__tracestate_build("s1", "a=1,b=2", buf, sizeof buf), 13);
    cr_expect_str_eq(buf, "sw=s1,a=1,b=2");
    cr_expect_eq(sw__tracestate_build("s1", NULL, buf, sizeof buf), 5);
    cr_expect_str_eq(buf, "sw=s1");
    cr_expect_eq(sw__tracestate_build("", "a=1", buf, sizeof buf), 3);
    cr_expect_str_eq(buf, "a=1");
    cr_expect_eq(sw__tracestate_build("s1", "a=1,b=2", buf, 13), SW_ENOSPACE);
    cr_expect_str_eq(buf, "");
}

Test(swstate, round_trips_with_escapes)
{
    const sw__swstate_t in = {
        .trace_id = "",
        .segment_id = "5e7a2f1c9d.42.17000000000001",
        .span_id = 3,
        .service = "orders; east=1,2 %",
        .instance = "9f0e@host-1",
        .endpoint = "GET /r\xc3\xa9sum\xc3\xa9",
        .peer = "10.0.0.7:8080",
    };
    char buf[SW__TRACESTATE_ENTRY_MAX], scratch[SW__TRACESTATE_ENTRY_MAX + 16];
    int n = sw__swstate_encode(&in, buf, sizeof buf);
    cr_assert_gt(n, 0);
    cr_expect_str_eq(buf, "5e7a2f1c9d.42.17000000000001;3;orders%3B%20east%3D1%2C2%20%25;"
                          "9f0e@host-1;GET%20/r%C3%A9sum%C3%A9;10.0.0.7:8080");
    /* What we write is a valid tracestate member. */
    char member[300], others[300];
    snprintf(member, sizeof member, "sw=%s", buf);
    const char *sw;
    size_t sw_len;
    cr_assert_eq(ts(member, others, sizeof others, &sw, &sw_len), 1, "'%s'", member);
    sw__swstate_t out;
    cr_assert_eq(sw__swstate_decode(sw, sw_len, &out, scratch, sizeof scratch, NULL), 0);
    cr_expect_str_eq(out.trace_id, "");
    cr_expect_str_eq(out.segment_id, in.segment_id);
    cr_expect_eq(out.span_id, 3);
    cr_expect_str_eq(out.service, in.service);
    cr_expect_str_eq(out.instance, in.instance);
    cr_expect_str_eq(out.endpoint, in.endpoint);
    cr_expect_str_eq(out.peer, in.peer);

    sw__swstate_t with_trace = in;
    with_trace.trace_id = "abc.1.2";
    cr_assert_gt(sw__swstate_encode(&with_trace, buf, sizeof buf), 0);
    cr_assert_eq(sw__swstate_decode(buf, strlen(buf), &out, scratch, sizeof scratch, NULL), 0);
    cr_expect_str_eq(out.trace_id, "abc.1.2");
}

Test(swstate, long_endpoints_are_cut_to_fit_and_oversized_fields_refused)
{
    char endpoint[400];
    size_t n = 0;
    while (n + 2 < sizeof endpoint - 1) {
        endpoint[n++] = '\xc3'; /* 'é' repeated: every cut must fall between two */
        endpoint[n++] = '\xa9';
    }
    endpoint[n] = '\0';
    sw__swstate_t in = {"", "seg.1.2", 0, "svc", "inst", endpoint, "h:1"};
    char buf[SW__TRACESTATE_ENTRY_MAX], scratch[SW__TRACESTATE_ENTRY_MAX + 16];
    int len = sw__swstate_encode(&in, buf, sizeof buf);
    cr_assert_gt(len, 0);
    cr_expect_leq(len + 3, SW__TRACESTATE_ENTRY_MAX, "sw= plus the value fit in 256 bytes");
    sw__swstate_t out;
    cr_assert_eq(sw__swstate_decode(buf, (size_t)len, &out, scratch, sizeof scratch, NULL), 0);
    size_t en = strlen(out.endpoint);
    cr_expect_gt(en, 0);
    cr_expect_eq(en % 2, 0, "cut inside a UTF-8 sequence");
    cr_expect_eq(memcmp(out.endpoint, endpoint, en), 0);

    char *big = repeat('s', 250);
    in.service = big;
    cr_expect_eq(sw__swstate_encode(&in, buf, sizeof buf), SW_ENOSPACE);
    cr_expect_str_eq(buf, "");
    free(big);
    in.service = "";
    cr_expect_eq(sw__swstate_encode(&in, buf, sizeof buf), SW_ENOSPACE, "empty field");
    in.service = "svc";
    in.span_id = -1;
    cr_expect_eq(sw__swstate_encode(&in, buf, sizeof buf), SW_ENOSPACE);
}

Test(swstate, malformed_values_are_rejected)
{
    static const char *const bad[] = {
        "",
        "seg;1;svc;inst;ep",           /* 5 fields */
        "seg;1;svc;inst;ep;peer;tr;x", /* 8 */
        "seg;1;svc;;ep;peer",          /* empty field */
        "seg;;svc;inst;ep;peer",
        "seg;-1;svc;inst;ep;peer",
        "seg;2147483648;svc;inst;ep;peer",
        "seg;12345678901;svc;inst;ep;peer",
        "seg;1x;svc;inst;ep;peer",
        "seg;1;svc%;inst;ep;peer",
        "seg;1;svc%4;inst;ep;peer",
        "seg;1;svc%zz;inst;ep;peer",
        "seg;1;svc%00;inst;ep;peer", /* a NUL byte */
        "seg;1;svc\x01;inst;ep;peer",
        "seg;1;svc\xc3\xa9;inst;ep;peer",
    };
    char scratch[SW__TRACESTATE_ENTRY_MAX + 16];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sw__swstate_t out;
        cr_expect_eq(
            sw__swstate_decode(bad[i], strlen(bad[i]), &out, scratch, sizeof scratch, NULL),
            SW_EINVAL, "accepted '%s'", bad[i]);
    }
    sw__swstate_t out;
    cr_expect_eq(
        sw__swstate_decode("seg;2147483647;a%2cb;i;e;p", 26, &out, scratch, sizeof scratch, NULL),
        0);
    cr_expect_eq(out.span_id, INT32_MAX);
    cr_expect_str_eq(out.service, "a,b", "lower-case escapes are read too");
    /* Escapes may spell any byte: what is not valid UTF-8 is cleaned ('?'), valid UTF-8 is
       kept; the fields go into a segment reference's proto3 strings. */
    const char *hostile = "seg;1;s%FF%FE;i%C3%28;%C3%A9p;p";
    cr_assert_eq(sw__swstate_decode(hostile, strlen(hostile), &out, scratch, sizeof scratch, NULL),
                 0);
    cr_expect_str_eq(out.service, "s??");
    cr_expect_str_eq(out.instance, "i?(");
    cr_expect_str_eq(out.endpoint, "\xc3\xa9p");
}

/* ---- configuration ---------------------------------------------------------------------- */

Test(w3c_config, propagation_values)
{
    static const struct {
        const char *text;
        uint32_t mode;
    } ok[] = {
        {"sw8", SW_PROPAGATION_SW8},
        {"tracecontext", SW_PROPAGATION_TRACECONTEXT},
        {"sw8,tracecontext", SW_PROPAGATION_SW8_TRACECONTEXT},
        {"tracecontext,sw8", SW_PROPAGATION_TRACECONTEXT_SW8},
        {" tracecontext , sw8 ", SW_PROPAGATION_TRACECONTEXT_SW8},
    };
    sw_config_t cfg;
    sw_config_init(&cfg);
    cr_expect_eq(cfg.propagation, SW_PROPAGATION_SW8, "sw8 is the default");
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char err[256] = "";
        cr_expect_eq(sw_config_set(&cfg, "SW_AGENT_PROPAGATION", ok[i].text, err, sizeof err), 0,
                     "%s: %s", ok[i].text, err);
        cr_expect_eq(cfg.propagation, ok[i].mode, "%s", ok[i].text);
    }
    static const char *const bad[] = {"",     "w3c",           "sw8,sw8", "SW8",
                                      "sw8,", ",tracecontext", "sw8;b3",  "tracecontext,sw8,sw8"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        cfg.propagation = SW_PROPAGATION_TRACECONTEXT;
        cr_expect_eq(sw_config_set(&cfg, "SW_AGENT_PROPAGATION", bad[i], err, sizeof err),
                     SW_ECONFIG, "accepted '%s'", bad[i]);
        cr_expect_neq(strstr(err, "SW_AGENT_PROPAGATION"), NULL, "message: %s", err);
        cr_expect_eq(cfg.propagation, SW_PROPAGATION_TRACECONTEXT, "unchanged on error");
    }
    /* A programmatic value out of range is refused by sw_init. */
    sw_config_init(&cfg);
    snprintf(cfg.file_path, sizeof cfg.file_path, "/dev/null");
    cfg.propagation = 7;
    cr_expect_eq(sw_init(&cfg), SW_ECONFIG);
    cr_expect(!sw_enabled());
}

/* ---- the API ---------------------------------------------------------------------------- */

static uint32_t mode_now;

static void set_mode(sw_config_t *cfg)
{
    cfg->propagation = mode_now;
}

static void start(const char *path, uint32_t mode)
{
    mode_now = mode;
    agent_test_start(path, set_mode);
}

static const char *tag_of(const Skywalking__V3__SpanObject *sp, const char *key)
{
    for (size_t i = 0; i < sp->n_tags; i++) {
        if (strcmp(sp->tags[i]->key, key) == 0) {
            return sp->tags[i]->value;
        }
    }
    return NULL;
}

/* An exit in a trace of its own; returns its headers and ids. */
typedef struct hop {
    char traceparent[SW_TRACEPARENT_MAX], tracestate[SW_TRACESTATE_MAX], sw8[SW_SW8_MAX];
} hop_t;

static hop_t exit_hop(const char *entry_sw8, const char *entry_tp, const char *entry_ts)
{
    hop_t h;
    sw_entry_span_begin_w3c("GET /up", entry_sw8, NULL, NULL, entry_tp, entry_ts);
    sw_exit_span_begin("call down", "down:80");
    cr_assert_eq(
        sw_inject_w3c(h.traceparent, sizeof h.traceparent, h.tracestate, sizeof h.tracestate), 0);
    char again[SW_TRACEPARENT_MAX];
    cr_assert_eq(sw_inject_w3c(again, sizeof again, NULL, 0), 0);
    cr_expect_str_eq(again, h.traceparent, "stable per span");
    cr_assert_eq(sw_inject(h.sw8, sizeof h.sw8, NULL, 0, NULL, 0), 0);
    sw_span_end();
    sw_span_end();
    return h;
}

Test(w3c_api, an_exit_hop_continues_through_traceparent_and_tracestate)
{
    const char *path = agent_test_path();
    start(path, SW_PROPAGATION_TRACECONTEXT_SW8);
    hop_t h = exit_hop(NULL, NULL, NULL);
    /* The downstream side: W3C headers only. */
    sw_entry_span_begin_w3c("GET /down", NULL, NULL, NULL, h.traceparent, h.tracestate);
    sw_span_end();
    agent_test_stop();

    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 2);
    const Skywalking__V3__SegmentObject *up = agent_test_find(&d, "GET /up"),
                                        *down = agent_test_find(&d, "GET /down");
    cr_assert(up != NULL && down != NULL);
    cr_expect_eq(strlen(up->traceid), 32, "W3C in use: trace ids take the W3C form");
    cr_expect(sw__w3c_id_valid(up->traceid, 32));
    char want_tp[SW_TRACEPARENT_MAX], span_id[17];
    sw__w3c_span_id(up->tracesegmentid, 1, span_id);
    snprintf(want_tp, sizeof want_tp, "00-%s-%s-01", up->traceid, span_id);
    cr_expect_str_eq(h.traceparent, want_tp);
    cr_expect_eq(strncmp(h.tracestate, "sw=", 3), 0, "%s", h.tracestate);
    cr_expect_null(strchr(h.tracestate, ','), "no other members: %s", h.tracestate);

    cr_expect_str_eq(down->traceid, up->traceid, "one trace");
    const Skywalking__V3__SpanObject *entry = down->spans[0];
    cr_assert_eq(entry->n_refs, 1);
    const Skywalking__V3__SegmentReference *ref = entry->refs[0];
    cr_expect_eq(ref->reftype, SKYWALKING__V3__REF_TYPE__CrossProcess);
    cr_expect_str_eq(ref->traceid, up->traceid);
    cr_expect_str_eq(ref->parenttracesegmentid, up->tracesegmentid);
    cr_expect_eq(ref->parentspanid, 1);
    cr_expect_str_eq(ref->parentservice, "test-service");
    cr_expect_str_eq(ref->parentserviceinstance, "test-instance");
    cr_expect_str_eq(ref->parentendpoint, "GET /up");
    cr_expect_str_eq(ref->networkaddressusedatpeer, "down:80");
    cr_expect_str_eq(tag_of(entry, "w3c.parent_id"), span_id);
    agent_test_free(&d);
}

Test(w3c_api, an_opentelemetry_upstream_sets_trace_id_sampling_and_forwarded_members)
{
    const char *path = agent_test_path();
    start(path, SW_PROPAGATION_SW8_TRACECONTEXT);
    /* Sampled, with other vendors' members and a stale `sw` member of another trace. */
    hop_t h = exit_hop(NULL, "00-" TID "-" PID "-01",
                       "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7,sw=seg;1;a;b;c;d;zzz");
    /* Not sampled upstream: nothing is recorded, and the decision is passed on unchanged. */
    sw_entry_span_begin_w3c("GET /unsampled", NULL, NULL, NULL, "00-" TID "-" PID "-00",
                            "congo=t61rcWkgMzE");
    sw_exit_span_begin("x", "y");
    char tp[SW_TRACEPARENT_MAX], tstate[SW_TRACESTATE_MAX], sw8[SW_SW8_MAX];
    cr_expect_eq(sw_inject_w3c(tp, sizeof tp, tstate, sizeof tstate), 0);
    cr_expect_str_eq(tp, "00-" TID "-" PID "-00");
    cr_expect_str_eq(tstate, "");
    cr_expect_eq(sw_inject_w3c(tp, 20, NULL, 0), SW_ENOSPACE);
    cr_expect_eq(sw_inject(sw8, sizeof sw8, NULL, 0, NULL, 0), SW_ENOTRACED, "no sw8 for it");
    sw_span_end();
    sw_span_end();
    /* The next trace is ours again: sampled by the local sampler, nothing of the last one. */
    sw_entry_span_begin_w3c("GET /ours", NULL, NULL, NULL, NULL, NULL);
    sw_span_end();
    sw_entry_span_begin("GET /next", NULL);
    sw_exit_span_begin("x", "y");
    cr_expect_eq(sw_inject_w3c(tp, sizeof tp, NULL, 0), 0);
    cr_expect_neq(strncmp(tp, "00-" TID, 35), 0, "a later trace reused the unsampled one: %s", tp);
    cr_expect_eq(strcmp(tp + 53, "01"), 0, "%s", tp);
    sw_span_end();
    sw_span_end();
    sw_stats_t st = agent_test_stop();
    cr_expect_eq(st.traces_sampled_out, 1);

    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 3);
    const Skywalking__V3__SegmentObject *seg = agent_test_find(&d, "GET /up");
    cr_assert_not_null(seg);
    cr_expect_str_eq(seg->traceid, TID, "the W3C trace-id is the trace id");
    cr_expect_eq(seg->spans[0]->n_refs, 0, "a foreign sw member makes no reference");
    cr_expect_str_eq(tag_of(seg->spans[0], "w3c.parent_id"), PID);
    cr_expect_eq(strncmp(h.traceparent, "00-" TID "-", 36), 0, "%s", h.traceparent);
    const char *comma = strchr(h.tracestate, ',');
    cr_assert_not_null(comma, "%s", h.tracestate);
    cr_expect_eq(strncmp(h.tracestate, "sw=", 3), 0, "ours first: %s", h.tracestate);
    cr_expect_str_eq(comma + 1, "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
                     "the others follow, the old sw member is replaced");
    agent_test_free(&d);
}

Test(w3c_api, the_setting_decides_which_header_wins)
{
    /* An sw8 of a SkyWalking trace id and a traceparent of another trace. */
    const sw__sw8_t up = {1,          4,           "java.trace.1", "java.seg.1",
                          "java-svc", "java-inst", "/java",        "me:80"};
    char sw8[SW_SW8_MAX];
    cr_assert_gt(sw__sw8_encode(&up, sw8, sizeof sw8), 0);
    const char *tp = "00-" TID "-" PID "-01";
    static const struct {
        uint32_t mode;
        const char *trace_id;
    } cases[] = {
        {SW_PROPAGATION_SW8, "java.trace.1"},
        {SW_PROPAGATION_SW8_TRACECONTEXT, "java.trace.1"},
        {SW_PROPAGATION_TRACECONTEXT_SW8, TID},
        {SW_PROPAGATION_TRACECONTEXT, TID},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *path = agent_test_path();
        start(path, cases[i].mode);
        sw_entry_span_begin_w3c("GET /both", sw8, NULL, NULL, tp, NULL);
        sw_span_end();
        sw_entry_span_begin_w3c("GET /bad-tp", sw8, NULL, NULL, "00-" TID "-" PID "-1", NULL);
        sw_span_end();
        sw_entry_span_begin_w3c("GET /tp-only", NULL, NULL, NULL, tp, NULL);
        sw_span_end();
        agent_test_stop();
        decoded_segments_t d = agent_test_read(path);
        cr_assert_eq(d.count, 3);
        const Skywalking__V3__SegmentObject *both = agent_test_find(&d, "GET /both"),
                                            *bad = agent_test_find(&d, "GET /bad-tp"),
                                            *only = agent_test_find(&d, "GET /tp-only");
        cr_expect_str_eq(both->traceid, cases[i].trace_id, "mode %u", cases[i].mode);
        bool sw8_read = cases[i].mode != SW_PROPAGATION_TRACECONTEXT;
        bool w3c_read = cases[i].mode != SW_PROPAGATION_SW8;
        cr_expect_eq(both->spans[0]->n_refs, strcmp(cases[i].trace_id, TID) != 0 ? 1u : 0u);
        /* An invalid traceparent never hides a valid sw8. */
        if (sw8_read) {
            cr_expect_str_eq(bad->traceid, "java.trace.1", "mode %u", cases[i].mode);
        } else {
            cr_expect_str_neq(bad->traceid, "java.trace.1");
        }
        if (w3c_read) {
            cr_expect_str_eq(only->traceid, TID, "mode %u", cases[i].mode);
        } else {
            cr_expect_str_neq(only->traceid, TID, "sw8 only: traceparent is not read");
        }
        agent_test_free(&d);
    }
}

Test(w3c_api, a_skywalking_trace_id_crosses_a_w3c_hop_unchanged)
{
    const sw__sw8_t up = {1,          4,           "java.trace.1", "java.seg.1",
                          "java-svc", "java-inst", "/java",        "me:80"};
    char sw8[SW_SW8_MAX];
    cr_assert_gt(sw__sw8_encode(&up, sw8, sizeof sw8), 0);
    const char *path = agent_test_path();
    start(path, SW_PROPAGATION_SW8_TRACECONTEXT);
    hop_t h = exit_hop(sw8, NULL, NULL);
    char mapped[33];
    sw__w3c_trace_id("java.trace.1", mapped);
    cr_expect_eq(strncmp(h.traceparent + 3, mapped, 32), 0, "%s", h.traceparent);
    cr_expect_neq(strstr(h.tracestate, ";java.trace.1"), NULL, "%s", h.tracestate);
    sw_entry_span_begin_w3c("GET /down", NULL, NULL, NULL, h.traceparent, h.tracestate);
    sw_span_end();
    agent_test_stop();
    decoded_segments_t d = agent_test_read(path);
    const Skywalking__V3__SegmentObject *down = agent_test_find(&d, "GET /down");
    cr_assert_not_null(down);
    cr_expect_str_eq(down->traceid, "java.trace.1");
    cr_assert_eq(down->spans[0]->n_refs, 1);
    cr_expect_str_eq(down->spans[0]->refs[0]->traceid, "java.trace.1");
    agent_test_free(&d);
}

Test(w3c_api, outgoing_tracestate_stays_within_32_members)
{
    const char *path = agent_test_path();
    start(path, SW_PROPAGATION_TRACECONTEXT_SW8);
    char in[1024];
    size_t pos = 0;
    for (int i = 0; i < 32; i++) {
        pos += (size_t)snprintf(in + pos, sizeof in - pos, "%sk%d=%d", i ? "," : "", i, i);
    }
    hop_t h = exit_hop(NULL, "00-" TID "-" PID "-01", in);
    char others[SW_TRACESTATE_MAX];
    const char *sw;
    size_t sw_len;
    cr_expect_eq(ts(h.tracestate, others, sizeof others, &sw, &sw_len), 32, "%s", h.tracestate);
    cr_expect_not_null(sw);
    cr_expect_null(strstr(h.tracestate, "k31="), "the last member is dropped");
    cr_expect_not_null(strstr(h.tracestate, ",k30=30"));

    char tp[SW_TRACEPARENT_MAX], small[8];
    sw_entry_span_begin("e", NULL);
    cr_expect_eq(sw_inject_w3c(tp, sizeof tp, NULL, 0), SW_ENOTEXIT);
    sw_exit_span_begin("x", "y");
    cr_expect_eq(sw_inject_w3c(tp, sizeof tp, small, sizeof small), SW_ENOSPACE);
    cr_expect_str_eq(tp, "", "both empty on ENOSPACE");
    cr_expect_str_eq(small, "");
    sw_span_end();
    sw_span_end();
    agent_test_stop();
    cr_expect_eq(sw_inject_w3c(tp, sizeof tp, NULL, 0), SW_ENOSPAN);
}

Test(w3c_api, a_winning_sw8_keeps_the_tracestate_of_the_same_trace_only)
{
    const char *path = agent_test_path();
    start(path, SW_PROPAGATION_SW8_TRACECONTEXT);
    const sw__sw8_t same = {1, 4, TID, "up.seg.1", "up-svc", "up-inst", "/up", "me:80"};
    const sw__sw8_t other = {1, 4, "java.trace.9", "up.seg.1", "up-svc", "up-inst", "/up", "me:80"};
    char sw8_same[SW_SW8_MAX], sw8_other[SW_SW8_MAX];
    cr_assert_gt(sw__sw8_encode(&same, sw8_same, sizeof sw8_same), 0);
    cr_assert_gt(sw__sw8_encode(&other, sw8_other, sizeof sw8_other), 0);
    const char *tp = "00-" TID "-" PID "-01";
    hop_t a = exit_hop(sw8_same, tp, "congo=t61rcWkgMzE");
    hop_t b = exit_hop(sw8_other, tp, "congo=t61rcWkgMzE");
    agent_test_stop();
    cr_expect_neq(strstr(a.tracestate, ",congo=t61rcWkgMzE"), NULL, "%s", a.tracestate);
    cr_expect_null(strstr(b.tracestate, "congo"), "another trace's members: %s", b.tracestate);
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 2);
    for (size_t i = 0; i < d.count; i++) {
        cr_assert_eq(d.items[i]->spans[0]->n_refs, 1, "sw8 won: its reference");
        cr_expect_str_eq(d.items[i]->spans[0]->refs[0]->parenttracesegmentid, "up.seg.1");
        cr_expect_null(tag_of(d.items[i]->spans[0], "w3c.parent_id"));
    }
    agent_test_free(&d);
}
