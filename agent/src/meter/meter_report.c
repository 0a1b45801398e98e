/*
 * meter_report.c - one period's meters as MeterData messages, and the thread that sends them.
 * See meter_report.h for the meter names.
 */
#include "meter_report.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../segment/clock.h"
#include "../encode/pb_reverse.h"
#include "../log/log.h"
#include "meter.h"
#include "process_meters.h"
#include "meter.pb-c.h"
#include "../util/periodic.h"

struct sw__meter_report {
    /* Immutable after start. */
    sw__reporter_t *reporter;
    const dc_carrier_t *carrier;
    uint64_t carrier_slots;
    sw__stats_read_fn agent_stats; /* NULL: the agent's own meters read as 0 */
    const char *service;
    const char *instance;
    sw__periodic_t *thread;

    /* Meter thread only (or a test that started no thread). */
    sw__bytes_t out;
    sw__report_record_t *items;
    size_t items_len, items_cap;
    bool first_written;
    double last_cpu_s;
    struct timespec last_at; /* CLOCK_MONOTONIC of last_cpu_s */
    int last_error_logged;
};

static bool items_reserve(sw__meter_report_t *m)
{
    if (m->items_len < m->items_cap) {
        return true;
    }
    size_t cap = m->items_cap ? 2 * m->items_cap : 64;
    sw__report_record_t *grown = realloc(m->items, cap * sizeof *grown);
    if (grown == NULL) {
        return false;
    }
    m->items = grown;
    m->items_cap = cap;
    return true;
}

/* Packs md (service, instance and timestamp on the period's first message) into out and
   records its offset. */
static int message_add(sw__meter_report_t *m, Skywalking__V3__MeterData *md, int64_t now_ms)
{
    if (!m->first_written) {
        md->service = (char *)(uintptr_t)m->service;
        md->serviceinstance = (char *)(uintptr_t)m->instance;
        md->timestamp = now_ms;
    }
    size_t len = skywalking__v3__meter_data__get_packed_size(md);
    if (!items_reserve(m) || sw__bytes_reserve(&m->out, len) != 0) {
        return SW_ENOMEM;
    }
    size_t at = m->out.len;
    skywalking__v3__meter_data__pack(md, m->out.data + at);
    m->out.len += len;
    /* An offset for now: out may still move while later messages are added. */
    m->items[m->items_len].segment_id = NULL;
    m->items[m->items_len].data = (const uint8_t *)(uintptr_t)at;
    m->items[m->items_len].len = len;
    m->items_len++;
    m->first_written = true;
    return 0;
}

/* Labels of a meter's tags; `labels` and `ptrs` have SW_METER_TAGS_MAX entries. */
static size_t labels_fill(const sw_kv_t *tags, size_t n, Skywalking__V3__Label *labels,
                          Skywalking__V3__Label **ptrs)
{
    for (size_t i = 0; i < n; i++) {
        skywalking__v3__label__init(&labels[i]);
        labels[i].name = (char *)(uintptr_t)tags[i].key;
        labels[i].value = (char *)(uintptr_t)tags[i].value;
        ptrs[i] = &labels[i];
    }
    return n;
}

static int single_add(sw__meter_report_t *m, const char *name, const sw_kv_t *tags, size_t n_tags,
                      double value, int64_t now_ms)
{
    if (isnan(value)) {
        return 0; /* a supplier that has no value now: left out of this period */
    }
    Skywalking__V3__Label labels[SW_METER_TAGS_MAX], *ptrs[SW_METER_TAGS_MAX];
    Skywalking__V3__MeterSingleValue sv = SKYWALKING__V3__METER_SINGLE_VALUE__INIT;
    sv.name = (char *)(uintptr_t)name;
    sv.n_labels = labels_fill(tags, n_tags, labels, ptrs);
    sv.labels = ptrs;
    sv.value = value;
    Skywalking__V3__MeterData md = SKYWALKING__V3__METER_DATA__INIT;
    md.metric_case = SKYWALKING__V3__METER_DATA__METRIC_SINGLE_VALUE;
    md.singlevalue = &sv;
    return message_add(m, &md, now_ms);
}

