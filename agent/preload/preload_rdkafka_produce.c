/*
 * preload_rdkafka_produce.c - librdkafka's producer: every produced message becomes an exit span
 * (conventions in preload_rdkafka.h) that ends when the produce call returns, with the error flag
 * and a log when the call fails; the record carries sw8, sw8-correlation and sw8-x (and/or
 * traceparent, tracestate, as SW_AGENT_PROPAGATION says) in its headers, after the caller's own.
 *
 * How the headers get in, per call:
 * - rd_kafka_produceva: the caller's array is copied with one RD_KAFKA_VTYPE_HEADERS entry that
 *   carries the caller's headers and ours. Our headers object is owned by librdkafka once the
 *   call succeeds (and then the caller's RD_KAFKA_VTYPE_HEADERS object, whose ownership the
 *   caller gave away, is destroyed here); on failure librdkafka gives it back (librdkafka 2.0.2
 *   detaches an application's headers object from a message it fails to partition) and it is
 *   destroyed here: the caller's object is never changed. The caller's RD_KAFKA_VTYPE_HEADER
 *   entries are folded into the same object, in order (librdkafka copies them too), which also
 *   keeps them off rd_kafka_produceva's single-header path, whose partitioner-failure branch
 *   frees the headers twice (librdkafka issue #4627; rd_kafka_producev does not have it).
 * - rd_kafka_producev: varargs cannot be forwarded, so the list is read into an rd_kafka_vu_t
 *   array (RD_KAFKA_VTYPE_* of librdkafka 2.0.2; an unknown type fails the call with
 *   RD_KAFKA_RESP_ERR__INVALID_ARG, as librdkafka does) and goes the way of rd_kafka_produceva,
 *   traced or not (single headers folded into one object even untraced, so that a producev
 *   never meets rd_kafka_produceva's double free). It therefore needs a librdkafka with
 *   rd_kafka_produceva (1.4 or later).
 * - rd_kafka_produce: converted to rd_kafka_produceva (topic handle, partition, msgflags with
 *   their F_COPY / F_FREE ownership, payload, key, opaque: the same semantics) with our headers.
 *   When that fails, the caller's call is made as it was, through the real rd_kafka_produce, so
 *   that its return value, errno and rd_kafka_last_error are librdkafka's own.
 * - rd_kafka_produce_batch: one exit span for the call, without headers (the batch API has no
 *   headers); an error when a message was not enqueued.
 * A traced produce that fails with RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE is made again without our
 * headers: they must never be why a message is refused.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/core/propagate.h"
#include "../src/core/span_instrument.h"
#include "preload.h"
#include "preload_rdkafka.h"

typedef rd_kafka_error_t *(*produceva_fn)(rd_kafka_t *, const rd_kafka_vu_t *, size_t);

/* Entries of a producev list read into a stack array before the heap is used. */
#define VU_STACK 24

/* The trace headers of the active exit span. */
typedef struct trace_headers {
    char sw8[SW_SW8_MAX];
    char correlation[SW_CORRELATION_HEADER_MAX];
    char x[SW_SW8_X_MAX];
    char traceparent[SW_TRACEPARENT_MAX];
    char tracestate[SW_TRACESTATE_MAX];
} trace_headers_t;

/* Fills h as SW_AGENT_PROPAGATION says; false when there is nothing to send. */
static bool trace_headers_make(trace_headers_t *h)
{
    h->sw8[0] = h->correlation[0] = h->x[0] = h->traceparent[0] = h->tracestate[0] = '\0';
    if (sw__propagation_sw8()) {
        (void)sw_inject(h->sw8, sizeof h->sw8, h->correlation, sizeof h->correlation, h->x,
                        sizeof h->x);
    }
    if (sw__propagation_w3c()) {
        (void)sw_inject_w3c(h->traceparent, sizeof h->traceparent, h->tracestate,
                            sizeof h->tracestate);
    }
    return h->sw8[0] != '\0' || h->traceparent[0] != '\0';
}

