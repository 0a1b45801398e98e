/*
 * kafka_reporter.c - segments and management records to Kafka through the project's own
 * producer (libkproducer). See kafka_reporter.h for topics, keys and threads.
 */
#include "kafka_reporter.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../config/producer_config.h"
#include "../log/log.h"
#include "../encode/instance_properties.h"
#include "kproducer.h"
#include "../meter/meter_report.h"
#include "../util/periodic.h"
#include "swc_clock.h"
#include "swc_errbuf.h"

#define TOPIC_MAX                (2 * SW_CONFIG_NAME_MAX + 2)
#define KEY_MAX                  (SW_CONFIG_NAME_MAX + 16)
#define PROPERTIES_EVERY_N_PINGS 10

typedef struct kafka_reporter {
    sw__reporter_t base;
    kp_producer_t *producer;

    /* Immutable after create: read by the consumer and management threads. */
    char topic_segment[TOPIC_MAX];
    char topic_management[TOPIC_MAX];
    char topic_logging[TOPIC_MAX];
    char key_register[KEY_MAX]; /* "register-<instance>" */
    char key_ping[KEY_MAX];     /* "<instance>" */
    uint8_t *properties;        /* packed InstanceProperties */
    size_t properties_len;
    uint8_t *ping; /* packed InstancePingPkg */
    size_t ping_len;
    char topic_meter[TOPIC_MAX];
    int64_t buffer_total; /* buffer.memory: the pool's free bytes before the first record */

    /* Meter thread only (report_meters), freed by close() after the pipeline stopped it. */
    sw__bytes_t meter_collection;

    /* Consumer thread only (report, flush), then close() after the consumer was joined. */
    bool flush_timed_out;
    int last_error_logged;
    int last_log_error_logged; /* the log sender thread's, for report_logs */

    /* shutdown_begin() starts `watchdog` (drain_watchdog), which bounds the drain so that
       sw_shutdown never sits out max.block.ms once per batch; it sleeps on `wake` until
       close() sets `closing`. */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool closing; /* protected by lock */
    pthread_t watchdog;
    bool watchdog_started; /* set by shutdown_begin, read by close: sw_shutdown's thread */
    /* The heartbeats (management_tick); started by create, stopped by close. */
    sw__periodic_t *management;
    uint64_t management_ticks; /* the management thread's own */

    /* Management records acknowledged / failed; relaxed: diagnostics only, read in close. */
    _Atomic uint64_t management_acked;
    _Atomic uint64_t management_failed;
    /* Meter records acknowledged / failed; relaxed: diagnostics only. */
    _Atomic uint64_t meters_acked;
    _Atomic uint64_t meters_failed;
} kafka_reporter_t;

/* Delivery report of a segment or a log line (producer's sender thread, or the thread in
   kp_close); opaque: the counters the record counts in. */
static void segment_delivered(void *opaque, int error, int32_t partition, int64_t offset)
{
    sw__report_counters_t *counters = opaque;
    (void)partition;
    (void)offset;
    /* release: partner of sw_stats' acquire load (see reporter.h). */
    atomic_fetch_add_explicit(error == 0 ? &counters->reported : &counters->failed, 1,
                              memory_order_release);
}

/* Delivery report of a management record (sender thread or kp_close's caller). */
static void management_delivered(void *opaque, int error, int32_t partition, int64_t offset)
{
    kafka_reporter_t *r = opaque;
    (void)partition;
    (void)offset;
    atomic_fetch_add_explicit(error == 0 ? &r->management_acked : &r->management_failed, 1,
                              memory_order_relaxed);
}

/* Delivery report of a meter record (sender thread or kp_close's caller). */
static void meters_delivered(void *opaque, int error, int32_t partition, int64_t offset)
{
    kafka_reporter_t *r = opaque;
    (void)partition;
    (void)offset;
    atomic_fetch_add_explicit(error == 0 ? &r->meters_acked : &r->meters_failed, 1,
                              memory_order_relaxed);
}

/* One period's meters as one MeterDataCollection record, key = instance (the OAP's
   kafka-fetcher reads skywalking-meters so). Meter thread only. */