static int histogram_add(sw__meter_report_t *m, const sw_meter_t *h, int64_t now_ms)
{
    Skywalking__V3__Label labels[SW_METER_TAGS_MAX], *ptrs[SW_METER_TAGS_MAX];
    Skywalking__V3__MeterBucketValue buckets[SW_METER_STEPS_MAX], *bptrs[SW_METER_STEPS_MAX];
    for (uint32_t i = 0; i < h->n_steps; i++) {
        skywalking__v3__meter_bucket_value__init(&buckets[i]);
        buckets[i].bucket = h->steps[i];
        /* relaxed: a count, read while other threads may add (meter.h). */
        buckets[i].count = (int64_t)atomic_load_explicit(&h->counts[i], memory_order_relaxed);
        bptrs[i] = &buckets[i];
    }
    Skywalking__V3__MeterHistogram hg = SKYWALKING__V3__METER_HISTOGRAM__INIT;
    hg.name = (char *)(uintptr_t)h->name;
    hg.n_labels = labels_fill(h->tags, h->n_tags, labels, ptrs);
    hg.labels = ptrs;
    hg.n_values = h->n_steps;
    hg.values = bptrs;
    Skywalking__V3__MeterData md = SKYWALKING__V3__METER_DATA__INIT;
    md.metric_case = SKYWALKING__V3__METER_DATA__METRIC_HISTOGRAM;
    md.histogram = &hg;
    return message_add(m, &md, now_ms);
}

