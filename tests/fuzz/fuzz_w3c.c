/*
 * fuzz_w3c.c - libFuzzer target for the W3C Trace Context parsers (traceparent, tracestate,
 * our `sw` member): any input is rejected or accepted without a fault; an accepted traceparent
 * re-encodes to the same ids; an accepted tracestate's normalised members parse again to the
 * same list, and trimming and rebuilding it stay within the limits; an accepted `sw` member
 * re-encodes (when it fits) to a value that decodes to the same fields.
 *
 * The input is split at its first NUL byte: traceparent before it, tracestate after it (the
 * whole input is tried as each of the three values too).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "propagation/traceparent.h"
#include "propagation/tracestate.h"
#include "skywalking.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_traceparent(const char *v, size_t n)
{
    sw__traceparent_t a, b;
    if (sw__traceparent_decode(v, n, &a, NULL) != 0) {
        return;
    }
    char again[SW_TRACEPARENT_MAX];
    if (sw__traceparent_encode(a.trace_id, a.parent_id, a.flags & 1, again, sizeof again) != 55 ||
        sw__traceparent_decode(again, 55, &b, NULL) != 0 ||
        memcmp(a.trace_id, b.trace_id, 33) != 0 || memcmp(a.parent_id, b.parent_id, 17) != 0 ||
        (a.flags & 1) != b.flags) {
        abort();
    }
}

static void check_swstate(const char *v, size_t n)
{
    static char scratch[SW__TRACESTATE_ENTRY_MAX + 16], scratch2[SW__TRACESTATE_ENTRY_MAX + 16];
    sw__swstate_t a, b;
    if (sw__swstate_decode(v, n, &a, scratch, sizeof scratch, NULL) != 0) {
        return;
    }
    char again[SW__TRACESTATE_ENTRY_MAX];
    int len = sw__swstate_encode(&a, again, sizeof again);
    if (len < 0) {
        return; /* escaping made it longer than a member may be */
    }
    if (len + 3 > SW__TRACESTATE_ENTRY_MAX ||
        sw__swstate_decode(again, (size_t)len, &b, scratch2, sizeof scratch2, NULL) != 0 ||
        a.span_id != b.span_id || strcmp(a.segment_id, b.segment_id) != 0 ||
        strcmp(a.service, b.service) != 0 || strcmp(a.instance, b.instance) != 0 ||
        strcmp(a.peer, b.peer) != 0 || strcmp(a.trace_id, b.trace_id) != 0 ||
        strncmp(a.endpoint, b.endpoint, strlen(b.endpoint)) != 0) {
        abort();
    }
}

static void check_tracestate(const char *v, size_t n)
{
    static char others[SW__TRACESTATE_IN_MAX + 1], twice[SW__TRACESTATE_IN_MAX + 1];
    static char out[SW_TRACESTATE_MAX];
    const char *sw, *sw2;
    size_t sw_len, sw2_len;
    int count = sw__tracestate_parse(v, n, others, sizeof others, &sw, &sw_len, NULL);
    if (count < 0) {
        return;
    }
    size_t olen = strlen(others);
    int again = sw__tracestate_parse(others, olen, twice, sizeof twice, &sw2, &sw2_len, NULL);
    if (count > SW__TRACESTATE_MEMBERS_MAX || again != count - (sw != NULL) || sw2 != NULL ||
        strcmp(others, twice) != 0) {
        abort();
    }
    if (sw != NULL) {
        check_swstate(sw, sw_len);
    }
    size_t max = SW_TRACESTATE_MAX - 2 - SW__TRACESTATE_ENTRY_MAX;
    size_t kept = sw__tracestate_trim(others, SW__TRACESTATE_MEMBERS_MAX - 1, max);
    if (kept > max || kept != strlen(others)) {
        abort();
    }
    char ours[SW__TRACESTATE_ENTRY_MAX];
    memset(ours, 'a', sizeof ours - 4);
    ours[sizeof ours - 4] = '\0';
    int built = sw__tracestate_build(ours, others, out, sizeof out);
    if (built < 0 || sw__tracestate_parse(out, (size_t)built, twice, sizeof twice, &sw2, &sw2_len,
                                          NULL) > SW__TRACESTATE_MEMBERS_MAX) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *v = (const char *)data;
    check_traceparent(v, size);
    check_tracestate(v, size);
    check_swstate(v, size);
    const char *nul = memchr(v, '\0', size);
    if (nul != NULL) {
        size_t first = (size_t)(nul - v);
        check_traceparent(v, first);
        check_tracestate(nul + 1, size - first - 1);
    }
    return 0;
}
