/*
 * test_producer_faults.c - the producer through the fault proxy (tests/support/fault_proxy.h)
 * to the fixture broker's PROXIED listener (label kafka): one test per fault, each a steady
 * stream of records to 3 partitions (idempotence on, acks=all) with a fault window of 2 s in
 * the middle. After each run:
 *   - every callback ran exactly once;
 *   - every acknowledged record is read back (kcat, directly from the broker), at the offset
 *     its callback reported; none is read back twice; each partition is in send order;
 *   - after the fault window every partition acknowledges again within
 *     retry.backoff.max.ms + request.timeout.ms (+ reconnect.backoff.max.ms for the new
 *     connection, and 250 ms of scheduling slack);
 *   - kp_flush and kp_close return within their timeouts.
 * Each test prints one "FAULT ..." line with its figures (the fault table of docs/TESTING.md).
 *
 * Corrupted response bytes that still decode to a valid response (an offset or an error
 * code that is possible) cannot be told apart from a real answer: Kafka responses carry no
 * checksum. That test therefore counts acknowledgements with a wrong offset and prints them
 * instead of failing on them; everything else is asserted as for the other faults.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fault_proxy.h"
#include "kafka_test_env.h"
#include "kproducer.h"
#include "producer_test_util.h"
#include "test_util.h"

#define PARTS                    3
#define MAX_RECORDS              40000
#define REQUEST_TIMEOUT_MS       1500
#define RETRY_BACKOFF_MAX_MS     500
#define RECONNECT_BACKOFF_MAX_MS 200
#define WINDOW_MS                2000

typedef struct rec {
    atomic_int calls;
    atomic_int err;
    atomic_llong offset;
} rec_t;

static rec_t recs[MAX_RECORDS];
static atomic_llong fault_end_ms;          /* 0 while the window has not ended */
static atomic_llong first_ok_after[PARTS]; /* first acknowledgement after the window */
static atomic_long acked_per_part[PARTS];

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_delivery(void *opaque, int error, int32_t partition, int64_t offset)
{
    rec_t *r = opaque;
    atomic_store(&r->err, error);
    atomic_store(&r->offset, offset);
    atomic_fetch_add(&r->calls, 1);
    if (error || partition < 0 || partition >= PARTS) {
        return;
    }
    atomic_fetch_add(&acked_per_part[partition], 1);
    long long end = atomic_load(&fault_end_ms), zero = 0;
    if (end > 0) {
        atomic_compare_exchange_strong(&first_ok_after[partition], &zero, mono_ms());
    }
}

struct load {
    kp_producer_t *p;
    const char *topic;
    const char *tag;
    atomic_bool stop;
    long sent;
    int rc;
};

/* Sends record i to partition i % PARTS, about 2 per ms, until told to stop. */
static void *load_run(void *arg)
{
    struct load *l = arg;
    char value[200];
    for (long i = 0; i < MAX_RECORDS && !atomic_load(&l->stop); i++) {
        int n = snprintf(value, sizeof(value), "%s:%ld|", l->tag, i);
        memset(value + n, 'f', sizeof(value) - (size_t)n);
        l->rc = kp_send(l->p, l->topic, (int32_t)(i % PARTS), NULL, 0, value, sizeof(value), NULL,
                        0, 0, on_delivery, &recs[i]);
        if (l->rc != 0) {
            break;
        }
        l->sent = i + 1;
        if (i % 2 == 1) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL); /* pacing of the load, not synchronization */
        }
    }
    return NULL;
}

static void wait_acked_everywhere(void)
{
    int64_t end = mono_ms() + 20000;
    for (int k = 0; k < PARTS; k++) {
        while (atomic_load(&acked_per_part[k]) == 0) {
            cr_assert_lt(mono_ms(), end, "partition %d never acknowledged before the fault", k);
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL); /* polling interval of a bounded wait */
        }
    }
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL); /* the length of a fault window, not synchronization */
}

struct counts {
    long read, lost, dup, ooo, wrong_offset;
};

