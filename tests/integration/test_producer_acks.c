/*
 * test_producer_acks.c - round trips with acks=1 and acks=0 against the fixture broker (label
 * kafka), idempotence off (it needs acks=all). acks=1: every record acknowledged once, read
 * back once, at the offset its callback reported, in per-partition send order. acks=0: every
 * callback reports success with offset -1 (the broker sends no response), and every record
 * is read back once, in per-partition send order.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_test_env.h"
#include "kproducer.h"
#include "producer_test_util.h"
#include "test_util.h"

#define TOPIC "sw-test-6p"
#define PARTS 6
#define N     5000

static atomic_int calls[N];
static atomic_int errs[N];
static atomic_llong offsets[N];
static atomic_int parts[N];

static void on_delivery(void *opaque, int error, int32_t partition, int64_t offset)
{
    long id = (long)(intptr_t)opaque;
    atomic_store(&errs[id], error);
    atomic_store(&offsets[id], offset);
    atomic_store(&parts[id], partition);
    atomic_fetch_add(&calls[id], 1);
}

/* Reads every partition back with kcat: each record of this run (tagged `tag`) once, on its
   partition, in send order, and with acks=1 at the offset its callback reported. Returns how
   many were read. */
static long read_back(const sw_test_kafka_t *k, const char *tag, bool acks0)
{
    char *seen = calloc(N, 1);
    cr_assert_not_null(seen);
    long found = 0;
    for (int part = 0; part < PARTS; part++) {
        size_t len = 0;
        char *out = sw_test_kafka_consume(k->bootstrap, TOPIC, part, -1, 0, "%o %s\n", &len);
        cr_assert_not_null(out, "kcat failed on partition %d", part);
        long id, last = -1;
        long long off;
        for (char *cur = out; tagged_offset_line_next(&cur, out + len, tag, &id, &off);) {
            cr_assert(id >= 0 && id < N && id % PARTS == part, "bad record %ld on %d", id, part);
            cr_assert_eq(seen[id], 0, "record %ld read twice", id);
            cr_assert_gt(id, last, "partition %d out of order: %ld after %ld", part, id, last);
            if (!acks0) {
                cr_assert_eq(atomic_load(&offsets[id]), off,
                             "record %ld reported at offset %lld, read back at %lld", id,
                             (long long)atomic_load(&offsets[id]), off);
            }
            seen[id] = 1;
            last = id;
            found++;
        }
        free(out);
    }
    free(seen);
    return found;
}

static void round_trip(const char *acks)
{
    sw_test_kafka_t k;
    cr_assert_eq(sw_test_kafka_fixture(&k), 0);
    const char *kv[] = {"acks", acks, "enable.idempotence", "false", NULL};
    kp_producer_t *p = producer_test_new(k.bootstrap, kv);
    char tag[32], value[120];
    snprintf(tag, sizeof(tag), "acks%s-%d", acks, (int)getpid());
    for (long i = 0; i < N; i++) {
        int n = snprintf(value, sizeof(value), "%s:%ld|", tag, i);
        memset(value + n, 'k', sizeof(value) - (size_t)n);
        cr_assert_eq(kp_send(p, TOPIC, (int32_t)(i % PARTS), NULL, 0, value, sizeof(value), NULL, 0,
                             0, on_delivery, (void *)(intptr_t)i),
                     0);
    }
    cr_assert_eq(kp_flush(p, 60000), 0);
    cr_assert_eq(kp_close(p, 5000), 0);
    bool acks0 = strcmp(acks, "0") == 0;
    for (long i = 0; i < N; i++) {
        cr_assert_eq(atomic_load(&calls[i]), 1, "record %ld: %d callbacks", i,
                     atomic_load(&calls[i]));
        cr_assert_eq(atomic_load(&errs[i]), 0, "record %ld: %s", i,
                     kp_err_name(atomic_load(&errs[i])));
        cr_assert_eq(atomic_load(&parts[i]), i % PARTS);
        if (acks0) {
            cr_assert_eq(atomic_load(&offsets[i]), -1, "acks=0 record %ld has offset %lld", i,
                         (long long)atomic_load(&offsets[i]));
        }
    }
    /* acks=0: the broker answers nothing, so kp_flush returns once the requests are written
       and nothing tells when the broker has appended the last of them: the read-back is
       repeated (every record once and in order each time) until all are there, for at most
       60 s. acks=1: every record was acknowledged, so one read must find them all. */
    double deadline = now_s() + 60;
    long found;
    while ((found = read_back(&k, tag, acks0)) < N && acks0 && now_s() < deadline) {
        struct timespec pause = {0, 200 * 1000 * 1000}; /* between reads, not for sync */
        nanosleep(&pause, NULL);
    }
    cr_assert_eq(found, N, "read back %ld of %d", found, N);
}

Test(producer_acks, acks_1_round_trip_with_offsets, .timeout = 300)
{
    round_trip("1");
}
Test(producer_acks, acks_0_round_trip, .timeout = 300)
{
    round_trip("0");
}
