/*
 * pipeline.c - the DataCarrier consumer: report the encoded segments, release their chunks.
 */
#include "pipeline.h"

#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../encode/encode.h"
#include "../grpc/grpc_reporter.h"
#include "../kafka/kafka_reporter.h"
#include "../meter/meter_report.h"
#include "../applog/log_report.h"
#include "../report/reporter.h"
#include "../encode/segment_item.h"
#include "swc_errbuf.h"
#include "../util/locality.h"

struct sw__pipeline {
    dc_carrier_t *carrier;
    sw__reporter_t *reporter;
    sw__report_counters_t *counters; /* owned by the agent: outlive the pipeline */
    sw__chunk_pool_t *chunks;
    sw__segment_pool_t *pool;
    const sw__encoder_t *encoder;
    sw__meter_report_t *meters; /* NULL: no meters (file reporter, interval 0) */

    /* Consumer thread only (and sw__pipeline_stop after it was joined). */
    sw__bytes_t out; /* the big segments of a batch, encoded here */
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

/* Encodes a big segment's block plus its id (the Kafka key) into p->out; the record gets
   offsets for now (p->out may still move while later blocks are encoded). */
static bool block_encode(sw__pipeline_t *p, const sw__segment_t *seg, sw__report_record_t *rec)
{
    size_t start = p->out.len, at;
    if (sw__encode_segment(p->encoder, seg, &p->out, &at) != 0) {
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
    rec->data = (const uint8_t *)(uintptr_t)at;
    rec->len = id_at - at;
    rec->segment_id = (const char *)(uintptr_t)id_at;
    return true;
}

/*
 * The items were written on other cores. Asking for an item's first lines a few items ahead
 * overlaps those transfers with the work on the ones before (hints only).
 */
enum { PREFETCH_AHEAD = 4 };

static void item_prefetch(void *item)
{
    const sw__segment_t *seg = sw__item_block(item);
    sw__prefetch_read(seg != NULL ? (const void *)seg : item, 3 * SW__LINE);
}

/* Gives every encoded record back to its chunk: one release per run of records of one chunk
   (a thread's records are consecutive in its ring). Blocks are skipped. */
static void records_release(sw__pipeline_t *p, void **items, size_t count)
{
    sw__chunk_t *chunk = NULL;
    uint64_t run = 0;
    for (size_t i = 0; i < count; i++) {
        if (sw__item_block(items[i]) != NULL) {
            continue;
        }
        sw__chunk_t *c = ((const sw__encoded_t *)items[i])->chunk;
        if (c != chunk) {
            if (chunk != NULL) {
                sw__chunk_release(p->chunks, chunk, run);
            }
            chunk = c;
            run = 0;
        }
        run++;
    }
    if (chunk != NULL) {
        sw__chunk_release(p->chunks, chunk, run);
    }
}

/* Gives the batch's blocks back to the pool as one chain. */
static void blocks_return(sw__pipeline_t *p, void **items, size_t count)
{
    sw__segment_t *first = NULL, *last = NULL;
    for (size_t i = 0; i < count; i++) {
        sw__segment_t *seg = sw__item_block(items[i]);
        if (seg == NULL) {
            continue;
        }
        seg->link.next = first != NULL ? &first->link : NULL;
        first = seg;
        if (last == NULL) {
            last = seg;
        }
    }
    if (first != NULL) {
        sw__segment_pool_push_chain(p->pool, first, last);
    }
}

/*
 * Builds the batch's report records: an encoded record's point into its chunk (from the front
 * of p->records), a block is encoded into p->out (its records from the back, with offsets until
 * every block is encoded). Returns the number of records, compacted to the front; counts what
 * could not be encoded as failed.
 */
static size_t records_build(sw__pipeline_t *p, void **items, size_t count)
{
    p->out.len = 0;
    size_t front = 0, back = count; /* records [0, front) and [back, count) */
    uint64_t failed = 0;
    for (size_t i = 0; i < count; i++) {
        if (i + PREFETCH_AHEAD < count) {
            item_prefetch(items[i + PREFETCH_AHEAD]);
        }
        sw__segment_t *seg = sw__item_block(items[i]);
        if (seg == NULL) {
            const sw__encoded_t *rec = items[i];
            p->records[front++] = (sw__report_record_t){rec->segment_id, rec->data, rec->len};
            continue;
        }
        if (block_encode(p, seg, &p->records[back - 1])) {
            back--;
        } else {
            failed++;
        }
    }
    for (size_t k = back; k < count; k++) {
        sw__report_record_t *r = &p->records[k];
        r->data = p->out.data + (uintptr_t)r->data;
        r->segment_id = (const char *)p->out.data + (uintptr_t)r->segment_id;
        p->records[front++] = *r;
    }
    if (failed != 0) { /* release: see reporter.h */
        atomic_fetch_add_explicit(&p->counters->failed, failed, memory_order_release);
    }
    return front;
}

static void pipeline_consume(void *ctx, void **items, size_t count)
{
    sw__pipeline_t *p = ctx;
    bool room = sw__report_records_reserve(&p->records, &p->records_cap, count);
    size_t n = room ? records_build(p, items, count) : 0;
    if (!room) { /* nothing can be reported: every item counts as failed (release: reporter.h) */
        atomic_fetch_add_explicit(&p->counters->failed, count, memory_order_release);
    }
    /* The blocks go back before the report, so producers can reuse them while we write. */
    blocks_return(p, items, count);
    /* Encoded records point into their chunks, which stay until the release below (a reporter
       copies what must outlive report(): reporter.h). */
    if (n != 0) {
        p->reporter->report(p->reporter, p->records, n);
    }
    records_release(p, items, count);
}

static void pipeline_on_exit(void *ctx)
{
    sw__pipeline_t *p = ctx;
    (void)p->reporter->flush(p->reporter);
}

int sw__pipeline_start(const sw_config_t *cfg, sw__chunk_pool_t *chunks, sw__segment_pool_t *pool,
                       const sw__encoder_t *encoder, sw__report_counters_t *counters,
                       sw__stats_read_fn agent_stats, sw__pipeline_t **out, char *errbuf,
                       size_t errlen)
{
    sw__pipeline_t *p = calloc(1, sizeof *p);
    if (p == NULL) {
        return SW_ENOMEM;
    }
    p->chunks = chunks;
    p->pool = pool;
    p->encoder = encoder;
    p->counters = counters;
    int rc = reporter_open(cfg, counters, &p->reporter, errbuf, errlen);
    if (rc != 0) {
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
        free(p);
        return rc == DC_ENOMEM ? SW_ENOMEM : SW_ECONFIG;
    }
    rc = dc_consume(p->carrier, pipeline_consume, pipeline_on_exit, p, 1,
                    cfg->buffer_consume_cycle_ms);
    if (rc != 0) {
        swc__errbuf_printf(errbuf, errlen, "cannot start the consumer thread: %s", dc_strerror(rc));
        dc_carrier_destroy(p->carrier);
        p->reporter->close(p->reporter);
        free(p);
        return rc == DC_ETHREAD ? SW_ETHREAD : SW_ENOMEM;
    }
    /* Meters ride on the reporter when it carries them (meter_report.h). */
    if (p->reporter->report_meters != NULL && cfg->meter_report_interval_s != 0) {
        rc = sw__meter_report_start(cfg, p->reporter, p->carrier, sw__pipeline_slots(cfg),
                                    agent_stats, true, &p->meters);
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
    sw__bytes_free(&p->out);
    free(p->records);
    free(p);
}