static int kafka_report_meters(sw__reporter_t *self, const sw__report_record_t *items, size_t count)
{
    kafka_reporter_t *r = (kafka_reporter_t *)self;
    r->meter_collection.len = 0;
    if (sw__meter_collection_pack(items, count, &r->meter_collection) != 0) {
        return SW_ENOMEM;
    }
    int rc =
        kp_send(r->producer, r->topic_meter, -1, r->key_ping, strlen(r->key_ping),
                r->meter_collection.data, r->meter_collection.len, NULL, 0, 0, meters_delivered, r);
    if (rc != 0) {
        atomic_fetch_add_explicit(&r->meters_failed, 1, memory_order_relaxed);
        return SW_EIO;
    }
    return 0;
}

static void kafka_producer_meters(sw__reporter_t *self, sw__producer_meters_t *out)
{
    kafka_reporter_t *r = (kafka_reporter_t *)self;
    kp_stats_t st;
    kp_stats(r->producer, &st);
    out->records_sent = st.records_sent;
    out->records_acked = st.records_acked;
    out->records_failed = st.records_failed;
    out->buffer_total = r->buffer_total;
    out->buffer_used = r->buffer_total - st.pool_available;
}

/* Errors after which the rest of a batch is failed at once: every further kp_send would wait
   max.block.ms again for the same missing broker, metadata or memory. */
static bool error_is_blocking(int rc)
{
    return rc == KP_EMETADATA_TIMEOUT || rc == KP_EUNKNOWN_TOPIC || rc == KP_EBUFFER_TIMEOUT ||
           rc == KP_ECLOSED;
}

/* Sends records to `topic` (key = the record's segment_id field), counting each once in
   *counters: failed at once when kp_send refuses it, else in segment_delivered. After an error
   that would make every further kp_send wait again (error_is_blocking) the rest of the batch
   fails at once. One log line per change of error (*last_error), not per record. The calling
   thread (consumer or log sender) may block in kp_send up to max.block.ms. */
static void records_send(kafka_reporter_t *r, const char *topic, const char *what,
                         const sw__report_record_t *records, size_t count,
                         sw__report_counters_t *counters, int *last_error)
{
    uint64_t failed = 0;
    bool give_up = false;
    for (size_t i = 0; i < count; i++) {
        if (give_up) {
            failed++;
            continue;
        }
        const sw__report_record_t *rec = &records[i];
        int rc = kp_send(r->producer, topic, -1, rec->segment_id, strlen(rec->segment_id),
                         rec->data, rec->len, NULL, 0, 0, segment_delivered, counters);
        if (rc == 0) {
            *last_error = 0; /* a later failure is worth a line again */
            continue;
        }
        failed++;
        if (rc != *last_error) { /* one line per change of error, not per record */
            /* A TLS or SASL failure has the producer's own account: which broker, which
               mechanism or certificate check (never a secret). */
            char why[512];
            if (kp_last_error(r->producer, why, sizeof why) != rc) {
                snprintf(why, sizeof why, "%s", kp_strerror(rc));
            }
            sw__log(SW_LOG_WARN, "kafka: cannot send %s to %s: %s (%s)", what, topic, why,
                    kp_err_name(rc));
            *last_error = rc;
        }
        give_up = error_is_blocking(rc);
    }
    if (failed != 0) { /* release: partner of sw_stats' acquire load (see reporter.h). */
        atomic_fetch_add_explicit(&counters->failed, failed, memory_order_release);
    }
}

static void kafka_report(sw__reporter_t *self, const sw__report_record_t *records, size_t count)
{
    kafka_reporter_t *r = (kafka_reporter_t *)self;
    records_send(r, r->topic_segment, "a segment", records, count, self->counters,
                 &r->last_error_logged);
}

/* Log lines to [<ns>-]skywalking-logs, key = service (log sender thread only). */
static void kafka_report_logs(sw__reporter_t *self, const sw__report_record_t *records,
                              size_t count, sw__report_counters_t *outcomes)
{
    kafka_reporter_t *r = (kafka_reporter_t *)self;
    records_send(r, r->topic_logging, "a log line", records, count, outcomes,
                 &r->last_log_error_logged);
}

static int kafka_flush(sw__reporter_t *self)
{
    kafka_reporter_t *r = (kafka_reporter_t *)self;
    if (kp_flush(r->producer, SW_KAFKA_FLUSH_TIMEOUT_MS) == 0) {
        return 0;
    }
    r->flush_timed_out = true;
    return SW_EIO;
}

