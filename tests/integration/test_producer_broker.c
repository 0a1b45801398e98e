/*
 * test_producer_broker.c - the producer against the real broker of the ctest fixture (label
 * kafka): a large keyed+unkeyed run read back with kcat (each record exactly once, per-key
 * order, keyed records on murmur2's partition), an unknown topic, a record over
 * max.request.size, buffer.memory exhaustion, and kp_close with records in flight.
 *
 * Record count: SW_TEST_PRODUCER_RECORDS, default 1000000 (20000 under a sanitizer). Values:
 * 99% of the records 100..399 B, every 100th one 100 B..10 KiB (mean about 300 B, so 1M
 * records are about 300 MB); every record has one header; even ids are keyed (500 keys).
 * In the RelWithDebInfo build 1M records take about 2 s to produce and 6 s to read back.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka_test_env.h"
#include "kproducer.h"
#include "producer_test_util.h"
#include "test_util.h"
#include "wire/murmur2.h"

static long record_count(void)
{
    const char *e = getenv("SW_TEST_PRODUCER_RECORDS");
    if (e && atol(e) > 0) {
        return atol(e);
    }
#if TEST_SANITIZED
    return 20000;
#else
    return 1000000;
#endif
}

/* One delivery report per record id: counts how often each id was reported. */
struct reports {
    long n;
    atomic_int *seen;  /* callbacks per id */
    atomic_int *err;   /* last error per id */
    atomic_int *part;  /* partition per id */
    atomic_llong *off; /* delivery offset per id */
    atomic_long total;
    atomic_long failed;
};

static struct reports *reports_new(long n)
{
    struct reports *r = calloc(1, sizeof(*r));
    r->n = n;
    r->seen = calloc((size_t)n, sizeof(atomic_int));
    r->err = calloc((size_t)n, sizeof(atomic_int));
    r->part = calloc((size_t)n, sizeof(atomic_int));
    r->off = calloc((size_t)n, sizeof(atomic_llong));
    return r;
}

static void reports_free(struct reports *r)
{
    free(r->seen);
    free(r->err);
    free(r->part);
    free(r->off);
    free(r);
}

struct ticket {
    struct reports *r;
    long id;
};

static struct ticket *tickets;

static void on_delivery(void *opaque, int error, int32_t partition, int64_t offset)
{
    struct ticket *t = opaque;
    atomic_store_explicit(&t->r->off[t->id], offset, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->r->seen[t->id], 1, memory_order_relaxed);
    atomic_store_explicit(&t->r->err[t->id], error, memory_order_relaxed);
    atomic_store_explicit(&t->r->part[t->id], partition, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->r->total, 1, memory_order_relaxed);
    if (error) {
        atomic_fetch_add_explicit(&t->r->failed, 1, memory_order_relaxed);
    }
}

/* Value of record id: "<tag>:<id>|" then filler up to its size (100 B .. 10 KiB). */
static size_t make_value(char *buf, const char *tag, long id)
{
    size_t size = (id % 100 == 0) ? 100 + (size_t)(id * 7919 % 10140) : 100 + (size_t)(id % 300);
    int n = snprintf(buf, 64, "%s:%ld|", tag, id);
    memset(buf + n, 'a' + (char)(id % 26), size - (size_t)n);
    return size;
}

#define TOPIC "sw-test-6p"
#define KEYS  500

