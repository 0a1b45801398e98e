/*
 * test_producer_leader.c - leader change on a private 3-node cluster (label kafka): records
 * are produced continuously to a topic with replication factor 3 while the leader of
 * partition 0 is killed (SIGKILL) and later restarted. With default settings (idempotence,
 * acks=all, min.insync.replicas 2 on this cluster) the producer follows the new leaders:
 * every record is reported successful exactly once and is in the log exactly once, and
 * per-partition order holds. Every wait is bounded.
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

#define TOPIC "sw-leader"
#define PARTS 3
#define N     30000

static sw_test_kafka_t cluster;
static atomic_int seen[N];
static atomic_int errs[N];
static atomic_llong offsets[N]; /* delivery offset per id */
static atomic_int parts[N];
static atomic_long acked;

static void on_delivery(void *opaque, int error, int32_t partition, int64_t offset)
{
    long id = (long)(intptr_t)opaque;
    atomic_store(&offsets[id], offset);
    atomic_fetch_add(&seen[id], 1);
    atomic_store(&errs[id], error);
    atomic_store(&parts[id], partition);
    if (!error) {
        atomic_fetch_add(&acked, 1);
    }
}

struct run {
    kp_producer_t *p;
    const char *tag;
    atomic_int restarted; /* set by the test once the killed node is back */
    atomic_int rc;
};

/* Sends ids 0..N-1, keyed by id % 64 so that each key's order can be checked in the log.
 * Paced (about 20k records/s) so that the kill lands mid-stream; the last third waits
 * (bounded) until the killed node is back, so that records also flow after the restart. */
static void *producer_thread(void *arg)
{
    struct run *r = arg;
    char value[160], key[16];
    for (long i = 0; i < N; i++) {
        if (i % 100 == 0) {
            struct timespec ts = {0, 5000000};
            nanosleep(&ts, NULL); /* pacing of the load, not a synchronization */
        }
        for (int w = 0; i == 2 * N / 3 && !atomic_load(&r->restarted) && w < 240000; w++) {
            struct timespec ts = {0, 500000};
            nanosleep(&ts, NULL); /* poll interval of a bounded wait (120 s) */
        }
        int n = snprintf(value, sizeof(value), "%s:%ld|", r->tag, i);
        memset(value + n, 'l', sizeof(value) - (size_t)n);
        int kl = snprintf(key, sizeof(key), "k%ld", i % 64);
        int rc = kp_send(r->p, TOPIC, -1, key, (size_t)kl, value, sizeof(value), NULL, 0, 0,
                         on_delivery, (void *)(intptr_t)i);
        if (rc != 0) {
            atomic_store(&r->rc, rc);
            break;
        }
    }
    return NULL;
}

/* Bounded wait (120 s) until at least n records are acknowledged. */
static void await_acked(long n, const char *when)
{
    for (int i = 0; i < 1200000 && atomic_load(&acked) < n; i++) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL); /* poll interval of a bounded wait, not a synchronization */
    }
    cr_assert_geq(atomic_load(&acked), n, "%s: only %ld records acknowledged", when,
                  atomic_load(&acked));
}

/* The node id (1..3) leading `partition` of TOPIC, from kcat's metadata listing. */
static int leader_of(int partition)
{
    char *argv[] = {(char *)"kcat",    (char *)"-L", (char *)"-b",
                    cluster.bootstrap, (char *)"-t", (char *)TOPIC,
                    (char *)"-m",      (char *)"10", NULL};
    char *out = NULL;
    size_t len = 0;
    cr_assert_eq(sw_test_kafka_exec(argv, &out, &len), 0, "kcat -L failed");
    char pat[48];
    snprintf(pat, sizeof(pat), "partition %d, leader ", partition);
    char *at = out ? strstr(out, pat) : NULL;
    cr_assert_not_null(at, "no leader of partition %d in:\n%s", partition, out ? out : "");
    int leader = atoi(at + strlen(pat));
    free(out);
    cr_assert(leader >= 1 && leader <= 3, "leader %d is not a node of the cluster", leader);
    return leader;
}

