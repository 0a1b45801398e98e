/*
 * preload_rdkafka_consume.c - librdkafka's consumers: every consumed message becomes an entry
 * span (conventions in preload_rdkafka.h) that continues the trace of the record's sw8 header
 * (and sw8-correlation, sw8-x; traceparent and tracestate as SW_AGENT_PROPAGATION says). A record
 * without such headers, or with values that are not valid, starts a new trace (the agent's
 * parsers check every value; a header value that is too long or holds a NUL byte is ignored
 * whole).
 *
 * - rd_kafka_consumer_poll, rd_kafka_consume, rd_kafka_consume_queue: one span for the message
 *   returned (none for an event such as a partition EOF or an error), as SkyWalking's Java
 *   plugin does for a poll: it begins and ends when the call returns the message, so the
 *   program's work on the message is not inside it.
 * - rd_kafka_consume_batch, rd_kafka_consume_batch_queue: one such span per message returned.
 * - rd_kafka_consume_callback, rd_kafka_consume_callback_queue: the span of each message is
 *   open while the program's callback runs: what the callback does (a reply produced, a query)
 *   is part of the message's trace.
 * The group is the client's group.id; a message of a client the plugin did not see created
 * (a queue's message whose topic handle librdkafka made itself) has an empty group and no
 * mq.broker tag.
 */
#include <stdio.h>
#include <string.h>

#include "../src/core/propagate.h"
#include "../src/core/span_instrument.h"
#include "preload.h"
#include "preload_rdkafka.h"

/* The value of the last header `name` of hdrs as a string in buf, or NULL: no such header, or
   a value that does not fit or holds a NUL byte (from outside: never trusted). */
static const char *header_text(const sw__rdkafka_fns_t *f, const rd_kafka_headers_t *hdrs,
                               const char *name, char *buf, size_t size)
{
    const void *v = NULL;
    size_t n = 0;
    if (hdrs == NULL || f->header_get_last(hdrs, name, &v, &n) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        v == NULL || n >= size || memchr(v, '\0', n) != NULL) {
        return NULL;
    }
    memcpy(buf, v, n);
    buf[n] = '\0';
    return buf;
}

/* Begins the entry span of message m, consumed by client rk (NULL: the topic handle's). */
static void span_begin(const sw__rdkafka_fns_t *f, const rd_kafka_t *rk, rd_kafka_message_t *m)
{
    if (rk == NULL && m->rkt != NULL) {
        rk = sw__rdkafka_topic_client(m->rkt);
    }
    char servers[SW__RDKAFKA_SERVERS_MAX] = "", group[SW__RDKAFKA_GROUP_MAX] = "";
    if (rk != NULL) {
        (void)sw__rdkafka_client_get(rk, servers, group);
    }
    const char *topic = m->rkt != NULL ? f->topic_name(m->rkt) : NULL;
    char op[768];
    snprintf(op, sizeof op, "Kafka/%s/Consumer/%s", topic != NULL ? topic : "", group);
    rd_kafka_headers_t *hdrs = NULL;
    if (f->message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        hdrs = NULL; /* no headers, or headers librdkafka could not parse */
    }
    char sw8[SW_SW8_MAX], corr[SW_CORRELATION_HEADER_MAX], x[SW_SW8_X_MAX];
    char tp[SW_TRACEPARENT_MAX], ts[SW_TRACESTATE_MAX];
    const char *h_sw8 = NULL, *h_corr = NULL, *h_x = NULL, *h_tp = NULL, *h_ts = NULL;
    if (sw__propagation_sw8()) {
        h_sw8 = header_text(f, hdrs, "sw8", sw8, sizeof sw8);
        h_corr = header_text(f, hdrs, "sw8-correlation", corr, sizeof corr);
        h_x = header_text(f, hdrs, "sw8-x", x, sizeof x);
    }
    if (sw__propagation_w3c()) {
        h_tp = header_text(f, hdrs, "traceparent", tp, sizeof tp);
        h_ts = header_text(f, hdrs, "tracestate", ts, sizeof ts);
    }
    sw__span_mark_t mark;
    sw__span_begin_entry_marked(op, h_sw8, h_corr, h_x, h_tp, h_ts, &mark);
    sw__preload_pending_apply(&mark, false);
    sw__span_set_layer_component(SW_LAYER_MQ, SW__COMPONENT_KAFKA_CONSUMER);
    if (servers[0] != '\0') {
        sw__span_tag_static("mq.broker", servers);
    }
    if (topic != NULL) {
        sw__span_tag_static("mq.topic", topic);
    }
}