static double seconds_between(struct timespec a, struct timespec b)
{
    return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

static int process_add(sw__meter_report_t *m, int64_t now_ms)
{
    sw__process_sample_t ps;
    if (sw__process_sample(&ps) != 0) {
        return 0; /* no procfs: no process meters */
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double wall = seconds_between(m->last_at, now);
    double cpu = wall > 0 ? (ps.cpu_seconds - m->last_cpu_s) / wall * 100.0 : 0.0;
    m->last_cpu_s = ps.cpu_seconds;
    m->last_at = now;
    int rc = single_add(m, SW__METER_PREFIX "process_cpu_utilization", NULL, 0, cpu < 0 ? 0 : cpu,
                        now_ms);
    if (rc == 0) {
        rc = single_add(m, SW__METER_PREFIX "process_rss_bytes", NULL, 0, (double)ps.rss_bytes,
                        now_ms);
    }
    if (rc == 0) {
        rc = single_add(m, SW__METER_PREFIX "process_threads", NULL, 0, (double)ps.threads, now_ms);
    }
    if (rc == 0) {
        rc = single_add(m, SW__METER_PREFIX "process_open_fds", NULL, 0, (double)ps.open_fds,
                        now_ms);
    }
    return rc;
}

typedef struct named_value {
    const char *name;
    double value;
} named_value_t;

static int agent_add(sw__meter_report_t *m, int64_t now_ms)
{
    sw_stats_t st = {0};
    if (m->agent_stats != NULL) {
        m->agent_stats(&st);
    }
    named_value_t v[16];
    size_t n = 0;
    v[n++] = (named_value_t){SW__METER_PREFIX "segments_finished", (double)st.segments_finished};
    v[n++] = (named_value_t){SW__METER_PREFIX "segments_reported", (double)st.segments_reported};
    v[n++] = (named_value_t){SW__METER_PREFIX "segments_dropped", (double)st.segments_dropped};
    v[n++] = (named_value_t){SW__METER_PREFIX "segments_failed", (double)st.segments_failed};
    v[n++] = (named_value_t){SW__METER_PREFIX "traces_sampled_out", (double)st.traces_sampled_out};
    v[n++] = (named_value_t){SW__METER_PREFIX "traces_ignored", (double)st.traces_ignored};
    if (m->carrier != NULL) {
        dc_stats_t dc;
        dc_carrier_stats(m->carrier, &dc);
        double slots = m->carrier_slots ? (double)m->carrier_slots : 1.0;
        v[n++] = (named_value_t){SW__METER_PREFIX "queue_pending", (double)dc.pending};
        v[n++] = (named_value_t){SW__METER_PREFIX "queue_fill_percent",
                                 (double)dc.pending * 100.0 / slots};
    }
    if (m->reporter->producer_meters != NULL) {
        sw__producer_meters_t pm;
        m->reporter->producer_meters(m->reporter, &pm);
        v[n++] = (named_value_t){SW__METER_PREFIX "producer_records_sent", (double)pm.records_sent};
        v[n++] =
            (named_value_t){SW__METER_PREFIX "producer_records_acked", (double)pm.records_acked};
        v[n++] =
            (named_value_t){SW__METER_PREFIX "producer_records_failed", (double)pm.records_failed};
        v[n++] =
            (named_value_t){SW__METER_PREFIX "producer_buffer_used_bytes", (double)pm.buffer_used};
        v[n++] = (named_value_t){SW__METER_PREFIX "producer_buffer_total_bytes",
                                 (double)pm.buffer_total};
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = single_add(m, v[i].name, NULL, 0, v[i].value, now_ms);
    }
    return rc;
}

static int user_add(sw__meter_report_t *m, int64_t now_ms)
{
    size_t n = sw__meter_registry_count();
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const sw_meter_t *meter = sw__meter_registry_at(i);
        switch (meter->kind) {
        case SW__METER_HISTOGRAM:
            rc = histogram_add(m, meter, now_ms);
            break;
        case SW__METER_GAUGE_FN:
            rc = single_add(m, meter->name, meter->tags, meter->n_tags,
                            meter->supplier(meter->opaque), now_ms);
            break;
        default:
            rc = single_add(m, meter->name, meter->tags, meter->n_tags, sw__meter_scalar(meter),
                            now_ms);
            break;
        }
    }
    return rc;
}

int sw__meter_report_collect(sw__meter_report_t *m, int64_t now_ms,
                             const sw__report_record_t **items, size_t *count)
{
    m->out.len = 0;
    m->items_len = 0;
    m->first_written = false;
    int rc = process_add(m, now_ms);
    if (rc == 0) {
        rc = agent_add(m, now_ms);
    }
    if (rc == 0) {
        rc = user_add(m, now_ms);
    }
    for (size_t i = 0; i < m->items_len; i++) {
        m->items[i].data = m->out.data + (uintptr_t)m->items[i].data;
    }
    *items = m->items;
    *count = rc == 0 ? m->items_len : 0;
    return rc;
}

/* One period on the meter thread: collect and send; a failure is logged once per change. */
static void period_run(void *arg)
{
    sw__meter_report_t *m = arg;
    const sw__report_record_t *items;
    size_t count;
    int rc = sw__meter_report_collect(m, sw__now_ms(), &items, &count);
    if (rc == 0 && count != 0) {
        rc = m->reporter->report_meters(m->reporter, items, count);
    }
    if (rc != 0 && rc != m->last_error_logged) {
        sw__log(SW_LOG_WARN, "meters: cannot report this period's %zu meters through %s: %s", count,
                m->reporter->name, sw_strerror(rc));
    }
    m->last_error_logged = rc;
}

int sw__meter_report_start(const sw_config_t *cfg, sw__reporter_t *reporter,
                           const dc_carrier_t *carrier, uint64_t carrier_slots,
                           sw__stats_read_fn agent_stats, bool start_thread,
                           sw__meter_report_t **out)
{
    sw__meter_report_t *m = calloc(1, sizeof *m);
    if (m == NULL) {
        return SW_ENOMEM;
    }
    m->reporter = reporter;
    m->carrier = carrier;
    m->carrier_slots = carrier_slots;
    m->agent_stats = agent_stats;
    m->service = cfg->service_name;
    m->instance = cfg->instance_name;
    sw__process_sample_t ps;
    if (sw__process_sample(&ps) == 0) {
        m->last_cpu_s = ps.cpu_seconds;
    }
    clock_gettime(CLOCK_MONOTONIC, &m->last_at);
    if (start_thread) {
        int rc = sw__periodic_start("sw-meter", cfg->meter_report_interval_s * 1000u,
                                    SW__PERIODIC_AFTER_A_PERIOD, period_run, NULL, m, &m->thread);
        if (rc != 0) {
            free(m);
            return rc;
        }
    }
    *out = m;
    return 0;
}

void sw__meter_report_stop(sw__meter_report_t *m)
{
    if (m == NULL) {
        return;
    }
    sw__periodic_stop(m->thread);
    sw__bytes_free(&m->out);
    free(m->items);
    free(m);
}

int sw__meter_collection_pack(const sw__report_record_t *items, size_t count, sw__bytes_t *out)
{
    size_t need = 0;
    for (size_t i = 0; i < count; i++) {
        need += 1 + sw__pb_varint_len(items[i].len) + items[i].len;
    }
    if (sw__bytes_reserve(out, need) != 0) {
        return SW_ENOMEM;
    }
    uint8_t *p = out->data + out->len;
    for (size_t i = 0; i < count; i++) {
        *p++ = 0x0a; /* field 1 (meterData), wire type 2 (length-delimited) */
        uint64_t v = items[i].len;
        while (v >= 0x80) {
            *p++ = (uint8_t)(v | 0x80);
            v >>= 7;
        }
        *p++ = (uint8_t)v;
        memcpy(p, items[i].data, items[i].len);
        p += items[i].len;
    }
    out->len += need;
    return 0;
}
