/*
 * fuzz_sw8x.c - the sw8-x parser (`mode-clientSendTimestamp`) on any bytes: rejected with a
 * reason or accepted, never a fault; an accepted timestamp re-encodes to a value that decodes
 * to the same timestamp.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "propagation/sw8.h"
#include "skywalking.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sw__sw8x_t x, y;
    const char *reason = NULL;
    if (sw__sw8x_decode((const char *)data, size, &x, &reason) != 0) {
        if (reason == NULL || strlen(reason) == 0) {
            abort();
        }
        return 0;
    }
    if (!x.has_timestamp) {
        return 0;
    }
    char again[SW_SW8_X_MAX];
    int n = sw__sw8x_encode(x.send_ms, again, sizeof again);
    if (n < 0 || sw__sw8x_decode(again, (size_t)n, &y, NULL) != 0 || !y.has_timestamp ||
        y.send_ms != x.send_ms) {
        abort();
    }
    return 0;
}