Test(producer_broker, many_records_exactly_once_in_key_order, .timeout = 900)
{
    sw_test_kafka_t k;
    cr_assert_eq(sw_test_kafka_fixture(&k), 0);
    long n = record_count();
    struct reports *r = reports_new(n);
    tickets = calloc((size_t)n, sizeof(*tickets));
    kp_producer_t *p = producer_test_new(k.bootstrap, NULL);
    static char value[10300];
    double t0 = now_s();
    /* A unique run tag in the key keeps this run apart from earlier ones in the topic. */
    char tag[32];
    snprintf(tag, sizeof(tag), "r%ld", (long)getpid());
    for (long i = 0; i < n; i++) {
        tickets[i] = (struct ticket){r, i};
        size_t len = make_value(value, tag, i);
        char key[64];
        int kl = snprintf(key, sizeof(key), "%s-%ld", tag, i % KEYS);
        bool keyed = i % 2 == 0;
        kp_header_t h = {"rec", &i, sizeof(i)};
        int rc = kp_send(p, TOPIC, -1, keyed ? key : NULL, keyed ? (size_t)kl : 0, value, len, &h,
                         1, 0, on_delivery, &tickets[i]);
        cr_assert_eq(rc, 0, "kp_send %ld: %s", i, kp_strerror(rc));
    }
    cr_assert_eq(kp_flush(p, 300000), 0, "flush timed out");
    kp_stats_t st;
    kp_stats(p, &st);
    cr_assert_eq(st.records_acked, (uint64_t)n);
    cr_assert_eq(kp_close(p, 10000), 0);
    double t1 = now_s();
    for (long i = 0; i < n; i++) {
        cr_assert_eq(r->seen[i], 1, "record %ld reported %d times", i, r->seen[i]);
        cr_assert_eq(r->err[i], 0, "record %ld failed: %s", i, kp_strerror(r->err[i]));
    }
    /* Read back every partition: each id once, at the offset its callback reported, keyed
     * ids on murmur2's partition, per key in increasing order. */
    char *seen = calloc((size_t)n, 1);
    long found = 0;
    for (int part = 0; part < 6; part++) {
        size_t len = 0;
        char *out = sw_test_kafka_consume(k.bootstrap, TOPIC, part, -1, 0, "%o %k|%s\n", &len);
        cr_assert_not_null(out, "kcat failed on partition %d", part);
        long last[KEYS];
        for (int j = 0; j < KEYS; j++) {
            last[j] = -1;
        }
        /* Line by line with lengths: other tests' values may hold NUL bytes. */
        for (char *line = out, *nl; line < out + len; line = nl + 1) {
            nl = memchr(line, '\n', (size_t)(out + len - line));
            if (!nl) {
                break;
            }
            *nl = '\0';
            char *rest = NULL;
            long long off = strtoll(line, &rest, 10);
            if (rest == line || *rest != ' ') {
                continue;
            }
            line = rest + 1;
            char *bar = memchr(line, '|', (size_t)(nl - line));
            if (!bar || memchr(line, '\0', (size_t)(nl - line))) {
                continue;
            }
            bool keyed = bar != line;
            size_t tl = strlen(tag);
            if (strncmp(bar + 1, tag, tl) != 0 || bar[1 + tl] != ':') {
                continue; /* another test or an earlier run */
            }
            long id = strtol(bar + 2 + tl, NULL, 10);
            cr_assert(id >= 0 && id < n && keyed == (id % 2 == 0), "bad record %ld", id);
            cr_assert_eq(seen[id], 0, "record %ld read twice", id);
            seen[id] = 1;
            found++;
            cr_assert_eq(r->part[id], part, "record %ld reported on %d, found on %d", id,
                         r->part[id], part);
            cr_assert_eq(r->off[id], off, "record %ld reported at offset %lld, read at %lld", id,
                         (long long)r->off[id], off);
            if (keyed) {
                int kidx = (int)(id % KEYS);
                char key[64];
                int kl = snprintf(key, sizeof(key), "%s-%d", tag, kidx);
                cr_assert_eq(kp__murmur2_partition(key, (size_t)kl, 6), part,
                             "keyed record %ld not on the Java client's partition", id);
                cr_assert_gt(id, last[kidx], "key %d out of order: %ld after %ld", kidx, id,
                             last[kidx]);
                last[kidx] = id;
            }
        }
        free(out);
    }
    cr_assert_eq(found, n, "read back %ld of %ld records", found, n);
    /* Informational only (no timed assertion): how long the run took. */
    fprintf(stderr, "many_records: %ld records, produced in %.1f s, read back in %.1f s\n", n,
            t1 - t0, now_s() - t1);
    free(seen);
    free(tickets);
    reports_free(r);
}

Test(producer_broker, unknown_topic_fails_after_max_block)
{
    sw_test_kafka_t k;
    cr_assert_eq(sw_test_kafka_fixture(&k), 0);
    const char *kv[] = {"max.block.ms", "1500", NULL};
    kp_producer_t *p = producer_test_new(k.bootstrap, kv);
    int rc = kp_send(p, "sw-test-no-such-topic", -1, NULL, 0, "v", 1, NULL, 0, 0, NULL, NULL);
    cr_assert_eq(rc, KP_EUNKNOWN_TOPIC, "got %s", kp_err_name(rc));
    cr_assert_eq(kp_close(p, 1000), 0);
}

