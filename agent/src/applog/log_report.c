/*
 * log_report.c - the queue and the sender thread of application logs and events. See
 * log_report.h.
 */
#include "swc_errbuf.h"
#include "log_report.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../segment/clock.h"
#include "datacarrier.h"

typedef struct log_pipeline {
    dc_carrier_t *carrier;
    sw__reporter_t *reporter;
    const sw_config_t *cfg;
    sw__log_settings_t settings;

    /* Sender thread only (and stop, after the thread was joined). */
    const sw__log_item_t *start_item; /* the Start event as queued (compared, not used) */
    sw__log_item_t *start_unsent;     /* the Start event after a failed send, or NULL */
    sw__report_record_t *records;
    size_t records_cap;
} log_pipeline_t;

/*
 * The running pipeline, or NULL. Application threads announce themselves in `users` before
 * they load `current` and leave after their last use of it; stop clears `current` and then
 * waits for `users` to reach 0 before freeing. Both sides use seq_cst: the increment must not
 * be ordered after the load of `current` (and stop's store before its load of `users`), the
 * store-load pattern that acquire/release alone does not forbid.
 */
static _Atomic(log_pipeline_t *) current;
static _Atomic uint64_t users;

/* The counters of the current or last run: reset by start; relaxed adds and reads except
   where noted (sw_stats after sw_shutdown reads them after the sender was joined). */
static _Atomic uint64_t recorded, dropped, truncated_count;
static sw__report_counters_t outcomes; /* reported / failed, written by the reporter */
/* What produce answers without a pipeline: SW_ENOTSUP while a reporter without a log path
   runs, SW_ESTATE otherwise. Relaxed: a hint, ordered with nothing. */
static _Atomic int off_code = SW_ESTATE;

/* sw_init and sw_shutdown hold the agent's lifecycle lock around start and stop. */

/* Sends the log lines among items[0..count) as one batch. */
static void logs_send(log_pipeline_t *p, void **items, size_t count)
{
    size_t n = 0, logs = 0;
    bool room = sw__report_records_reserve(&p->records, &p->records_cap, count);
    for (size_t i = 0; i < count; i++) {
        sw__log_item_t *it = items[i];
        if (it->kind != SW__LOG_ITEM_LOG) {
            continue;
        }
        logs++;
        if (room) {
            p->records[n++] = (sw__report_record_t){
                .segment_id = p->settings.service, .data = it->data, .len = it->len};
        }
    }
    if (!room && logs != 0) { /* release: partner of sw_stats' acquire loads (reporter.h) */
        atomic_fetch_add_explicit(&outcomes.failed, logs, memory_order_release);
    }
    if (n != 0) {
        p->reporter->report_logs(p->reporter, p->records, n, &outcomes);
    }
}

/* Sends one event; true when the collector took it. */
static bool event_send(log_pipeline_t *p, const sw__log_item_t *it)
{
    if (p->reporter->report_events == NULL) {
        return true; /* no event path (Kafka): nothing to retry */
    }
    sw__report_record_t rec = {.segment_id = p->settings.service, .data = it->data, .len = it->len};
    return p->reporter->report_events(p->reporter, &rec, 1) == 0;
}

/* The Start event the collector has not taken yet: tried again with every later batch, as the
   Java agent sends it again once the channel is connected. */
static void start_retry(log_pipeline_t *p)
{
    if (p->start_unsent != NULL && event_send(p, p->start_unsent)) {
        free(p->start_unsent);
        p->start_unsent = NULL;
    }
}

static void log_consume(void *ctx, void **items, size_t count)
{
    log_pipeline_t *p = ctx;
    start_retry(p);
    for (size_t i = 0; i < count; i++) {
        sw__log_item_t *it = items[i];
        if (it->kind == SW__LOG_ITEM_EVENT && !event_send(p, it) && it == p->start_item) {
            p->start_unsent = it; /* kept (not freed below) */
        }
    }
    logs_send(p, items, count);
    for (size_t i = 0; i < count; i++) {
        if (items[i] != p->start_unsent) {
            free(items[i]);
        }
    }
}

static void pipeline_free(log_pipeline_t *p)
{
    if (p->carrier != NULL) {
        dc_carrier_destroy(p->carrier);
    }
    free(p->start_unsent);
    free(p->records);
    free(p);
}

