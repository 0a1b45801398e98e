/*
 * test_agent_support.h - helpers shared by the agent's unit tests: a private output file per
 * test, starting the agent on it, and reading the file back with protobuf-c.
 */
#ifndef TEST_AGENT_SUPPORT_H
#define TEST_AGENT_SUPPORT_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "skywalking.h"
#include "tracing.pb-c.h"

/* A fresh directory under /tmp and a file path in it (static storage, one per process). */
static inline const char *agent_test_path(void)
{
    static char path[256];
    char dir[] = "/tmp/sw-agent-test-XXXXXX";
    cr_assert_not_null(mkdtemp(dir), "mkdtemp failed");
    snprintf(path, sizeof path, "%s/segments.bin", dir);
    return path;
}

/* Starts the agent writing to `path` with test names; `edit` may adjust the config first. The
   consume cycle is the Java DataCarrier's 20 ms instead of the agent's 500 (a consumer with
   nothing to do naps that long): many tests wait for each batch to be reported before the next,
   and that would cost them up to a cycle each time. */
static inline void agent_test_start(const char *path, void (*edit)(sw_config_t *))
{
    sw_config_t cfg;
    sw_config_init(&cfg);
    cfg.buffer_consume_cycle_ms = 20;
    snprintf(cfg.file_path, sizeof cfg.file_path, "%s", path);
    snprintf(cfg.service_name, sizeof cfg.service_name, "test-service");
    snprintf(cfg.instance_name, sizeof cfg.instance_name, "test-instance");
    if (edit != NULL) {
        edit(&cfg);
    }
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
}

/* Stops the agent and asserts the exact accounting of the run. Returns the final counters. */
static inline sw_stats_t agent_test_stop(void)
{
    cr_assert_eq(sw_shutdown(), 0);
    sw_stats_t st;
    sw_stats(&st);
    cr_assert_eq(st.segments_finished,
                 st.segments_reported + st.segments_dropped + st.segments_failed,
                 "accounting: finished %llu != reported %llu + dropped %llu + failed %llu",
                 (unsigned long long)st.segments_finished, (unsigned long long)st.segments_reported,
                 (unsigned long long)st.segments_dropped, (unsigned long long)st.segments_failed);
    return st;
}

typedef struct decoded_segments {
    Skywalking__V3__SegmentObject **items;
    size_t count;
} decoded_segments_t;

/* Reads every length-delimited SegmentObject of the file; a malformed file fails the test. */
static inline decoded_segments_t agent_test_read(const char *path)
{
    decoded_segments_t out = {NULL, 0};
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)size + 1);
    cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    size_t pos = 0, cap = 0;
    while (pos < (size_t)size) {
        uint64_t len = 0;
        int shift = 0;
        for (;;) {
            cr_assert_lt(pos, (size_t)size, "truncated varint at %zu", pos);
            uint8_t b = buf[pos++];
            len |= (uint64_t)(b & 0x7F) << shift;
            if (!(b & 0x80)) {
                break;
            }
            shift += 7;
            cr_assert_lt(shift, 64, "varint too long");
        }
        cr_assert_leq(pos + len, (size_t)size, "record of %llu bytes overruns the file",
                      (unsigned long long)len);
        Skywalking__V3__SegmentObject *seg =
            skywalking__v3__segment_object__unpack(NULL, (size_t)len, buf + pos);
        cr_assert_not_null(seg, "record at %zu is not a SegmentObject", pos);
        if (out.count == cap) {
            cap = cap ? cap * 2 : 16;
            out.items = realloc(out.items, cap * sizeof *out.items);
        }
        out.items[out.count++] = seg;
        pos += len;
    }
    free(buf);
    return out;
}

static inline void agent_test_free(decoded_segments_t *d)
{
    for (size_t i = 0; i < d->count; i++) {
        skywalking__v3__segment_object__free_unpacked(d->items[i], NULL);
    }
    free(d->items);
    d->items = NULL;
    d->count = 0;
}

/* The segment whose first span has this operation name, or NULL. */
static inline Skywalking__V3__SegmentObject *agent_test_find(const decoded_segments_t *d,
                                                             const char *first_op)
{
    for (size_t i = 0; i < d->count; i++) {
        if (d->items[i]->n_spans > 0 &&
            strcmp(d->items[i]->spans[0]->operationname, first_op) == 0) {
            return d->items[i];
        }
    }
    return NULL;
}

#endif /* TEST_AGENT_SUPPORT_H */
