/*
 * fuzz_sw8.c - libFuzzer target for the sw8 and sw8-x parsers: any input is rejected or
 * accepted without a fault, every string of an accepted sw8 is valid UTF-8 (they go into a
 * segment's proto3 string fields; checked by the tests' own oracle, utf8_valid.h), and an
 * accepted sw8 re-encodes to a value that decodes the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "propagation/sw8.h"
#include "skywalking.h"
#include "utf8_valid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char scratch[SW__SW8_HEADER_MAX + 16], scratch2[SW__SW8_HEADER_MAX + 16];
    static char again[SW__SW8_HEADER_MAX * 2];
    sw__sw8_t a, b;
    sw__sw8x_t x;
    (void)sw__sw8x_decode((const char *)data, size, &x, NULL);
    if (sw__sw8_decode((const char *)data, size, &a, scratch, sizeof scratch, NULL) != 0) {
        return 0;
    }
    const char *strings[] = {a.trace_id,        a.parent_segment_id, a.parent_service,
                             a.parent_instance, a.parent_endpoint,   a.address};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        if (!test_utf8_valid_str(strings[i])) {
            abort(); /* a decoded field that would fail the segment's gRPC call */
        }
    }
    int n = sw__sw8_encode(&a, again, sizeof again);
    if (n < 0 || sw__sw8_decode(again, (size_t)n, &b, scratch2, sizeof scratch2, NULL) != 0) {
        abort();
    }
    if (a.sample != b.sample || a.parent_span_id != b.parent_span_id ||
        strcmp(a.trace_id, b.trace_id) != 0 || strcmp(a.address, b.address) != 0 ||
        strcmp(a.parent_endpoint, b.parent_endpoint) != 0) {
        abort();
    }
    return 0;
}