int sw__log_pipeline_start(const sw_config_t *cfg, sw__reporter_t *reporter, char *errbuf,
                           size_t errlen)
{
    atomic_store_explicit(&recorded, 0, memory_order_relaxed);
    atomic_store_explicit(&dropped, 0, memory_order_relaxed);
    atomic_store_explicit(&truncated_count, 0, memory_order_relaxed);
    atomic_store_explicit(&outcomes.reported, 0, memory_order_relaxed);
    atomic_store_explicit(&outcomes.failed, 0, memory_order_relaxed);
    if (reporter->report_logs == NULL) {
        atomic_store_explicit(&off_code, SW_ENOTSUP, memory_order_relaxed);
        return 0; /* no log path */
    }
    log_pipeline_t *p = calloc(1, sizeof *p);
    if (p == NULL) {
        return SW_ENOMEM;
    }
    p->reporter = reporter;
    p->cfg = cfg;
    p->settings.service = cfg->service_name;
    p->settings.instance = cfg->instance_name;
    p->settings.max_message_size = cfg->log_max_message_size ? cfg->log_max_message_size : 10240;
    uint32_t size = cfg->log_queue_size ? cfg->log_queue_size : 1024;
    /* One ring: the rolling partitioner spreads nothing, max_retry 1 gives up at once. */
    int rc = dc_carrier_create("sw-logs", 1, size, DC_STRATEGY_IF_POSSIBLE,
                               dc_partitioner_rolling(1), &p->carrier, errbuf, errlen);
    if (rc != DC_OK) {
        pipeline_free(p);
        return rc == DC_ENOMEM ? SW_ENOMEM : SW_ECONFIG;
    }
    rc = dc_consume(p->carrier, log_consume, NULL, p, 1, cfg->buffer_consume_cycle_ms);
    if (rc != 0) {
        swc__errbuf_printf(errbuf, errlen, "cannot start the log sender thread: %s",
                           dc_strerror(rc));
        pipeline_free(p);
        return rc == DC_ETHREAD ? SW_ETHREAD : SW_ENOMEM;
    }
    sw__log_item_t *start = sw__event_item_new(cfg, true, sw__process_start_ms(), sw__now_ms());
    p->start_item = start; /* before the produce: the sender may take it at once */
    if (start != NULL && !dc_produce(p->carrier, start)) {
        p->start_item = NULL;
        free(start);
    }
    atomic_store_explicit(&current, p, memory_order_seq_cst);
    return 0;
}

void sw__log_pipeline_stop(void)
{
    atomic_store_explicit(&off_code, SW_ESTATE, memory_order_relaxed);
    log_pipeline_t *p = atomic_exchange_explicit(&current, NULL, memory_order_seq_cst);
    if (p == NULL) {
        return;
    }
    /* Callers inside produce never block: this wait ends after a few of their instructions. */
    while (atomic_load_explicit(&users, memory_order_seq_cst) != 0) {
        sched_yield();
    }
    (void)dc_carrier_shutdown(p->carrier); /* drains through log_consume, joins the sender */
    dc_stats_t st;
    dc_carrier_stats(p->carrier, &st);
    if (st.pending != 0) { /* cannot happen with a consumer; keep the accounting exact anyway */
        atomic_fetch_add_explicit(&outcomes.failed, st.pending, memory_order_release);
    }
    /* A Start the collector never took gets a last try; then the Shutdown event, sent from
       this thread now that the sender is gone. */
    start_retry(p);
    sw__log_item_t *bye = sw__event_item_new(p->cfg, false, sw__now_ms(), sw__now_ms());
    if (bye != NULL) {
        void *items[1] = {bye};
        log_consume(p, items, 1);
    }
    pipeline_free(p);
}

int sw__log_pipeline_produce(sw__log_item_t *(*build)(const sw__log_settings_t *s, void *arg,
                                                      bool *truncated),
                             void *arg)
{
    atomic_fetch_add_explicit(&users, 1, memory_order_seq_cst);
    log_pipeline_t *p = atomic_load_explicit(&current, memory_order_seq_cst);
    int rc = 0;
    if (p == NULL) {
        rc = atomic_load_explicit(&off_code, memory_order_relaxed);
    } else {
        bool cut = false;
        sw__log_item_t *it = build(&p->settings, arg, &cut);
        atomic_fetch_add_explicit(&recorded, 1, memory_order_relaxed);
        if (cut) {
            atomic_fetch_add_explicit(&truncated_count, 1, memory_order_relaxed);
        }
        if (it == NULL) {
            rc = SW_ENOMEM;
        } else if (!dc_produce(p->carrier, it)) {
            free(it);
            rc = SW_ELIMIT;
        }
        if (rc != 0) {
            atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
        }
    }
    /* release: the last use of *p happens before stop sees users == 0 (seq_cst covers it). */
    atomic_fetch_sub_explicit(&users, 1, memory_order_seq_cst);
    return rc;
}

sw__log_item_t *sw__log_item_finish(sw__log_item_t *it, const sw__pbr_t *w, const uint8_t *end,
                                    uint32_t kind)
{
    if (w->overflow) {
        free(it);
        return NULL;
    }
    it->kind = kind;
    it->data = w->p;
    it->len = (uint32_t)(end - w->p);
    return it;
}

void sw__log_report_stats(sw_stats_t *st)
{
    /* Outcomes first (acquire, partner: the reporters' release adds), then the rest. */
    st->logs_reported = atomic_load_explicit(&outcomes.reported, memory_order_acquire);
    st->logs_failed = atomic_load_explicit(&outcomes.failed, memory_order_acquire);
    st->logs_dropped = atomic_load_explicit(&dropped, memory_order_relaxed);
    st->logs_truncated = atomic_load_explicit(&truncated_count, memory_order_relaxed);
    st->logs_recorded = atomic_load_explicit(&recorded, memory_order_relaxed);
}

void sw__log_pipeline_after_fork_child(void)
{
    /* The parent's sender thread does not exist here: its queue would never drain. Forget it
       (its memory is abandoned, as the parent's segment pipeline is); a child's sw_init starts
       its own. */
    atomic_store_explicit(&current, NULL, memory_order_relaxed);
    atomic_store_explicit(&users, 0, memory_order_relaxed);
    atomic_store_explicit(&off_code, SW_ESTATE, memory_order_relaxed);
}