/* Sends one management record; an error is counted, and the next heartbeat tries again. */
static void management_send(kafka_reporter_t *r, bool properties)
{
    const char *key = properties ? r->key_register : r->key_ping;
    int rc =
        kp_send(r->producer, r->topic_management, -1, key, strlen(key),
                properties ? r->properties : r->ping, properties ? r->properties_len : r->ping_len,
                NULL, 0, 0, management_delivered, r);
    if (rc != 0) {
        atomic_fetch_add_explicit(&r->management_failed, 1, memory_order_relaxed);
    }
}

/* The drain's watchdog, started by shutdown_begin: gives the drain SW_KAFKA_FLUSH_TIMEOUT_MS,
   then makes the producer refuse new records (a kp_send blocked on a dead broker returns at
   once and its records count as failed). Ends when close() sets `closing`. Its own thread:
   the management thread may itself be blocked in kp_send. */
static void *drain_watchdog(void *arg)
{
    kafka_reporter_t *r = arg;
    int64_t deadline = swc__deadline_after_ms(SW_KAFKA_FLUSH_TIMEOUT_MS);
    pthread_mutex_lock(&r->lock);
    int rc = 0;
    while (!r->closing && rc != ETIMEDOUT) {
        rc = swc__cond_wait_until(&r->wake, &r->lock, deadline);
    }
    pthread_mutex_unlock(&r->lock);
    if (rc == ETIMEDOUT) {
        kp_stop_accepting(r->producer);
    }
    return NULL;
}

/* One heartbeat (management thread, at start and every heartbeat period): properties and a
   ping at start, then a ping, with properties again after every PROPERTIES_EVERY_N_PINGS-th. */
static void management_tick(void *arg)
{
    kafka_reporter_t *r = arg;
    uint64_t tick = r->management_ticks++;
    if (tick == 0) {
        management_send(r, true);
    }
    management_send(r, false);
    if (tick != 0 && tick % PROPERTIES_EVERY_N_PINGS == 0) {
        management_send(r, true);
    }
}

/* The management thread may be blocked in kp_send (up to max.block.ms when the broker is
   down): this makes that send return at once. The producer stays valid until kp_close, which
   close() calls only after the thread has left. */
static void management_interrupt(void *arg)
{
    kafka_reporter_t *r = arg;
    kp_stop_accepting(r->producer);
}