/* The span of one returned message: begun and ended at once (none for an event). */
static void consumed(const sw__rdkafka_fns_t *f, const rd_kafka_t *rk, rd_kafka_message_t *m)
{
    if (m == NULL || m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        return;
    }
    span_begin(f, rk, m);
    sw_span_end();
}

rd_kafka_message_t *rd_kafka_consumer_poll(rd_kafka_t *rk, int timeout_ms)
{
    rd_kafka_message_t *(*real)(rd_kafka_t *, int);
    SW__PRELOAD_REAL(real, "rd_kafka_consumer_poll");
    if (real == NULL) {
        return NULL;
    }
    sw__rdkafka_fns_t f;
    if (!sw__rdkafka_tracing(&f)) {
        return real(rk, timeout_ms);
    }
    sw__rdkafka_in_call = true;
    rd_kafka_message_t *m = real(rk, timeout_ms);
    sw__rdkafka_in_call = false;
    consumed(&f, rk, m);
    return m;
}

rd_kafka_message_t *rd_kafka_consume(rd_kafka_topic_t *rkt, int32_t partition, int timeout_ms)
{
    rd_kafka_message_t *(*real)(rd_kafka_topic_t *, int32_t, int);
    SW__PRELOAD_REAL(real, "rd_kafka_consume");
    if (real == NULL) {
        return NULL;
    }
    sw__rdkafka_fns_t f;
    if (!sw__rdkafka_tracing(&f)) {
        return real(rkt, partition, timeout_ms);
    }
    sw__rdkafka_in_call = true;
    rd_kafka_message_t *m = real(rkt, partition, timeout_ms);
    sw__rdkafka_in_call = false;
    consumed(&f, NULL, m);
    return m;
}

rd_kafka_message_t *rd_kafka_consume_queue(rd_kafka_queue_t *rkqu, int timeout_ms)
{
    rd_kafka_message_t *(*real)(rd_kafka_queue_t *, int);
    SW__PRELOAD_REAL(real, "rd_kafka_consume_queue");
    if (real == NULL) {
        return NULL;
    }
    sw__rdkafka_fns_t f;
    if (!sw__rdkafka_tracing(&f)) {
        return real(rkqu, timeout_ms);
    }
    sw__rdkafka_in_call = true;
    rd_kafka_message_t *m = real(rkqu, timeout_ms);
    sw__rdkafka_in_call = false;
    consumed(&f, NULL, m);
    return m;
}

ssize_t rd_kafka_consume_batch(rd_kafka_topic_t *rkt, int32_t partition, int timeout_ms,
                               rd_kafka_message_t **rkmessages, size_t rkmessages_size)
{
    ssize_t (*real)(rd_kafka_topic_t *, int32_t, int, rd_kafka_message_t **, size_t);
    SW__PRELOAD_REAL(real, "rd_kafka_consume_batch");
    if (real == NULL) {
        return -1;
    }
    sw__rdkafka_fns_t f;
    if (!sw__rdkafka_tracing(&f)) {
        return real(rkt, partition, timeout_ms, rkmessages, rkmessages_size);
    }
    sw__rdkafka_in_call = true;
    ssize_t n = real(rkt, partition, timeout_ms, rkmessages, rkmessages_size);
    sw__rdkafka_in_call = false;
    for (ssize_t i = 0; i < n; i++) {
        consumed(&f, NULL, rkmessages[i]);
    }
    return n;
}