/* Adds the non-empty headers of t to hdrs; false when librdkafka refused one. */
static bool trace_headers_add(const sw__rdkafka_fns_t *f, rd_kafka_headers_t *hdrs,
                              const trace_headers_t *t)
{
    const char *const names[5] = {"sw8", "sw8-correlation", "sw8-x", "traceparent", "tracestate"};
    const char *const values[5] = {t->sw8, t->correlation, t->x, t->traceparent, t->tracestate};
    for (int i = 0; i < 5; i++) {
        if (values[i][0] != '\0' &&
            f->header_add(hdrs, names[i], -1, values[i], (ssize_t)strlen(values[i])) !=
                RD_KAFKA_RESP_ERR_NO_ERROR) {
            return false;
        }
    }
    return true;
}

/* Begins the exit span of a message to `topic` produced by client rk (may be NULL). */
static void span_begin(const rd_kafka_t *rk, const char *topic)
{
    char servers[SW__RDKAFKA_SERVERS_MAX] = "";
    if (rk != NULL) {
        (void)sw__rdkafka_client_get(rk, servers, NULL);
    }
    char op[512];
    snprintf(op, sizeof op, "Kafka/%s/Producer", topic != NULL ? topic : "");
    sw__span_mark_t mark;
    sw__span_begin_exit_marked(op, servers[0] != '\0' ? servers : NULL, &mark);
    sw__preload_pending_apply(&mark, true);
    sw__span_set_layer_component(SW_LAYER_MQ, SW__COMPONENT_KAFKA_PRODUCER);
    if (servers[0] != '\0') {
        sw__span_tag_static("mq.broker", servers);
    }
    if (topic != NULL) {
        sw__span_tag_static("mq.topic", topic);
    }
}

/* What a produce argument array names and carries. */
typedef struct scan {
    const char *topic;           /* RD_KAFKA_VTYPE_TOPIC, or the name of RD_KAFKA_VTYPE_RKT */
    rd_kafka_headers_t *headers; /* the caller's RD_KAFKA_VTYPE_HEADERS object, or NULL */
    size_t header_n;             /* the caller's RD_KAFKA_VTYPE_HEADER entries */
    bool as_is;                  /* a type this file does not know, or HEADER with HEADERS:
                                    the array goes to librdkafka unchanged */
} scan_t;

static scan_t scan_array(const sw__rdkafka_fns_t *f, const rd_kafka_vu_t *vus, size_t cnt)
{
    scan_t s = {NULL, NULL, 0, false};
    for (size_t i = 0; i < cnt; i++) {
        switch (vus[i].vtype) {
        case RD_KAFKA_VTYPE_TOPIC:
            s.topic = vus[i].u.cstr;
            break;
        case RD_KAFKA_VTYPE_RKT:
            s.topic = vus[i].u.rkt != NULL ? f->topic_name(vus[i].u.rkt) : NULL;
            break;
        case RD_KAFKA_VTYPE_HEADER:
            s.header_n++;
            break;
        case RD_KAFKA_VTYPE_HEADERS:
            s.as_is = s.as_is || s.headers != NULL; /* two objects: librdkafka decides */
            s.headers = vus[i].u.headers;
            break;
        case RD_KAFKA_VTYPE_PARTITION:
        case RD_KAFKA_VTYPE_VALUE:
        case RD_KAFKA_VTYPE_KEY:
        case RD_KAFKA_VTYPE_OPAQUE:
        case RD_KAFKA_VTYPE_MSGFLAGS:
        case RD_KAFKA_VTYPE_TIMESTAMP:
            break;
        default:
            s.as_is = true;
            break;
        }
    }
    if (s.headers != NULL && s.header_n > 0) {
        s.as_is = true; /* librdkafka fails such a call with RD_KAFKA_RESP_ERR__CONFLICT */
    }
    return s;
}

/* The headers object to send: the caller's headers (a copy of its object, or its single
   entries), then ours when `trace`. NULL when there is nothing to send that way (no trace
   headers and no single entries to fold, or librdkafka refused one): the array then goes to
   librdkafka as it is. */