static void verify_read_back(const char *tag)
{
    char *count = calloc(N, 1);
    long found = 0;
    for (int part = 0; part < PARTS; part++) {
        size_t len = 0;
        char *out = sw_test_kafka_consume(cluster.bootstrap, TOPIC, part, -1, 0, "%o %s\n", &len);
        cr_assert_not_null(out, "kcat failed on partition %d", part);
        long last[64];
        for (int j = 0; j < 64; j++) {
            last[j] = -1;
        }
        long id;
        long long off;
        for (char *cur = out; tagged_offset_line_next(&cur, out + len, tag, &id, &off);) {
            cr_assert(id >= 0 && id < N, "bad id %ld", id);
            cr_assert_eq(count[id], 0, "record %ld duplicated in the log", id);
            cr_assert_eq(atomic_load(&parts[id]), part, "record %ld reported on %d, found on %d",
                         id, atomic_load(&parts[id]), part);
            cr_assert_gt(id, last[id % 64], "key k%ld out of order: %ld after %ld", id % 64, id,
                         last[id % 64]);
            last[id % 64] = id;
            count[id] = 1;
            cr_assert_eq(atomic_load(&offsets[id]), off,
                         "record %ld reported at offset %lld, read back at %lld", id,
                         (long long)atomic_load(&offsets[id]), off);
            found++;
        }
        free(out);
    }
    cr_assert_eq(found, N, "read back %ld of %d", found, N);
    free(count);
}

static void setup(void)
{
    char dir[128];
    snprintf(dir, sizeof(dir), "/tmp/kp-leader-%d", (int)getpid());
    cr_assert_eq(sw_test_kafka_start(&cluster, dir, 3, TOPIC ":3:3"), 0,
                 "starting the 3-node cluster failed");
}

static void teardown(void)
{
    sw_test_kafka_stop(&cluster);
}

Test(producer_leader, leader_killed_and_restarted_mid_stream, .init = setup, .fini = teardown,
     .timeout = 600)
{
    kp_producer_t *p = producer_test_new(cluster.bootstrap, NULL);
    char tag[32];
    snprintf(tag, sizeof(tag), "lead%d", (int)getpid());
    struct run r = {.p = p, .tag = tag};
    int victim = leader_of(0);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, producer_thread, &r), 0);
    await_acked(N / 10, "before the kill");
    cr_assert_eq(sw_test_kafka_kill_node(&cluster, victim, 0), 0, "kill node %d", victim);
    long acked_at_kill = atomic_load(&acked);
    /* The stream goes on to new leaders; bring the old one back while it does. */
    cr_assert_lt(acked_at_kill, 2 * N / 3, "the kill came after the stream's first part");
    long more = acked_at_kill + N / 10;
    await_acked(more < 2 * N / 3 ? more : 2 * N / 3, "after the kill");
    cr_assert_eq(sw_test_kafka_start_node(&cluster, victim), 0, "restart node %d", victim);
    atomic_store(&r.restarted, 1);
    pthread_join(th, NULL);
    cr_assert_eq(atomic_load(&r.rc), 0, "kp_send: %s", kp_err_name(atomic_load(&r.rc)));
    cr_assert_eq(kp_flush(p, 120000), 0, "flush timed out");
    kp_stats_t st;
    kp_stats(p, &st);
    cr_assert_eq(kp_close(p, 5000), 0);
    for (long i = 0; i < N; i++) {
        cr_assert_eq(atomic_load(&seen[i]), 1, "record %ld reported %d times", i,
                     atomic_load(&seen[i]));
        cr_assert_eq(atomic_load(&errs[i]), 0, "record %ld: %s", i,
                     kp_err_name(atomic_load(&errs[i])));
    }
    cr_assert_eq(st.records_acked, (uint64_t)N);
    fprintf(stderr, "leader of partition 0 was node %d; acked at kill: %ld of %d; retried: %llu\n",
            victim, acked_at_kill, N, (unsigned long long)st.records_retried);
    verify_read_back(tag);
}
