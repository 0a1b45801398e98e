/*
 * test_producer_split.c - MESSAGE_TOO_LARGE (10) from the real broker of the ctest fixture
 * (label kafka). The broker's message.max.bytes is its default, 1 MiB (plus 12 bytes of
 * overhead); with batch.size and max.request.size far above it the producer builds batches
 * the broker rejects:
 *   - a batch of several records is split and retried (as the Java client does): every record
 *     is delivered exactly once, in order, with idempotence and with gzip;
 *   - a single record over the broker's limit fails with KP_EMSG_SIZE_TOO_LARGE.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_test_env.h"
#include "kproducer.h"
#include "producer_test_util.h"

#define RECORDS    24
#define VALUE_SIZE (100 * 1024)

static atomic_int seen[RECORDS];
static atomic_int errs[RECORDS];
static atomic_llong offsets[RECORDS];

static void on_delivery(void *opaque, int error, int32_t partition, int64_t offset)
{
    (void)partition;
    long id = (long)(intptr_t)opaque;
    atomic_fetch_add(&seen[id], 1);
    atomic_store(&errs[id], error);
    atomic_store(&offsets[id], offset);
}

static kp_producer_t *make(const char *bootstrap, const char *compression)
{
    /* max.in.flight 1, one request at a time: the split pieces keep their place before later
     * batches (see sender_split.c) */
    const char *kv[] = {"batch.size",
                        "1600000",
                        "max.request.size",
                        "8000000",
                        "linger.ms",
                        "60000",
                        "max.in.flight.requests.per.connection",
                        "1",
                        "compression.type",
                        compression,
                        NULL};
    return producer_test_new(bootstrap, kv);
}

/* Non-repeating filler so that gzip cannot shrink a batch under the broker's limit. */
static void fill_random(char *buf, size_t n, unsigned seed)
{
    unsigned x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (char)(x & 0xff);
    }
}

static void split_run(const char *compression)
{
    sw_test_kafka_t k;
    cr_assert_eq(sw_test_kafka_fixture(&k), 0);
    char topic[64];
    snprintf(topic, sizeof(topic), "sw-test-split-%s-%d", compression, (int)getpid());
    cr_assert_eq(sw_test_kafka_create_topic(&k, topic, 1), 0, "creating %s failed", topic);
    kp_producer_t *p = make(k.bootstrap, compression);
    static char value[VALUE_SIZE];
    for (long i = 0; i < RECORDS; i++) {
        atomic_store(&seen[i], 0);
        atomic_store(&offsets[i], -1);
        fill_random(value, sizeof(value), (unsigned)i + 1);
        char key[32];
        int kl = snprintf(key, sizeof(key), "id-%02ld", i);
        kp_header_t h = {"id", key, (size_t)kl};
        int rc = kp_send(p, topic, 0, key, (size_t)kl, value, sizeof(value), &h, 1, 0, on_delivery,
                         (void *)(intptr_t)i);
        cr_assert_eq(rc, 0, "kp_send %ld: %s", i, kp_strerror(rc));
    }
    /* About 15 records (1.5 MB) per batch: each batch is rejected once, then split. */
    int frc = kp_flush(p, 30000);
    kp_stats_t st;
    kp_stats(p, &st);
    cr_assert_eq(frc, 0,
                 "flush timed out: sent %llu acked %llu failed %llu retried %llu batches %llu "
                 "in flight %u",
                 (unsigned long long)st.records_sent, (unsigned long long)st.records_acked,
                 (unsigned long long)st.records_failed, (unsigned long long)st.records_retried,
                 (unsigned long long)st.batches_sent, st.requests_in_flight);
    cr_assert_eq(kp_close(p, 10000), 0);
    for (long i = 0; i < RECORDS; i++) {
        cr_assert_eq(atomic_load(&seen[i]), 1, "record %ld reported %d times", i,
                     atomic_load(&seen[i]));
        cr_assert_eq(atomic_load(&errs[i]), 0, "record %ld failed: %s", i,
                     kp_err_name(atomic_load(&errs[i])));
        if (i > 0) {
            cr_assert_eq(atomic_load(&offsets[i]), atomic_load(&offsets[i - 1]) + 1,
                         "record %ld at offset %lld after %lld", i,
                         (long long)atomic_load(&offsets[i]),
                         (long long)atomic_load(&offsets[i - 1]));
        }
    }
    cr_assert_eq(st.records_acked, (uint64_t)RECORDS);
    cr_assert_gt(st.records_retried, 0, "no batch was split: the broker accepted everything");
    /* The log holds each record once, in send order. */
    size_t len = 0;
    char *out = sw_test_kafka_consume(k.bootstrap, topic, 0, -1, 0, "%k\n", &len);
    cr_assert_not_null(out, "kcat failed");
    char expect[RECORDS * 8 + 1];
    size_t el = 0;
    for (long i = 0; i < RECORDS; i++) {
        el += (size_t)snprintf(expect + el, sizeof(expect) - el, "id-%02ld\n", i);
    }
    cr_assert_eq(len, el, "read back %zu bytes of keys, expected %zu:\n%.*s", len, el, (int)len,
                 out);
    cr_assert_eq(memcmp(out, expect, el), 0, "keys out of order:\n%.*s", (int)len, out);
    free(out);
}

Test(producer_split, batch_over_broker_limit_is_split_and_delivered_in_order, .timeout = 180)
{
    split_run("none");
}

Test(producer_split, gzip_batch_over_broker_limit_is_split, .timeout = 180)
{
    split_run("gzip");
}

static atomic_int big_err = 1;

static void on_big(void *opaque, int error, int32_t partition, int64_t offset)
{
    (void)opaque;
    (void)partition;
    (void)offset;
    atomic_store(&big_err, error);
}

Test(producer_split, single_record_over_broker_limit_fails_clearly, .timeout = 120)
{
    sw_test_kafka_t k;
    cr_assert_eq(sw_test_kafka_fixture(&k), 0);
    kp_producer_t *p = make(k.bootstrap, "none");
    size_t size = 1200 * 1024; /* under max.request.size, over the broker's 1 MiB */
    char *value = malloc(size);
    fill_random(value, size, 7);
    cr_assert_eq(kp_send(p, "sw-test-1p", 0, NULL, 0, value, size, NULL, 0, 0, on_big, NULL), 0);
    cr_assert_eq(kp_flush(p, 60000), 0, "flush timed out");
    cr_assert_eq(atomic_load(&big_err), KP_EMSG_SIZE_TOO_LARGE, "got %s",
                 kp_err_name(atomic_load(&big_err)));
    /* The producer still works after the failure (a new producer id when idempotent). */
    atomic_store(&big_err, 1);
    cr_assert_eq(kp_send(p, "sw-test-1p", 0, NULL, 0, "ok", 2, NULL, 0, 0, on_big, NULL), 0);
    cr_assert_eq(kp_flush(p, 60000), 0, "flush timed out");
    cr_assert_eq(atomic_load(&big_err), 0, "got %s", kp_err_name(atomic_load(&big_err)));
    cr_assert_eq(kp_close(p, 10000), 0);
    free(value);
}