static rd_kafka_headers_t *headers_build(const sw__rdkafka_fns_t *f, const rd_kafka_vu_t *vus,
                                         size_t cnt, const scan_t *s, bool trace)
{
    trace_headers_t t;
    trace = trace && !s->as_is && trace_headers_make(&t);
    if (s->as_is || (!trace && s->header_n == 0)) {
        return NULL;
    }
    rd_kafka_headers_t *h =
        s->headers != NULL ? f->headers_copy(s->headers) : f->headers_new(s->header_n + 5);
    if (h == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < cnt; i++) {
        if (vus[i].vtype == RD_KAFKA_VTYPE_HEADER &&
            f->header_add(h, vus[i].u.header.name, -1, vus[i].u.header.val, vus[i].u.header.size) !=
                RD_KAFKA_RESP_ERR_NO_ERROR) {
            f->headers_destroy(h);
            return NULL;
        }
    }
    if (trace && !trace_headers_add(f, h, &t)) {
        f->headers_destroy(h);
        return NULL;
    }
    return h;
}

/* Calls produceva with the caller's array, its headers replaced by the one entry `hdrs`. */
static rd_kafka_error_t *produce_with(produceva_fn real, rd_kafka_t *rk, const rd_kafka_vu_t *vus,
                                      size_t cnt, rd_kafka_headers_t *hdrs, bool *no_memory)
{
    rd_kafka_vu_t stack[VU_STACK];
    rd_kafka_vu_t *v = cnt + 1 <= VU_STACK ? stack : malloc((cnt + 1) * sizeof *v);
    *no_memory = v == NULL;
    if (v == NULL) {
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < cnt; i++) {
        if (vus[i].vtype != RD_KAFKA_VTYPE_HEADER && vus[i].vtype != RD_KAFKA_VTYPE_HEADERS) {
            v[n++] = vus[i];
        }
    }
    memset(&v[n], 0, sizeof v[n]);
    v[n].vtype = RD_KAFKA_VTYPE_HEADERS;
    v[n].u.headers = hdrs;
    n++;
    rd_kafka_error_t *err = real(rk, v, n);
    if (v != stack) {
        free(v);
    }
    return err;
}

/*
 * Calls produceva with the caller's array, its headers in one object with ours (when `trace`;
 * see the top of this file for who owns what). A traced call refused for its size is made
 * again as the caller made it. Returns what librdkafka returned.
 */
static rd_kafka_error_t *produce_call(const sw__rdkafka_fns_t *f, produceva_fn real, rd_kafka_t *rk,
                                      const rd_kafka_vu_t *vus, size_t cnt, const scan_t *s,
                                      bool trace)
{
    rd_kafka_headers_t *ours = headers_build(f, vus, cnt, s, trace);
    rd_kafka_error_t *err = NULL;
    bool again = true;
    if (ours != NULL) {
        bool no_memory;
        err = produce_with(real, rk, vus, cnt, ours, &no_memory);
        if (no_memory) {
            f->headers_destroy(ours);
        } else if (err == NULL) {
            again = false;
            if (s->headers != NULL) {
                f->headers_destroy(s->headers); /* the caller gave it away: ours went instead */
            }
        } else {
            f->headers_destroy(ours); /* librdkafka gives the headers back on failure */
            again = trace && f->error_code(err) == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE;
            if (again) {
                f->error_destroy(err);
                err = NULL;
            }
        }
    }
    if (again) {
        err = real(rk, vus, cnt);
    }
    return err;
}

/* A traced produceva: the span around produce_call. */
static rd_kafka_error_t *produce_traced(const sw__rdkafka_fns_t *f, produceva_fn real,
                                        rd_kafka_t *rk, const rd_kafka_vu_t *vus, size_t cnt)
{
    scan_t s = scan_array(f, vus, cnt);
    span_begin(rk, s.topic);
    sw__rdkafka_in_call = true;
    rd_kafka_error_t *err = produce_call(f, real, rk, vus, cnt, &s, true);
    sw__rdkafka_in_call = false;
    if (err != NULL) {
        sw__rdkafka_span_error(f, f->error_code(err));
    }
    sw_span_end();
    return err;
}

