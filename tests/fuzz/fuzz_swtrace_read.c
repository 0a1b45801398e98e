/*
 * Fuzz target for swtrace's reader and joiner: any byte string is read as a segment file; what
 * decodes is joined into traces and rendered as text and JSON (to /dev/null), so that hostile
 * refs (cycles, self refs, missing spans, extreme timestamps) reach every output path.
 */
#include <stdint.h>
#include <stdio.h>

#include "swtrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Opened once and kept for the life of the fuzzer: a sink, never read. */
    static FILE *sink;
    if (sink == NULL) {
        sink = fopen("/dev/null", "w");
        if (sink == NULL) {
            return 0;
        }
    }
    sw__trace_set_t set = {0};
    char err[256];
    /* Keep what decoded before an error too: the joiner must cope with any prefix. */
    (void)sw__trace_set_read_buffer(&set, data, size, "fuzz", err, sizeof(err));
    sw__trace_forest_t forest;
    if (sw__trace_forest_build(&forest, &set) == 0) {
        size_t rows = 0;
        for (size_t t = 0; t < forest.n_traces; t++) {
            rows += forest.traces[t].n_spans;
        }
        if (rows != forest.n_spans) {
            __builtin_trap(); /* every span must be shown exactly once */
        }
        sw__trace_print_text(sink, &forest, &set, true);
        (void)sw__trace_print_json(sink, &forest, &set);
        sw__trace_forest_destroy(&forest);
    }
    sw__trace_set_destroy(&set);
    return 0;
}
