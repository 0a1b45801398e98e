/*
 * pipeline.c - the DataCarrier consumer: encode, recycle, report.
 */
#include "pipeline.h"

#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "encode.h"
#include "grpc_reporter.h"
#include "kafka_reporter.h"
#include "meter_report.h"
#include "log_report.h"
#include "reporter.h"
#include "swc_errbuf.h"

struct sw__pipeline {
    dc_carrier_t *carrier;
    sw__reporter_t *reporter;
    sw__report_counters_t *counters; /* owned by the agent: outlive the pipeline */
    sw__segment_pool_t *pool;
    sw__meter_report_t *meters; /* NULL: no meters (file reporter, interval 0) */

    /* Consumer thread only (and sw__pipeline_stop after it was joined). */
    sw__encoder_t encoder;
    sw__bytes_t out;
    sw__report_record_t *records;
    size_t records_cap;
};

static int reporter_open(const sw_config_t *cfg, sw__report_counters_t *counters,
                         sw__reporter_t **out, char *errbuf, size_t errlen)
{
    if (strcmp(cfg->reporter, "file") == 0) {
        return sw__file_reporter_create(cfg->file_path, counters, out, errbuf, errlen);
    }
    if (strcmp(cfg->reporter, "kafka") == 0) {
        return sw__kafka_reporter_create(cfg, counters, out, errbuf, errlen);
    }
    if (strcmp(cfg->reporter, "grpc") == 0) {
        return sw__grpc_reporter_create(cfg, counters, out, errbuf, errlen);
    }
    swc__errbuf_printf(errbuf, errlen,
                       "SW_REPORTER=%s: this build has no %s reporter yet (use file)",
                       cfg->reporter, cfg->reporter);
    return SW_ENOTSUP;
}

bool sw__report_records_reserve(sw__report_record_t **records, size_t *cap, size_t n)
{
    if (*cap >= n) {
        return true;
    }
    size_t grow = *cap ? *cap : 64;
    while (grow < n) {
        grow *= 2;
    }
    sw__report_record_t *grown = realloc(*records, grow * sizeof *grown);
    if (grown == NULL) {
        return false;
    }
    *records = grown;
    *cap = grow;
    return true;
}

/* Encodes one segment plus its id (the Kafka key) into p->out; records offsets in rec. */
static bool segment_encode(sw__pipeline_t *p, const sw__segment_t *seg, sw__report_record_t *rec)
{
    size_t start = p->out.len, at;
    if (sw__encode_segment(&p->encoder, seg, &p->out, &at) != 0) {
        return false;
    }
    size_t id_len = strlen(seg->segment_id);
    if (sw__bytes_reserve(&p->out, id_len + 1) != 0) {
        p->out.len = start;
        return false;
    }
    size_t id_at = p->out.len;
    memcpy(p->out.data + id_at, seg->segment_id, id_len + 1);
    p->out.len += id_len + 1;
    /* Offsets for now: p->out may still move while later segments are encoded. */
    rec->data = (const uint8_t *)(uintptr_t)at;
    rec->len = id_at - at;
    rec->segment_id = (const char *)(uintptr_t)id_at;
    return true;
}

/*
 * The consumer reads each segment block on another core than the one that wrote it, so every
 * line it touches is a transfer between caches. Asking for them a few segments ahead overlaps
 * those transfers with the encoding of the segments before: the header's first lines (its
 * counts and pointers) four segments ahead, then, once those are here, the lines a typical
 * segment's encoding reads (ids, the first strings, the last attributes, the first span) two
 * segments ahead. Hints only: nothing depends on them.
 */
enum { PREFETCH_HEADER_AHEAD = 4, PREFETCH_BODY_AHEAD = 2 };

static void prefetch_header(const sw__segment_t *seg)
{
    __builtin_prefetch(seg);
    __builtin_prefetch((const char *)seg + 64);
}

static void prefetch_body(const sw__segment_t *seg)
{
    __builtin_prefetch(seg->segment_id);
    __builtin_prefetch(seg->trace_id);
    __builtin_prefetch(seg->arena);
    __builtin_prefetch(seg->arena + seg->arena_cap - 64);
    __builtin_prefetch(seg->arena + seg->arena_cap - 128);
    __builtin_prefetch(seg->spans);
}

static void pipeline_consume(void *ctx, void **items, size_t count)
{
    sw__pipeline_t *p = ctx;
    p->out.len = 0;
    bool room = sw__report_records_reserve(&p->records, &p->records_cap, count);
    size_t n = 0;
    uint64_t failed = 0;
    sw__segment_t *first = NULL, *last = NULL;
    for (size_t i = 0; i < count; i++) {
        if (i + PREFETCH_HEADER_AHEAD < count) {
            prefetch_header(items[i + PREFETCH_HEADER_AHEAD]);
        }
        if (i + PREFETCH_BODY_AHEAD < count) {
            prefetch_body(items[i + PREFETCH_BODY_AHEAD]);
        }
        sw__segment_t *seg = items[i];
        if (room && segment_encode(p, seg, &p->records[n])) {
            n++;
        } else {
            failed++;
        }
        seg->next = first;
        first = seg;
        if (last == NULL) {
            last = seg;
        }
    }
    /* The blocks go back before the report, so producers can reuse them while we write. */
    if (first != NULL) {
        sw__segment_pool_push_chain(p->pool, first, last);
    }
    for (size_t i = 0; i < n; i++) {
        p->records[i].data = p->out.data + (uintptr_t)p->records[i].data;
        p->records[i].segment_id = (const char *)p->out.data + (uintptr_t)p->records[i].segment_id;
    }
    if (failed != 0) { /* release: see reporter.h */
        atomic_fetch_add_explicit(&p->counters->failed, failed, memory_order_release);
    }
    if (n != 0) {
        p->reporter->report(p->reporter, p->records, n);
    }
}