rd_kafka_error_t *rd_kafka_produceva(rd_kafka_t *rk, const rd_kafka_vu_t *vus, size_t cnt)
{
    produceva_fn real;
    SW__PRELOAD_REAL(real, "rd_kafka_produceva");
    if (real == NULL) {
        return NULL; /* unreachable: a program calling it links a librdkafka that has it */
    }
    sw__rdkafka_fns_t f;
    if (!sw__rdkafka_tracing(&f)) {
        return real(rk, vus, cnt);
    }
    return produce_traced(&f, real, rk, vus, cnt);
}

/* Reads one RD_KAFKA_VTYPE_* argument tuple of type `t` from ap into *vu; false for a type
   this file does not know (the rest of the list cannot be read). */
static bool va_read_one(rd_kafka_vtype_t t, va_list *ap, rd_kafka_vu_t *vu)
{
    memset(vu, 0, sizeof *vu);
    vu->vtype = t;
    switch (t) {
    case RD_KAFKA_VTYPE_TOPIC:
        vu->u.cstr = va_arg(*ap, const char *);
        return true;
    case RD_KAFKA_VTYPE_RKT:
        vu->u.rkt = va_arg(*ap, rd_kafka_topic_t *);
        return true;
    case RD_KAFKA_VTYPE_PARTITION:
        vu->u.i32 = va_arg(*ap, int32_t);
        return true;
    case RD_KAFKA_VTYPE_VALUE:
    case RD_KAFKA_VTYPE_KEY:
        vu->u.mem.ptr = va_arg(*ap, void *);
        vu->u.mem.size = va_arg(*ap, size_t);
        return true;
    case RD_KAFKA_VTYPE_OPAQUE:
        vu->u.ptr = va_arg(*ap, void *);
        return true;
    case RD_KAFKA_VTYPE_MSGFLAGS:
        vu->u.i = va_arg(*ap, int);
        return true;
    case RD_KAFKA_VTYPE_TIMESTAMP:
        vu->u.i64 = va_arg(*ap, int64_t);
        return true;
    case RD_KAFKA_VTYPE_HEADER:
        vu->u.header.name = va_arg(*ap, const char *);
        vu->u.header.val = va_arg(*ap, const void *);
        vu->u.header.size = va_arg(*ap, ssize_t);
        return true;
    case RD_KAFKA_VTYPE_HEADERS:
        vu->u.headers = va_arg(*ap, rd_kafka_headers_t *);
        return true;
    default:
        return false;
    }
}

rd_kafka_resp_err_t rd_kafka_producev(rd_kafka_t *rk, ...)
{
    produceva_fn real;
    SW__PRELOAD_REAL(real, "rd_kafka_produceva");
    sw__rdkafka_fns_t f;
    if (real == NULL || !sw__rdkafka_fns_resolve(&f)) {
        return RD_KAFKA_RESP_ERR__NOT_IMPLEMENTED;
    }
    rd_kafka_vu_t stack[VU_STACK];
    rd_kafka_vu_t *vus = stack;
    size_t cap = VU_STACK, n = 0;
    rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR_NO_ERROR;
    va_list ap;
    va_start(ap, rk);
    for (rd_kafka_vtype_t t; (t = va_arg(ap, rd_kafka_vtype_t)) != RD_KAFKA_VTYPE_END;) {
        if (n == cap) {
            rd_kafka_vu_t *more = malloc(cap * 2 * sizeof *more);
            if (more == NULL) {
                code = RD_KAFKA_RESP_ERR__FAIL; /* out of memory */
                break;
            }
            memcpy(more, vus, n * sizeof *vus);
            if (vus != stack) {
                free(vus);
            }
            vus = more;
            cap *= 2;
        }
        if (!va_read_one(t, &ap, &vus[n++])) {
            code = RD_KAFKA_RESP_ERR__INVALID_ARG; /* librdkafka: "Unsupported VTYPE" */
            break;
        }
    }
    va_end(ap);
    if (code == RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_error_t *err;
        if (sw__rdkafka_tracing(&f)) {
            err = produce_traced(&f, real, rk, vus, n);
        } else {
            /* Single headers are folded all the same: rd_kafka_producev does not share
               rd_kafka_produceva's double free of them (see the top of this file). */
            scan_t s = scan_array(&f, vus, n);
            err = produce_call(&f, real, rk, vus, n, &s, false);
        }
        if (err != NULL) {
            code = f.error_code(err);
            f.error_destroy(err);
        }
    }
    if (vus != stack) {
        free(vus);
    }
    return code;
}

