/*
 * Fuzz target for the crash spool reader (agent/src/crash/crash_spool_read.c). The input's
 * checksum is set right before it is parsed (when the input has a header), so that the fuzzer
 * gets past it to the length and count checks behind it; what parses is then formatted.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crash_spool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sw__crash_view_t view;
    uint8_t *buf = malloc(size + 1);
    if (buf == NULL) {
        return 0;
    }
    memcpy(buf, data, size);
    if (size >= SW__CRASH_HEADER_BYTES) {
        sw__crash_header_t h;
        memcpy(&h, buf, sizeof h);
        size_t body = h.body_bytes <= size - SW__CRASH_HEADER_BYTES ? h.body_bytes : 0;
        h.checksum = 0;
        memcpy(buf, &h, sizeof h);
        uint64_t sum = sw__fnv1a(SW__FNV_START, buf, SW__CRASH_HEADER_BYTES);
        h.checksum = sw__fnv1a(sum, buf + SW__CRASH_HEADER_BYTES, body);
        memcpy(buf, &h, sizeof h);
    }
    if (sw__crash_spool_parse(buf, size, &view) == SW__CRASH_OK) {
        char name[600];
        for (uint32_t i = 0; i < view.frame_count; i++) {
            sw__crash_frame_format(&view, &view.frames[i], name, sizeof name);
        }
    }
    free(buf);
    return 0;
}