ssize_t rd_kafka_consume_batch_queue(rd_kafka_queue_t *rkqu, int timeout_ms,
                                     rd_kafka_message_t **rkmessages, size_t rkmessages_size)
{
    ssize_t (*real)(rd_kafka_queue_t *, int, rd_kafka_message_t **, size_t);
    SW__PRELOAD_REAL(real, "rd_kafka_consume_batch_queue");
    if (real == NULL) {
        return -1;
    }
    sw__rdkafka_fns_t f;
    if (!sw__rdkafka_tracing(&f)) {
        return real(rkqu, timeout_ms, rkmessages, rkmessages_size);
    }
    sw__rdkafka_in_call = true;
    ssize_t n = real(rkqu, timeout_ms, rkmessages, rkmessages_size);
    sw__rdkafka_in_call = false;
    for (ssize_t i = 0; i < n; i++) {
        consumed(&f, NULL, rkmessages[i]);
    }
    return n;
}

/* The program's callback and its argument, for the wrapper below (on the caller's stack for
   the duration of the consume call). */
typedef struct callback_wrap {
    void (*cb)(rd_kafka_message_t *, void *);
    void *opaque;
    sw__rdkafka_fns_t f;
} callback_wrap_t;

/* Runs the program's callback for message m inside the message's entry span. Called by
   librdkafka on the thread of the consume call. */
static void callback_traced(rd_kafka_message_t *m, void *arg)
{
    callback_wrap_t *w = arg;
    bool span = m != NULL && m->err == RD_KAFKA_RESP_ERR_NO_ERROR;
    if (span) {
        span_begin(&w->f, NULL, m);
    }
    sw__rdkafka_in_call = false; /* the program's own calls in the callback are traced */
    w->cb(m, w->opaque);
    sw__rdkafka_in_call = true;
    if (span) {
        sw_span_end();
    }
}

int rd_kafka_consume_callback(rd_kafka_topic_t *rkt, int32_t partition, int timeout_ms,
                              void (*consume_cb)(rd_kafka_message_t *, void *), void *commit_opaque)
{
    int (*real)(rd_kafka_topic_t *, int32_t, int, void (*)(rd_kafka_message_t *, void *), void *);
    SW__PRELOAD_REAL(real, "rd_kafka_consume_callback");
    if (real == NULL) {
        return -1;
    }
    callback_wrap_t w = {consume_cb, commit_opaque, {0}};
    if (consume_cb == NULL || !sw__rdkafka_tracing(&w.f)) {
        return real(rkt, partition, timeout_ms, consume_cb, commit_opaque);
    }
    sw__rdkafka_in_call = true;
    int n = real(rkt, partition, timeout_ms, callback_traced, &w);
    sw__rdkafka_in_call = false;
    return n;
}

int rd_kafka_consume_callback_queue(rd_kafka_queue_t *rkqu, int timeout_ms,
                                    void (*consume_cb)(rd_kafka_message_t *, void *),
                                    void *commit_opaque)
{
    int (*real)(rd_kafka_queue_t *, int, void (*)(rd_kafka_message_t *, void *), void *);
    SW__PRELOAD_REAL(real, "rd_kafka_consume_callback_queue");
    if (real == NULL) {
        return -1;
    }
    callback_wrap_t w = {consume_cb, commit_opaque, {0}};
    if (consume_cb == NULL || !sw__rdkafka_tracing(&w.f)) {
        return real(rkqu, timeout_ms, consume_cb, commit_opaque);
    }
    sw__rdkafka_in_call = true;
    int n = real(rkqu, timeout_ms, callback_traced, &w);
    sw__rdkafka_in_call = false;
    return n;
}