/* Reads the topic back and compares it with the callbacks. */
static struct counts read_back(const char *bootstrap, const char *topic, const char *tag, long sent)
{
    struct counts c = {0};
    char *seen = calloc((size_t)sent, 1);
    char tagc[80];
    snprintf(tagc, sizeof(tagc), "%s:", tag);
    for (int k = 0; k < PARTS; k++) {
        size_t len = 0;
        char *out = sw_test_kafka_consume(bootstrap, topic, k, -1, 0, "%o %s\n", &len);
        cr_assert_not_null(out, "kcat failed on partition %d", k);
        long last = -1;
        for (char *cur = out, *end = out + len; cur < end;) {
            char *nl = memchr(cur, '\n', (size_t)(end - cur));
            if (!nl) {
                break;
            }
            long long off = strtoll(cur, NULL, 10);
            char *v = strchr(cur, ' ');
            cur = nl + 1;
            if (!v || strncmp(v + 1, tagc, strlen(tagc)) != 0) {
                continue;
            }
            long id = strtol(v + 1 + strlen(tagc), NULL, 10);
            if (id < 0 || id >= sent) {
                continue;
            }
            c.read++;
            if (seen[id]) {
                c.dup++;
            }
            seen[id] = 1;
            if (id <= last) {
                c.ooo++;
            }
            last = id;
            if (atomic_load(&recs[id].err) == 0 && atomic_load(&recs[id].offset) != off) {
                c.wrong_offset++;
            }
        }
        free(out);
    }
    for (long id = 0; id < sent; id++) {
        if (atomic_load(&recs[id].err) == 0 && !seen[id]) {
            c.lost++;
        }
    }
    free(seen);
    return c;
}

static void run_fault(const char *name, const fp_faults_t *to_broker, const fp_faults_t *to_client,
                      bool offsets_checked)
{
    memset(recs, 0, sizeof(recs));
    atomic_store(&fault_end_ms, 0);
    for (int k = 0; k < PARTS; k++) {
        atomic_store(&first_ok_after[k], 0);
        atomic_store(&acked_per_part[k], 0);
    }
    sw_test_kafka_t kafka;
    cr_assert_eq(sw_test_kafka_fixture(&kafka), 0);
    char topic[64], tag[64], proxy_bs[256], path[600];
    snprintf(topic, sizeof(topic), "sw-faults-%s", name);
    snprintf(tag, sizeof(tag), "%s%d", name, (int)getpid());
    cr_assert_eq(sw_test_kafka_create_topic(&kafka, topic, PARTS), 0);
    snprintf(path, sizeof(path), "%s/proxy_bootstrap", kafka.dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no %s: broker.sh without proxied listeners?", path);
    cr_assert_not_null(fgets(proxy_bs, sizeof(proxy_bs), f));
    fclose(f);
    proxy_bs[strcspn(proxy_bs, "\r\n")] = '\0';
    uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
    fault_proxy_t *fp = fp_start_for_cluster(kafka.dir, seed);
    cr_assert_not_null(fp);

    char rt[16], rbm[16], rcm[16];
    snprintf(rt, sizeof(rt), "%d", REQUEST_TIMEOUT_MS);
    snprintf(rbm, sizeof(rbm), "%d", RETRY_BACKOFF_MAX_MS);
    snprintf(rcm, sizeof(rcm), "%d", RECONNECT_BACKOFF_MAX_MS);
    const char *kv[] = {"request.timeout.ms",
                        rt,
                        "retry.backoff.ms",
                        "50",
                        "retry.backoff.max.ms",
                        rbm,
                        "reconnect.backoff.ms",
                        "20",
                        "reconnect.backoff.max.ms",
                        rcm,
                        "delivery.timeout.ms",
                        "60000",
                        "linger.ms",
                        "5",
                        NULL};
    kp_producer_t *p = producer_test_new(proxy_bs, kv);
    struct load l = {.p = p, .topic = topic, .tag = tag};
    pthread_t th;
    pthread_create(&th, NULL, load_run, &l);
    wait_acked_everywhere();
    fp_set(fp, FP_TO_BROKER, to_broker);
    fp_set(fp, FP_TO_CLIENT, to_client);
    sleep_ms(WINDOW_MS);
    fp_faults_t none = {0};
    fp_set(fp, FP_TO_BROKER, &none);
    fp_set(fp, FP_TO_CLIENT, &none);
    int64_t end = mono_ms();
    atomic_store(&fault_end_ms, end);
    /* Keep sending until every partition acknowledged again (or long past the bound). */
    /* The bound: retry.backoff.max.ms + request.timeout.ms (reconnect.backoff.max.ms is
     * below retry.backoff.max.ms here, so a reconnect fits inside it). */
    int64_t bound = RETRY_BACKOFF_MAX_MS + REQUEST_TIMEOUT_MS;
    int64_t recovery[PARTS];
    for (int k = 0; k < PARTS; k++) {
        while (atomic_load(&first_ok_after[k]) == 0 && mono_ms() < end + 4 * bound) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL); /* polling interval of a bounded wait */
        }
        long long t = atomic_load(&first_ok_after[k]);
        recovery[k] = t ? t - end : -1;
    }
    sleep_ms(300);
    atomic_store(&l.stop, true);
    pthread_join(th, NULL);
    cr_assert_eq(l.rc, 0, "kp_send: %s", kp_err_name(l.rc));
    int64_t t0 = mono_ms();
    int frc = kp_flush(p, 30000);
    int64_t flush_ms = mono_ms() - t0;
    t0 = mono_ms();
    int crc = kp_close(p, 5000);
    int64_t close_ms = mono_ms() - t0;
    fp_stats_t st;
    fp_stats(fp, &st);
    fp_stop(fp);

    long acked = 0, failed = 0, bad_calls = 0;
    for (long id = 0; id < l.sent; id++) {
        int calls = atomic_load(&recs[id].calls);
        if (calls != 1) {
            bad_calls++;
        } else if (atomic_load(&recs[id].err) == 0) {
            acked++;
        } else {
            failed++;
        }
    }
    struct counts c = read_back(kafka.bootstrap, topic, tag, l.sent);
    int64_t worst = 0;
    for (int k = 0; k < PARTS; k++) {
        worst = recovery[k] < 0 || worst < 0 ? -1 : (recovery[k] > worst ? recovery[k] : worst);
    }
    printf("FAULT %-18s sent=%ld acked=%ld failed=%ld read=%ld lost=%ld dup=%ld ooo=%ld "
           "wrong_offset=%ld bad_callbacks=%ld recovery_ms=%lld flush_ms=%lld close_ms=%lld "
           "frames=%llu/%llu resets=%llu/%llu truncations=%llu/%llu corruptions=%llu/%llu "
           "seed=%llu\n",
           name, l.sent, acked, failed, c.read, c.lost, c.dup, c.ooo, c.wrong_offset, bad_calls,
           (long long)worst, (long long)flush_ms, (long long)close_ms,
           (unsigned long long)st.frames[0], (unsigned long long)st.frames[1],
           (unsigned long long)st.resets[0], (unsigned long long)st.resets[1],
           (unsigned long long)st.truncations[0], (unsigned long long)st.truncations[1],
           (unsigned long long)st.corruptions[0], (unsigned long long)st.corruptions[1],
           (unsigned long long)seed);
    fflush(stdout);
    cr_expect_eq(frc, 0, "kp_flush: %s after %lld ms", kp_err_name(frc), (long long)flush_ms);
    cr_expect_eq(crc, 0, "kp_close: %s", kp_err_name(crc));
    /* kp_close(5000) after a successful flush has nothing left and returns at once; one that
       overran its timeout would wait for delivery.timeout.ms (60 s). 15 s tells them apart on
       a loaded machine. */
    cr_expect_leq(close_ms, 15000, "kp_close(5000) took %lld ms", (long long)close_ms);
    cr_expect_eq(bad_calls, 0, "%ld records without exactly one callback", bad_calls);
    cr_expect_eq(c.lost, 0, "%ld acknowledged records not read back", c.lost);
    cr_expect_eq(c.dup, 0, "%ld records read back twice", c.dup);
    cr_expect_eq(c.ooo, 0, "%ld records out of partition order", c.ooo);
    if (offsets_checked) {
        cr_expect_eq(c.wrong_offset, 0, "%ld acknowledgements with a wrong offset", c.wrong_offset);
    }
    for (int k = 0; k < PARTS; k++) {
        cr_expect(recovery[k] >= 0 && recovery[k] <= bound,
                  "partition %d acknowledged again %lld ms after the fault window (bound %lld)", k,
                  (long long)recovery[k], (long long)bound);
    }
}