int rd_kafka_produce(rd_kafka_topic_t *rkt, int32_t partition, int msgflags, void *payload,
                     size_t len, const void *key, size_t keylen, void *msg_opaque)
{
    int (*real)(rd_kafka_topic_t *, int32_t, int, void *, size_t, const void *, size_t, void *);
    produceva_fn real_va;
    rd_kafka_resp_err_t (*last_error)(void);
    SW__PRELOAD_REAL(real, "rd_kafka_produce");
    SW__PRELOAD_REAL(real_va, "rd_kafka_produceva");
    SW__PRELOAD_REAL(last_error, "rd_kafka_last_error");
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    sw__rdkafka_fns_t f;
    if (real_va == NULL || last_error == NULL || !sw__rdkafka_tracing(&f)) {
        return real(rkt, partition, msgflags, payload, len, key, keylen, msg_opaque);
    }
    rd_kafka_t *rk = sw__rdkafka_topic_client(rkt);
    span_begin(rk, f.topic_name(rkt));
    scan_t none = {NULL, NULL, 0, rk == NULL}; /* without the client: no produceva */
    rd_kafka_headers_t *ours = headers_build(&f, NULL, 0, &none, true);
    int rc = -1;
    sw__rdkafka_in_call = true;
    if (ours != NULL) {
        rd_kafka_vu_t v[7];
        memset(v, 0, sizeof v);
        v[0].vtype = RD_KAFKA_VTYPE_RKT, v[0].u.rkt = rkt;
        v[1].vtype = RD_KAFKA_VTYPE_PARTITION, v[1].u.i32 = partition;
        v[2].vtype = RD_KAFKA_VTYPE_MSGFLAGS, v[2].u.i = msgflags;
        v[3].vtype = RD_KAFKA_VTYPE_VALUE, v[3].u.mem.ptr = payload, v[3].u.mem.size = len;
        v[4].vtype = RD_KAFKA_VTYPE_KEY, v[4].u.mem.ptr = (void *)key, v[4].u.mem.size = keylen;
        v[5].vtype = RD_KAFKA_VTYPE_OPAQUE, v[5].u.ptr = msg_opaque;
        v[6].vtype = RD_KAFKA_VTYPE_HEADERS, v[6].u.headers = ours;
        rd_kafka_error_t *err = rk != NULL ? real_va(rk, v, 7) : NULL;
        if (err == NULL) {
            rc = 0;
        } else {
            f.error_destroy(err);
            f.headers_destroy(ours); /* given back on failure; the caller's call follows */
        }
    }
    if (rc != 0) {
        rc = real(rkt, partition, msgflags, payload, len, key, keylen, msg_opaque);
    }
    sw__rdkafka_in_call = false;
    if (rc != 0) {
        int saved = errno;
        sw__rdkafka_span_error(&f, last_error());
        errno = saved;
    }
    sw_span_end();
    return rc;
}

int rd_kafka_produce_batch(rd_kafka_topic_t *rkt, int32_t partition, int msgflags,
                           rd_kafka_message_t *rkmessages, int message_cnt)
{
    int (*real)(rd_kafka_topic_t *, int32_t, int, rd_kafka_message_t *, int);
    SW__PRELOAD_REAL(real, "rd_kafka_produce_batch");
    if (real == NULL) {
        return 0;
    }
    sw__rdkafka_fns_t f;
    if (!sw__rdkafka_tracing(&f)) {
        return real(rkt, partition, msgflags, rkmessages, message_cnt);
    }
    span_begin(sw__rdkafka_topic_client(rkt), f.topic_name(rkt));
    sw__rdkafka_in_call = true;
    int n = real(rkt, partition, msgflags, rkmessages, message_cnt);
    sw__rdkafka_in_call = false;
    for (int i = 0; n < message_cnt && i < message_cnt; i++) {
        if (rkmessages[i].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            sw__rdkafka_span_error(&f, rkmessages[i].err); /* the first failed message's */
            break;
        }
    }
    sw_span_end();
    return n;
}
