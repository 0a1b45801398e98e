/*
 * test_producer_restart.c - the producer across broker outages, on a private one-node
 * cluster (label kafka): the broker down when the producer starts (records wait, then are
 * delivered when it comes up), and the broker killed (SIGKILL) mid-stream and restarted:
 * with default settings (idempotence, acks=all) every record is reported successful exactly
 * once and read back exactly once.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka_test_env.h"
#include "kproducer.h"
#include "producer_test_util.h"

#define TOPIC "sw-restart"
#define N     20000

static sw_test_kafka_t cluster;
static atomic_int seen[N];
static atomic_int errs[N];
static atomic_llong offsets[N]; /* delivery offset per id */
static atomic_long acked;

static void on_delivery(void *opaque, int error, int32_t partition, int64_t offset)
{
    (void)partition;
    long id = (long)(intptr_t)opaque;
    atomic_store(&offsets[id], offset);
    atomic_fetch_add(&seen[id], 1);
    atomic_store(&errs[id], error);
    if (!error) {
        atomic_fetch_add(&acked, 1);
    }
}

struct run {
    kp_producer_t *p;
    const char *tag;
    long from, to;
    int rc;
};

static void *send_range(void *arg)
{
    struct run *r = arg;
    char value[200];
    for (long i = r->from; i < r->to && r->rc == 0; i++) {
        int n = snprintf(value, sizeof(value), "%s:%ld|", r->tag, i);
        memset(value + n, 'q', sizeof(value) - (size_t)n);
        r->rc = kp_send(r->p, TOPIC, -1, NULL, 0, value, sizeof(value), NULL, 0, 0, on_delivery,
                        (void *)(intptr_t)i);
    }
    return NULL;
}

/* Bounded wait for a condition that another thread makes true. */
static void await_acked(long n)
{
    for (int i = 0; i < 600000 && atomic_load(&acked) < n; i++) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL); /* poll interval of a bounded wait, not a synchronization */
    }
    cr_assert_geq(atomic_load(&acked), n, "only %ld records acknowledged", atomic_load(&acked));
}

/* Reads the topic back: every id of this run's tag exactly once. */
static void verify_read_back(const char *tag, long n)
{
    char *count = calloc((size_t)n, 1);
    long found = 0;
    for (int part = 0; part < 3; part++) {
        size_t len = 0;
        char *out = sw_test_kafka_consume(cluster.bootstrap, TOPIC, part, -1, 0, "%o %s\n", &len);
        cr_assert_not_null(out);
        long id;
        long long off;
        for (char *cur = out; tagged_offset_line_next(&cur, out + len, tag, &id, &off);) {
            cr_assert(id >= 0 && id < n);
            cr_assert_eq(count[id], 0, "record %ld duplicated in the log", id);
            count[id] = 1;
            cr_assert_eq(atomic_load(&offsets[id]), off,
                         "record %ld reported at offset %lld, read back at %lld", id,
                         (long long)atomic_load(&offsets[id]), off);
            found++;
        }
        free(out);
    }
    cr_assert_eq(found, n, "read back %ld of %ld", found, n);
    free(count);
}

static void reset_reports(void)
{
    for (long i = 0; i < N; i++) {
        atomic_store(&seen[i], 0);
        atomic_store(&errs[i], 0);
    }
    atomic_store(&acked, 0);
}

static void check_reports(long n)
{
    for (long i = 0; i < n; i++) {
        cr_assert_eq(atomic_load(&seen[i]), 1, "record %ld reported %d times", i,
                     atomic_load(&seen[i]));
        cr_assert_eq(atomic_load(&errs[i]), 0, "record %ld: %s", i,
                     kp_err_name(atomic_load(&errs[i])));
    }
}

static void setup(void)
{
    char dir[128];
    snprintf(dir, sizeof(dir), "/tmp/kp-restart-%d", (int)getpid());
    cr_assert_eq(sw_test_kafka_start(&cluster, dir, 1, TOPIC ":3"), 0);
}

static void teardown(void)
{
    sw_test_kafka_stop(&cluster);
}

Test(producer_restart, broker_down_at_start_then_up, .init = setup, .fini = teardown,
     .timeout = 600)
{
    reset_reports();
    cr_assert_eq(sw_test_kafka_kill_node(&cluster, 1, 0), 0);
    kp_producer_t *p = producer_test_new(cluster.bootstrap, NULL);
    struct run r = {p, "down", 0, 2000, 0};
    pthread_t th;
    pthread_create(&th, NULL, send_range, &r); /* blocks on metadata until the broker is up */
    cr_assert_eq(sw_test_kafka_start_node(&cluster, 1), 0);
    pthread_join(th, NULL);
    cr_assert_eq(r.rc, 0, "kp_send: %s", kp_err_name(r.rc));
    cr_assert_eq(kp_flush(p, 120000), 0);
    cr_assert_eq(kp_close(p, 5000), 0);
    check_reports(2000);
    verify_read_back("down", 2000);
}

Test(producer_restart, broker_killed_mid_stream_loses_and_duplicates_nothing, .init = setup,
     .fini = teardown, .timeout = 600)
{
    reset_reports();
    kp_producer_t *p = producer_test_new(cluster.bootstrap, NULL);
    char tag[32];
    snprintf(tag, sizeof(tag), "kill%d", (int)getpid());
    /* First half, then the kill right away: part of it is still in the accumulator or in
     * flight; the second half is appended while the broker is down. */
    struct run first = {p, tag, 0, N / 2, 0};
    send_range(&first);
    cr_assert_eq(first.rc, 0, "kp_send: %s", kp_err_name(first.rc));
    await_acked(1);
    cr_assert_eq(sw_test_kafka_kill_node(&cluster, 1, 0), 0);
    long acked_at_kill = atomic_load(&acked);
    struct run second = {p, tag, N / 2, N, 0};
    send_range(&second);
    cr_assert_eq(second.rc, 0, "kp_send: %s", kp_err_name(second.rc));
    cr_assert_lt(acked_at_kill, N, "the kill came after everything was delivered");
    cr_assert_eq(sw_test_kafka_start_node(&cluster, 1), 0);
    cr_assert_eq(kp_flush(p, 120000), 0);
    kp_stats_t st;
    kp_stats(p, &st);
    cr_assert_eq(kp_close(p, 5000), 0);
    check_reports(N);
    cr_assert_eq(st.records_acked, (uint64_t)N);
    fprintf(stderr, "acked at kill: %ld of %d; retried records: %llu\n", acked_at_kill, N,
            (unsigned long long)st.records_retried);
    verify_read_back(tag, N);
}