Test(faults, reset_in_requests, .timeout = 120)
{
    fp_faults_t f = {.reset_p = 0.05}, none = {0};
    run_fault("reset_requests", &f, &none, true);
}

Test(faults, reset_in_responses, .timeout = 120)
{
    fp_faults_t f = {.reset_p = 0.05}, none = {0};
    run_fault("reset_responses", &none, &f, true);
}

Test(faults, latency, .timeout = 120)
{
    fp_faults_t f = {.latency_ms = 300};
    run_fault("latency_300ms", &f, &f, true);
}

Test(faults, blackhole_beyond_request_timeout, .timeout = 120)
{
    fp_faults_t f = {.blackhole = true};
    run_fault("blackhole", &f, &f, true);
}

Test(faults, truncated_requests, .timeout = 120)
{
    fp_faults_t f = {.truncate_p = 0.05}, none = {0};
    run_fault("truncate_requests", &f, &none, true);
}

Test(faults, truncated_responses, .timeout = 120)
{
    fp_faults_t f = {.truncate_p = 0.05}, none = {0};
    run_fault("truncate_responses", &none, &f, true);
}

Test(faults, corrupted_requests, .timeout = 120)
{
    fp_faults_t f = {.corrupt_p = 0.05}, none = {0};
    run_fault("corrupt_requests", &f, &none, true);
}

Test(faults, corrupted_responses, .timeout = 120)
{
    fp_faults_t f = {.corrupt_p = 0.05}, none = {0};
    run_fault("corrupt_responses", &none, &f, false);
}