static void reporter_free(kafka_reporter_t *r)
{
    free(r->properties);
    free(r->ping);
    sw__bytes_free(&r->meter_collection);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static void kafka_shutdown_begin(sw__reporter_t *self)
{
    kafka_reporter_t *r = (kafka_reporter_t *)self;
    r->watchdog_started = pthread_create(&r->watchdog, NULL, drain_watchdog, r) == 0;
    if (!r->watchdog_started) {
        kp_stop_accepting(r->producer); /* no watchdog: fail fast rather than stall */
    }
}

static void kafka_close(sw__reporter_t *self)
{
    kafka_reporter_t *r = (kafka_reporter_t *)self;
    pthread_mutex_lock(&r->lock);
    r->closing = true;
    pthread_cond_broadcast(&r->wake); /* the watchdog */
    pthread_mutex_unlock(&r->lock);
    sw__periodic_stop(r->management); /* management_interrupt, then joins */
    r->management = NULL;
    if (r->watchdog_started) {
        pthread_join(r->watchdog, NULL);
    }
    /* After a flush that timed out the brokers are not answering: fail what is left now.
       Either way every accepted record has had its callback when kp_close returns. */
    (void)kp_close(r->producer, r->flush_timed_out ? 0 : SW_KAFKA_FLUSH_TIMEOUT_MS);
    reporter_free(r);
}

/* Builds the producer for cfg. Returns 0 and *out or SW_ECONFIG / SW_ENOMEM with a message. */
static int producer_open(const sw_config_t *cfg, kp_producer_t **out, char *errbuf, size_t errlen)
{
    if (cfg->kafka_bootstrap_servers[0] == '\0') {
        swc__errbuf_printf(errbuf, errlen,
                           "SW_REPORTER=kafka needs SW_KAFKA_BOOTSTRAP_SERVERS (host:port,...)");
        return SW_ECONFIG;
    }
    kp_conf_t *conf = kp_conf_new();
    if (conf == NULL) {
        return SW_ENOMEM;
    }
    char msg[512];
    int rc = 0;
    if (kp_conf_set(conf, "bootstrap.servers", cfg->kafka_bootstrap_servers, msg, sizeof msg)) {
        swc__errbuf_printf(errbuf, errlen, "SW_KAFKA_BOOTSTRAP_SERVERS: %s", msg);
        rc = SW_ECONFIG;
    }
    if (rc == 0) {
        (void)kp_conf_set(conf, "client.id", "skywalking-c", NULL, 0);
    }
    if (rc == 0) {
        rc = sw__producer_config_apply(conf, cfg->kafka_producer_config, errbuf, errlen);
    }
    if (rc == 0) {
        rc = kp_producer_new(conf, out, msg, sizeof msg);
        if (rc != KP_OK) {
            swc__errbuf_printf(errbuf, errlen, "Kafka producer (SW_KAFKA_*): %s", msg);
            rc = rc == KP_ENOMEM ? SW_ENOMEM : SW_ECONFIG;
        }
    }
    kp_conf_destroy(conf);
    return rc;
}

/* "<ns>-<topic>" or "<topic>", topic being the override when set, else the default. */
static void topic_name(char *dst, size_t len, const char *ns, const char *override,
                       const char *fallback)
{
    const char *topic = override[0] != '\0' ? override : fallback;
    if (ns[0] != '\0') {
        snprintf(dst, len, "%s-%s", ns, topic);
    } else {
        snprintf(dst, len, "%s", topic);
    }
}

int sw__kafka_reporter_create(const sw_config_t *cfg, sw__report_counters_t *counters,
                              sw__reporter_t **out, char *errbuf, size_t errlen)
{
    kafka_reporter_t *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return SW_ENOMEM;
    }
    pthread_mutex_init(&r->lock, NULL);
    if (swc__cond_init_monotonic(&r->wake) != 0) {
        pthread_mutex_destroy(&r->lock);
        free(r);
        return SW_ENOMEM;
    }
    topic_name(r->topic_segment, sizeof r->topic_segment, cfg->kafka_namespace,
               cfg->kafka_topic_segment, SW_KAFKA_TOPIC_SEGMENT_DEFAULT);
    topic_name(r->topic_management, sizeof r->topic_management, cfg->kafka_namespace,
               cfg->kafka_topic_management, SW_KAFKA_TOPIC_MANAGEMENT_DEFAULT);
    topic_name(r->topic_meter, sizeof r->topic_meter, cfg->kafka_namespace, cfg->kafka_topic_meter,
               SW_KAFKA_TOPIC_METER_DEFAULT);
    topic_name(r->topic_logging, sizeof r->topic_logging, cfg->kafka_namespace,
               cfg->kafka_topic_logging, SW_KAFKA_TOPIC_LOGGING_DEFAULT);
    snprintf(r->key_register, sizeof r->key_register, "register-%s", cfg->instance_name);
    snprintf(r->key_ping, sizeof r->key_ping, "%s", cfg->instance_name);
    int rc = sw__instance_properties_pack(cfg, &r->properties, &r->properties_len);
    if (rc == 0) {
        rc = sw__instance_ping_pack(cfg, &r->ping, &r->ping_len);
    }
    if (rc == 0) {
        rc = producer_open(cfg, &r->producer, errbuf, errlen);
    }
    if (rc != 0) {
        reporter_free(r);
        return rc;
    }
    kp_stats_t st;
    kp_stats(r->producer, &st); /* nothing allocated yet: all of buffer.memory is free */
    r->buffer_total = st.pool_available;
    rc = sw__periodic_start("sw-kafka-mgmt", sw__heartbeat_ms(cfg), SW__PERIODIC_AT_START,
                            management_tick, management_interrupt, r, &r->management);
    if (rc != 0) {
        swc__errbuf_printf(errbuf, errlen, "cannot start the Kafka management thread");
        (void)kp_close(r->producer, 0);
        reporter_free(r);
        return rc;
    }
    r->base.name = "kafka";
    r->base.counters = counters;
    r->base.report = kafka_report;
    r->base.flush = kafka_flush;
    r->base.close = kafka_close;
    r->base.shutdown_begin = kafka_shutdown_begin;
    r->base.report_meters = kafka_report_meters;
    r->base.producer_meters = kafka_producer_meters;
    r->base.report_logs = kafka_report_logs;
    *out = &r->base;
    return 0;
}