static void pipeline_on_exit(void *ctx)
{
    sw__pipeline_t *p = ctx;
    (void)p->reporter->flush(p->reporter);
}

int sw__pipeline_start(const sw_config_t *cfg, sw__segment_pool_t *pool,
                       sw__report_counters_t *counters, sw__pipeline_t **out, char *errbuf,
                       size_t errlen)
{
    sw__pipeline_t *p = calloc(1, sizeof *p);
    if (p == NULL) {
        return SW_ENOMEM;
    }
    p->pool = pool;
    p->counters = counters;
    if (sw__encoder_set_process(&p->encoder, cfg->service_name, cfg->instance_name) != 0) {
        free(p);
        return SW_ENOMEM;
    }
    int rc = reporter_open(cfg, counters, &p->reporter, errbuf, errlen);
    if (rc != 0) {
        sw__encoder_free(&p->encoder);
        free(p);
        return rc;
    }
    /* Producer-thread partitioning (thread id % channels): a thread keeps to one ring while it
       is not full, so its produces stay on that ring's cache lines; two threads whose ids fall
       on the same channel share a ring. */
    rc = dc_carrier_create("sw-segments", cfg->buffer_channel_size, cfg->buffer_buffer_size,
                           DC_STRATEGY_IF_POSSIBLE, dc_partitioner_thread(cfg->buffer_channel_size),
                           &p->carrier, errbuf, errlen);
    if (rc != DC_OK) {
        p->reporter->close(p->reporter);
        sw__encoder_free(&p->encoder);
        free(p);
        return rc == DC_ENOMEM ? SW_ENOMEM : SW_ECONFIG;
    }
    rc = dc_consume(p->carrier, pipeline_consume, pipeline_on_exit, p, 1, 20);
    if (rc != 0) {
        swc__errbuf_printf(errbuf, errlen, "cannot start the consumer thread: %s", dc_strerror(rc));
        dc_carrier_destroy(p->carrier);
        p->reporter->close(p->reporter);
        sw__encoder_free(&p->encoder);
        free(p);
        return rc == DC_ETHREAD ? SW_ETHREAD : SW_ENOMEM;
    }
    /* Meters ride on the reporter when it carries them (meter_report.h). */
    if (p->reporter->report_meters != NULL && cfg->meter_report_interval_s != 0) {
        rc = sw__meter_report_start(cfg, p->reporter, p->carrier, sw__pipeline_slots(cfg), true,
                                    &p->meters);
        if (rc != 0) {
            swc__errbuf_printf(errbuf, errlen, "cannot start the meter thread: %s",
                               sw_strerror(rc));
            sw__pipeline_stop(p);
            return rc;
        }
    }
    /* Application logs and events (log_report.h), when the reporter has a log path. */
    rc = sw__log_pipeline_start(cfg, p->reporter, errbuf, errlen);
    if (rc != 0) {
        sw__pipeline_stop(p);
        return rc;
    }
    *out = p;
    return 0;
}

uint64_t sw__pipeline_slots(const sw_config_t *cfg)
{
    uint64_t ring = 2;
    while (ring < cfg->buffer_buffer_size) {
        ring <<= 1;
    }
    return (uint64_t)cfg->buffer_channel_size * ring;
}

dc_carrier_t *sw__pipeline_carrier(const sw__pipeline_t *p)
{
    return p->carrier;
}

void sw__pipeline_drain(sw__pipeline_t *p)
{
    if (p->reporter == NULL) {
        return;
    }
    if (p->reporter->shutdown_begin != NULL) {
        p->reporter->shutdown_begin(p->reporter);
    }
    /* After shutdown_begin, which bounds a meter send in progress; before close(). */
    sw__meter_report_stop(p->meters);
    p->meters = NULL;
    /* Logs and the Shutdown event, before the reporter closes; after shutdown_begin, so that
       Kafka's drain watchdog bounds a kp_send of the log sender blocked on a dead broker too. */
    sw__log_pipeline_stop();
    (void)dc_carrier_shutdown(p->carrier); /* drains through pipeline_consume, then on_exit */
    dc_stats_t st;
    dc_carrier_stats(p->carrier, &st);
    if (st.pending != 0) { /* cannot happen with a consumer; keep the accounting exact anyway */
        atomic_fetch_add_explicit(&p->counters->failed, st.pending, memory_order_release);
    }
    p->reporter->close(p->reporter);
    p->reporter = NULL;
}

void sw__pipeline_stop(sw__pipeline_t *p)
{
    sw__pipeline_drain(p);
    dc_carrier_destroy(p->carrier);
    sw__encoder_free(&p->encoder);
    sw__bytes_free(&p->out);
    free(p->records);
    free(p);
}