Test(producer_broker, record_over_max_request_size_fails_at_once)
{
    sw_test_kafka_t k;
    cr_assert_eq(sw_test_kafka_fixture(&k), 0);
    const char *kv[] = {"max.request.size", "2048", NULL};
    kp_producer_t *p = producer_test_new(k.bootstrap, kv);
    static char big[4096];
    int rc = kp_send(p, TOPIC, -1, NULL, 0, big, sizeof(big), NULL, 0, 0, NULL, NULL);
    cr_assert_eq(rc, KP_EMSG_SIZE_TOO_LARGE, "got %s", kp_err_name(rc));
    cr_assert_eq(kp_send(p, TOPIC, 7, NULL, 0, "x", 1, NULL, 0, 0, NULL, NULL),
                 KP_EUNKNOWN_PARTITION);
    cr_assert_eq(kp_close(p, 1000), 0);
}

static atomic_int plain_cb_count;
static atomic_int plain_cb_fail;

static void plain_cb(void *opaque, int error, int32_t partition, int64_t offset)
{
    (void)opaque;
    (void)partition;
    (void)offset;
    atomic_fetch_add(&plain_cb_count, 1);
    if (error) {
        atomic_fetch_add(&plain_cb_fail, 1);
    }
}

Test(producer_broker, buffer_memory_exhausted_blocks_then_times_out)
{
    sw_test_kafka_t k;
    cr_assert_eq(sw_test_kafka_fixture(&k), 0);
    /* 4 blocks of 16 KiB; lingering batches never leave, so the 5th partition must wait. */
    const char *kv[] = {
        "buffer.memory", "65536",        "linger.ms", "100000", "delivery.timeout.ms",
        "200000",        "max.block.ms", "800",       NULL};
    kp_producer_t *p = producer_test_new(k.bootstrap, kv);
    atomic_store(&plain_cb_count, 0);
    for (int part = 0; part < 4; part++) {
        cr_assert_eq(kp_send(p, TOPIC, part, NULL, 0, "v", 1, NULL, 0, 0, plain_cb, NULL), 0);
    }
    kp_stats_t st;
    kp_stats(p, &st);
    cr_assert_eq(st.pool_available, 0);
    int rc = kp_send(p, TOPIC, 4, NULL, 0, "v", 1, NULL, 0, 0, plain_cb, NULL);
    cr_assert_eq(rc, KP_EBUFFER_TIMEOUT, "got %s", kp_err_name(rc));
    cr_assert_eq(kp_flush(p, 30000), 0);
    cr_assert_eq(atomic_load(&plain_cb_count), 4);
    cr_assert_eq(kp_close(p, 1000), 0);
}

Test(producer_broker, close_with_records_in_flight_reports_each_once, .timeout = 300)
{
    sw_test_kafka_t k;
    cr_assert_eq(sw_test_kafka_fixture(&k), 0);
    long n = 50000;
    struct reports *r = reports_new(n);
    tickets = calloc((size_t)n, sizeof(*tickets));
    kp_producer_t *p = producer_test_new(k.bootstrap, NULL);
    static char value[512];
    memset(value, 'z', sizeof(value));
    long accepted = 0;
    for (long i = 0; i < n; i++) {
        tickets[i] = (struct ticket){r, i};
        if (kp_send(p, TOPIC, -1, NULL, 0, value, sizeof(value), NULL, 0, 0, on_delivery,
                    &tickets[i]) == 0) {
            accepted++;
        }
    }
    cr_assert_eq(accepted, n);
    int rc = kp_close(p, 0); /* fail whatever is not delivered by now */
    cr_assert(rc == 0 || rc == KP_ETIMED_OUT, "kp_close: %s", kp_err_name(rc));
    cr_assert_eq(atomic_load(&r->total), n, "%ld callbacks for %ld records", r->total, n);
    for (long i = 0; i < n; i++) {
        cr_assert_eq(r->seen[i], 1, "record %ld reported %d times", i, r->seen[i]);
        cr_assert(r->err[i] == 0 || r->err[i] == KP_ECLOSED, "record %ld: %s", i,
                  kp_err_name(r->err[i]));
    }
    free(tickets);
    reports_free(r);
}
