/*
 * fuzz_correlation.c - libFuzzer target for the sw8-correlation parser: any input yields at
 * most 3 bounded elements, and they re-encode to a value that decodes the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "propagation/correlation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sw_correlation_t a, b;
    int n = sw__correlation_decode((const char *)data, size, &a);
    if (n < 0 || n > SW_CORRELATION_MAX_ELEMENTS) {
        abort();
    }
    char h[SW_CORRELATION_HEADER_MAX];
    int len = sw__correlation_encode(&a, h, sizeof h);
    if (len < 0) {
        abort(); /* SW_CORRELATION_HEADER_MAX must hold any 3 valid elements */
    }
    if (sw__correlation_decode(h, (size_t)len, &b) != n) {
        abort();
    }
    for (int i = 0; i < n; i++) {
        if (strcmp(a.items[i].key, b.items[i].key) != 0 ||
            strcmp(a.items[i].value, b.items[i].value) != 0) {
            abort();
        }
    }
    return 0;
}
