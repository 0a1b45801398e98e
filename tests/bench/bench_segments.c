/*
 * bench_segments.c - varied SegmentObjects for the benchmarks (see bench_segments.h).
 */
#include "bench_segments.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracing.pb-c.h"

#define MAX_SPANS 12
#define MAX_TAGS  4

static uint32_t next_rand(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

static const char *pick(uint32_t *s, const char *const *v, size_t n)
{
    return v[next_rand(s) % n];
}

#define PICK(s, v) pick(s, v, sizeof(v) / sizeof(v[0]))

static const char *const services[] = {"order-service", "payment", "inventory-api",  "gateway",
                                       "user-profile",  "search",  "billing-worker", "auth"};
static const char *const entry_ops[] = {
    "GET:/api/orders/{id}",        "POST:/api/checkout",    "GET:/health",
    "PUT:/api/users/{id}/address", "GET:/search",           "POST:/v1/payments/authorize",
    "DELETE:/api/cart/{item}",     "GET:/api/inventory/sku"};
static const char *const exit_ops[] = {"Mysql/JDBC/PreparedStatement/executeQuery",
                                       "Redis/GET",
                                       "Redis/SETEX",
                                       "HTTP/POST:/internal/ledger",
                                       "Kafka/orders-events/Producer",
                                       "PostgreSQL/query",
                                       "gRPC/inventory.Stock/Reserve"};
static const char *const local_ops[] = {"validateCart",  "computeTax",     "serializeResponse",
                                        "loadUserPrefs", "renderTemplate", "applyDiscounts"};
static const char *const peers[] = {"10.0.3.17:3306", "redis-master:6379", "ledger.internal:8080",
                                    "kafka-1:9092",   "pg-replica-2:5432", "10.0.9.4:50051"};
static const char *const statements[] = {
    "SELECT id, status, total FROM orders WHERE customer_id = ? AND created_at > ?",
    "UPDATE stock SET reserved = reserved + ? WHERE sku = ?",
    "INSERT INTO payments (order_id, amount, currency, state) VALUES (?, ?, ?, ?)",
    "SELECT * FROM users WHERE id = ?"};
static const char *const urls[] = {"http://shop.example.com/api/orders/81723",
                                   "http://shop.example.com/api/checkout",
                                   "http://10.0.1.5:8080/search?q=red+shoes&page=2",
                                   "http://ledger.internal:8080/internal/ledger"};
static const char *const messages[] = {"retrying after connection reset by peer",
                                       "cache miss, loading from database",
                                       "java.net.SocketTimeoutException: Read timed out"};

/* A SkyWalking-style id: 32 hex digits, thread number, ms*10000+seq (the LARGE class). */
static void make_id(uint32_t *s, char *out, size_t cap, int64_t ms)
{
    unsigned a = next_rand(s), b = next_rand(s), c = next_rand(s), d = next_rand(s);
    snprintf(out, cap, "%08x%08x%08x%08x.%u.%lld", a, b, c, d, 1 + next_rand(s) % 200,
             (long long)(ms * 10000 + next_rand(s) % 10000));
}

struct seg_store {
    Skywalking__V3__SegmentObject seg;
    Skywalking__V3__SpanObject spans[MAX_SPANS];
    Skywalking__V3__SpanObject *span_ptrs[MAX_SPANS];
    Skywalking__V3__KeyStringValuePair tags[MAX_SPANS][MAX_TAGS];
    Skywalking__V3__KeyStringValuePair *tag_ptrs[MAX_SPANS][MAX_TAGS];
    Skywalking__V3__SegmentReference ref;
    Skywalking__V3__SegmentReference *ref_ptr;
    Skywalking__V3__Log log;
    Skywalking__V3__Log *log_ptr;
    Skywalking__V3__KeyStringValuePair log_kv[2];
    Skywalking__V3__KeyStringValuePair *log_kv_ptrs[2];
    char trace_id[64], seg_id[64], parent_seg[64], instance[48], status[8];
};

static void add_tag(struct seg_store *st, int span, const char *k, const char *v)
{
    Skywalking__V3__SpanObject *sp = &st->spans[span];
    if (sp->n_tags >= MAX_TAGS) {
        return;
    }
    Skywalking__V3__KeyStringValuePair *kv = &st->tags[span][sp->n_tags];
    skywalking__v3__key_string_value_pair__init(kv);
    kv->key = (char *)k;
    kv->value = (char *)v;
    st->tag_ptrs[span][sp->n_tags++] = kv;
}

/* Span i of a LARGE segment: 0 is the entry, then exits and locals under it. */
static void fill_large_span(struct seg_store *st, uint32_t *s, int i, int64_t t0)
{
    Skywalking__V3__SpanObject *sp = &st->spans[i];
    sp->parentspanid = i == 0 ? -1 : (int32_t)(next_rand(s) % (uint32_t)i);
    sp->starttime = t0 + i * 2;
    sp->endtime = t0 + i * 2 + 1 + next_rand(s) % 40;
    if (i == 0) {
        sp->spantype = SKYWALKING__V3__SPAN_TYPE__Entry;
        sp->spanlayer = SKYWALKING__V3__SPAN_LAYER__Http;
        sp->operationname = (char *)PICK(s, entry_ops);
        sp->componentid = 1;
        add_tag(st, i, "http.method", "GET");
        add_tag(st, i, "url", PICK(s, urls));
        add_tag(st, i, "http.status_code", st->status);
    } else if (next_rand(s) % 3 != 0) {
        sp->spantype = SKYWALKING__V3__SPAN_TYPE__Exit;
        sp->spanlayer = SKYWALKING__V3__SPAN_LAYER__Database;
        sp->operationname = (char *)PICK(s, exit_ops);
        sp->peer = (char *)PICK(s, peers);
        sp->componentid = 5 + (int32_t)(next_rand(s) % 30);
        if (next_rand(s) % 2) {
            add_tag(st, i, "db.type", "sql");
            add_tag(st, i, "db.statement", PICK(s, statements));
        }
    } else {
        sp->spantype = SKYWALKING__V3__SPAN_TYPE__Local;
        sp->operationname = (char *)PICK(s, local_ops);
    }
    if (next_rand(s) % 16 == 0) {
        sp->iserror = 1;
    }
}

static void add_ref_and_log(struct seg_store *st, uint32_t *s, int64_t t0)
{
    skywalking__v3__segment_reference__init(&st->ref);
    make_id(s, st->parent_seg, sizeof(st->parent_seg), t0 - 3);
    st->ref.traceid = st->trace_id;
    st->ref.parenttracesegmentid = st->parent_seg;
    st->ref.parentspanid = (int32_t)(next_rand(s) % 5);
    st->ref.parentservice = (char *)PICK(s, services);
    st->ref.parentserviceinstance = "c0a80a05@node-3";
    st->ref.parentendpoint = (char *)PICK(s, entry_ops);
    st->ref.networkaddressusedatpeer = (char *)PICK(s, peers);
    st->ref_ptr = &st->ref;
    st->spans[0].n_refs = 1;
    st->spans[0].refs = &st->ref_ptr;
    int last = (int)st->seg.n_spans - 1;
    skywalking__v3__log__init(&st->log);
    st->log.time = t0 + 1;
    for (int k = 0; k < 2; k++) {
        skywalking__v3__key_string_value_pair__init(&st->log_kv[k]);
        st->log_kv_ptrs[k] = &st->log_kv[k];
    }
    st->log_kv[0].key = "event";
    st->log_kv[0].value = "error";
    st->log_kv[1].key = "message";
    st->log_kv[1].value = (char *)PICK(s, messages);
    st->log.n_data = 2;
    st->log.data = st->log_kv_ptrs;
    st->log_ptr = &st->log;
    st->spans[last].n_logs = 1;
    st->spans[last].logs = &st->log_ptr;
}

static void build(struct seg_store *st, bench_segment_class_t cls, uint32_t *s)
{
    memset(st, 0, sizeof(*st));
    int64_t t0 = 1764600000000LL + (int64_t)(next_rand(s) % 86400000u);
    skywalking__v3__segment_object__init(&st->seg);
    if (cls == BENCH_SEGMENT_SMALL) {
        /* Short ids (8 hex digits, thread, sequence) keep the class near 100 B. */
        snprintf(st->trace_id, sizeof(st->trace_id), "%08x.%u.%u", next_rand(s), next_rand(s) % 64,
                 next_rand(s) % 100000);
        snprintf(st->seg_id, sizeof(st->seg_id), "%08x.%u.%u", next_rand(s), next_rand(s) % 64,
                 next_rand(s) % 100000);
    } else {
        make_id(s, st->trace_id, sizeof(st->trace_id), t0);
        make_id(s, st->seg_id, sizeof(st->seg_id), t0);
    }
    snprintf(st->instance, sizeof(st->instance), "%04x@h%u", next_rand(s) & 0xffff,
             next_rand(s) % 64);
    snprintf(st->status, sizeof(st->status), "%u", next_rand(s) % 8 == 0 ? 500u : 200u);
    st->seg.traceid = st->trace_id;
    st->seg.tracesegmentid = st->seg_id;
    st->seg.service = (char *)PICK(s, services);
    st->seg.serviceinstance = st->instance;
    int n = cls == BENCH_SEGMENT_SMALL ? 1 : 3 + (int)(next_rand(s) % 10);
    for (int i = 0; i < n; i++) {
        Skywalking__V3__SpanObject *sp = &st->spans[i];
        skywalking__v3__span_object__init(sp);
        sp->spanid = i;
        sp->tags = st->tag_ptrs[i];
        st->span_ptrs[i] = sp;
        if (cls == BENCH_SEGMENT_LARGE) {
            fill_large_span(st, s, i, t0);
            continue;
        }
        sp->parentspanid = -1;
        sp->starttime = t0;
        sp->endtime = t0 + next_rand(s) % 20;
        sp->spantype = SKYWALKING__V3__SPAN_TYPE__Local;
        sp->operationname = (char *)PICK(s, local_ops);
        if (next_rand(s) % 2) {
            add_tag(st, i, "status", st->status);
        }
    }
    st->seg.n_spans = (size_t)n;
    st->seg.spans = st->span_ptrs;
    if (cls == BENCH_SEGMENT_LARGE && next_rand(s) % 2) {
        add_ref_and_log(st, s, t0);
    }
}

int bench_payloads_make(bench_payloads_t *out, bench_segment_class_t cls, size_t n, uint32_t seed)
{
    memset(out, 0, sizeof(*out));
    out->v = calloc(n, sizeof(*out->v));
    struct seg_store *st = malloc(sizeof(*st));
    if (!out->v || !st) {
        free(st);
        free(out->v);
        out->v = NULL;
        return -1;
    }
    uint32_t s = seed ? seed : 0x2545f491u;
    for (size_t i = 0; i < n; i++) {
        build(st, cls, &s);
        bench_payload_t *p = &out->v[i];
        p->key_len = strlen(st->seg_id);
        memcpy(p->key, st->seg_id, p->key_len);
        p->value_len = skywalking__v3__segment_object__get_packed_size(&st->seg);
        p->value = malloc(p->value_len);
        if (!p->value) {
            out->n = i;
            free(st);
            bench_payloads_free(out);
            return -1;
        }
        skywalking__v3__segment_object__pack(&st->seg, p->value);
        out->value_bytes += p->value_len;
        out->n = i + 1;
    }
    free(st);
    return 0;
}

void bench_payloads_free(bench_payloads_t *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].value);
    }
    free(p->v);
    memset(p, 0, sizeof(*p));
}
