/*
 * test_datacarrier.c - unit tests of libdatacarrier through its public header, with real
 * consumer threads. No sleeps as synchronisation: waits are bounded condition waits that fail
 * with a message when they expire.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "datacarrier.h"
#include "thread_stat.h"

/* Long enough that only a hung carrier can exceed it, even under TSan on a busy machine. */
#define WAIT_LIMIT_S 5

/* What a consumer saw; the mutex protects every field. */
typedef struct recorder {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    uintptr_t items[4096];
    size_t count;
    size_t batches;
    int exits;
    size_t count_at_exit;
} recorder_t;

static void recorder_init(recorder_t *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cond, NULL);
}

static void recorder_fini(recorder_t *r)
{
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cond);
}

static void record_batch(void *ctx, void **items, size_t n)
{
    recorder_t *r = ctx;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < n; i++) {
        if (r->count < sizeof r->items / sizeof r->items[0]) {
            r->items[r->count] = (uintptr_t)items[i];
        }
        r->count++;
    }
    r->batches++;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mu);
}

static void record_exit(void *ctx)
{
    recorder_t *r = ctx;
    pthread_mutex_lock(&r->mu);
    r->exits++;
    r->count_at_exit = r->count;
    pthread_mutex_unlock(&r->mu);
}

/* Waits until the recorder saw `want` items; false after WAIT_LIMIT_S. */
static bool recorder_wait(recorder_t *r, size_t want)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += WAIT_LIMIT_S;
    pthread_mutex_lock(&r->mu);
    int rc = 0;
    while (r->count < want && rc != ETIMEDOUT) {
        rc = pthread_cond_timedwait(&r->cond, &r->mu, &deadline);
    }
    bool ok = r->count >= want;
    pthread_mutex_unlock(&r->mu);
    return ok;
}

static dc_carrier_t *carrier_new(uint32_t channels, uint32_t size, dc_strategy_t strategy,
                                 dc_partitioner_t p)
{
    char err[256] = "";
    dc_carrier_t *c = NULL;
    int rc = dc_carrier_create("test", channels, size, strategy, p, &c, err, sizeof err);
    cr_assert_eq(rc, DC_OK, "dc_carrier_create failed: %s: %s", dc_err_name(rc), err);
    return c;
}

static void stats_expect(dc_carrier_t *c, uint64_t produced, uint64_t consumed, uint64_t dropped,
                         uint64_t rejected)
{
    dc_stats_t st;
    dc_carrier_stats(c, &st);
    cr_expect_eq(st.produced, produced, "produced %llu, expected %llu",
                 (unsigned long long)st.produced, (unsigned long long)produced);
    cr_expect_eq(st.consumed, consumed, "consumed %llu, expected %llu",
                 (unsigned long long)st.consumed, (unsigned long long)consumed);
    cr_expect_eq(st.dropped, dropped, "dropped %llu, expected %llu", (unsigned long long)st.dropped,
                 (unsigned long long)dropped);
    cr_expect_eq(st.rejected, rejected, "rejected %llu, expected %llu",
                 (unsigned long long)st.rejected, (unsigned long long)rejected);
    cr_expect_eq(st.pending, produced - consumed, "pending %llu", (unsigned long long)st.pending);
}

Test(datacarrier, wrap_around_keeps_fifo_order)
{
    /* One ring of 4 slots, 1000 items: the ring wraps 250 times, the producer blocks whenever
       it is full and the consumer must wake it. */
    dc_carrier_t *c = carrier_new(1, 4, DC_STRATEGY_BLOCKING, dc_partitioner_rolling(1));
    recorder_t r;
    recorder_init(&r);
    cr_assert_eq(dc_consume(c, record_batch, record_exit, &r, 1, 20), 0);
    for (uintptr_t i = 1; i <= 1000; i++) {
        cr_assert(dc_produce(c, (void *)i), "produce %zu failed", (size_t)i);
    }
    cr_assert(recorder_wait(&r, 1000), "consumer did not receive 1000 items within %d s",
              WAIT_LIMIT_S);
    cr_assert_eq(dc_carrier_shutdown(c), 0);
    for (size_t i = 0; i < 1000; i++) {
        cr_assert_eq(r.items[i], i + 1, "item %zu is %zu: order broken", i, (size_t)r.items[i]);
    }
    stats_expect(c, 1000, 1000, 0, 0);
    dc_carrier_destroy(c);
    recorder_fini(&r);
}

Test(datacarrier, full_ring_drops_and_counts)
{
    /* buffer_size 3 rounds up to 4. No consumer: the fifth item cannot be stored. */
    dc_carrier_t *c = carrier_new(1, 3, DC_STRATEGY_IF_POSSIBLE, dc_partitioner_rolling(1));
    for (uintptr_t i = 1; i <= 4; i++) {
        cr_assert(dc_produce(c, (void *)i), "item %zu should fit (capacity 4)", (size_t)i);
    }
    cr_assert_not(dc_produce(c, (void *)5), "a full ring must refuse the item");
    stats_expect(c, 4, 0, 1, 0);
    cr_assert_eq(dc_carrier_shutdown(c), 0);
    dc_stats_t st;
    dc_carrier_stats(c, &st);
    cr_assert_eq(st.pending, 4, "without consumers the items stay pending");
    dc_carrier_destroy(c);
}

/* A user partitioner that logs (attempt, channel) and moves one channel per attempt. */
typedef struct attempt_log {
    uint32_t attempts[64];
    uint32_t channels[64];
    size_t n;
} attempt_log_t;

static uint32_t logging_partition(void *state, uint32_t count, uint32_t attempt)
{
    attempt_log_t *log = state;
    uint32_t k = attempt % count;
    if (log->n < 64) {
        log->attempts[log->n] = attempt;
        log->channels[log->n] = k;
        log->n++;
    }
    return k;
}

Test(datacarrier, retries_move_to_other_channels)
{
    attempt_log_t log = {0};
    dc_partitioner_t p = {.partition = logging_partition, .state = &log, .max_retry = 3};
    dc_carrier_t *c = carrier_new(3, 2, DC_STRATEGY_IF_POSSIBLE, p);
    for (uintptr_t i = 1; i <= 6; i++) {
        cr_assert(dc_produce(c, (void *)i), "item %zu should fit somewhere", (size_t)i);
    }
    /* items 1,2 -> ch0 at attempt 0; 3,4 -> ch0 full, ch1; 5,6 -> ch0, ch1 full, ch2. */
    static const uint32_t want_attempts[] = {0, 0, 0, 1, 0, 1, 0, 1, 2, 0, 1, 2};
    cr_assert_eq(log.n, 12, "partitioner called %zu times, expected 12", log.n);
    for (size_t i = 0; i < 12; i++) {
        cr_expect_eq(log.attempts[i], want_attempts[i], "call %zu: attempt %u, expected %u", i,
                     log.attempts[i], want_attempts[i]);
        cr_expect_eq(log.channels[i], want_attempts[i], "call %zu: channel %u", i, log.channels[i]);
    }
    log.n = 0;
    cr_assert_not(dc_produce(c, (void *)7), "all three channels are full: drop");
    cr_assert_eq(log.n, 3, "a drop needs exactly max_retry=3 attempts, saw %zu", log.n);
    stats_expect(c, 6, 0, 1, 0);
    dc_carrier_destroy(c);
}

Test(datacarrier, max_retry_zero_means_one_attempt)
{
    attempt_log_t log = {0};
    dc_partitioner_t p = {.partition = logging_partition, .state = &log, .max_retry = 0};
    /* buffer_size 1 becomes 2 slots: the smallest ring (see dc_carrier_create). */
    dc_carrier_t *c = carrier_new(2, 1, DC_STRATEGY_IF_POSSIBLE, p);
    cr_assert(dc_produce(c, (void *)1));
    cr_assert(dc_produce(c, (void *)2), "a ring asked for 1 slot holds 2");
    cr_assert_not(dc_produce(c, (void *)3), "one attempt on the full channel 0, then drop");
    cr_assert_eq(log.n, 3, "3 produces with one attempt each, saw %zu calls", log.n);
    stats_expect(c, 2, 0, 1, 0);
    dc_carrier_destroy(c);
}

static uint32_t out_of_range_partition(void *state, uint32_t count, uint32_t attempt)
{
    (void)state;
    return count + attempt + 7;
}

Test(datacarrier, out_of_range_partition_is_folded)
{
    dc_partitioner_t p = {.partition = out_of_range_partition, .max_retry = 1};
    dc_carrier_t *c = carrier_new(2, 4, DC_STRATEGY_IF_POSSIBLE, p);
    cr_assert(dc_produce(c, (void *)1), "an out-of-range channel must not crash or drop");
    stats_expect(c, 1, 0, 0, 0);
    dc_carrier_destroy(c);
}

Test(datacarrier, builtin_partitioners_fill_every_channel)
{
    dc_carrier_t *c = carrier_new(4, 4, DC_STRATEGY_IF_POSSIBLE, dc_partitioner_rolling(1));
    for (uintptr_t i = 1; i <= 16; i++) {
        cr_assert(dc_produce(c, (void *)i), "rolling: item %zu should fit", (size_t)i);
    }
    cr_assert_not(dc_produce(c, (void *)17));
    dc_carrier_destroy(c);

    /* One thread maps to one channel; retries (+attempt) reach the other three. */
    c = carrier_new(4, 2, DC_STRATEGY_IF_POSSIBLE, dc_partitioner_thread(4));
    for (uintptr_t i = 1; i <= 8; i++) {
        cr_assert(dc_produce(c, (void *)i), "thread: item %zu should fit", (size_t)i);
    }
    cr_assert_not(dc_produce(c, (void *)9));
    stats_expect(c, 8, 0, 1, 0);
    dc_carrier_destroy(c);
}

/* Consumer that holds its first batch until the test opens the gate. */
typedef struct gate {
    recorder_t rec;
    bool open;   /* protected by rec.mu */
    bool inside; /* protected by rec.mu: the first batch is being held */
} gate_t;

static void gated_batch(void *ctx, void **items, size_t n)
{
    gate_t *g = ctx;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += WAIT_LIMIT_S;
    pthread_mutex_lock(&g->rec.mu);
    g->inside = true;
    pthread_cond_broadcast(&g->rec.cond);
    while (!g->open) {
        if (pthread_cond_timedwait(&g->rec.cond, &g->rec.mu, &deadline) == ETIMEDOUT) {
            break; /* the test fails on its own bounded wait */
        }
    }
    pthread_mutex_unlock(&g->rec.mu);
    record_batch(&g->rec, items, n);
}

Test(datacarrier, shutdown_delivers_items_in_flight)
{
    dc_carrier_t *c = carrier_new(2, 64, DC_STRATEGY_IF_POSSIBLE, dc_partitioner_rolling(2));
    gate_t g = {.open = false};
    recorder_init(&g.rec);
    cr_assert_eq(dc_consume(c, gated_batch, record_exit, &g, 1, 20), 0);
    cr_assert(dc_produce(c, (void *)1));

    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += WAIT_LIMIT_S;
    pthread_mutex_lock(&g.rec.mu);
    while (!g.inside) {
        if (pthread_cond_timedwait(&g.rec.cond, &g.rec.mu, &deadline) == ETIMEDOUT) {
            break;
        }
    }
    bool inside = g.inside;
    pthread_mutex_unlock(&g.rec.mu);
    cr_assert(inside, "the consumer never received the first item within %d s", WAIT_LIMIT_S);

    /* The consumer is held: these 100 items are stored but not yet consumed. */
    for (uintptr_t i = 2; i <= 101; i++) {
        cr_assert(dc_produce(c, (void *)i));
    }
    pthread_mutex_lock(&g.rec.mu);
    g.open = true;
    pthread_cond_broadcast(&g.rec.cond);
    pthread_mutex_unlock(&g.rec.mu);

    cr_assert_eq(dc_carrier_shutdown(c), 0);
    cr_assert_eq(g.rec.exits, 1, "on_exit called %d times", g.rec.exits);
    cr_assert_eq(g.rec.count_at_exit, 101, "on_exit ran after %zu of 101 items",
                 g.rec.count_at_exit);
    cr_assert_not(dc_produce(c, (void *)102), "produce after shutdown must return false");
    stats_expect(c, 101, 101, 0, 1);
    cr_assert_eq(dc_carrier_shutdown(c), DC_ESTATE, "a second shutdown is a state error");
    cr_assert_eq(g.rec.exits, 1, "on_exit must not run again");
    dc_carrier_destroy(c);
    recorder_fini(&g.rec);
}

static void *blocked_producer(void *arg)
{
    return (void *)(uintptr_t)dc_produce(arg, (void *)3);
}

Test(datacarrier, shutdown_releases_blocked_producer)
{
    /* No consumer: the third produce waits until shutdown makes it return false. Whether it
       was already asleep or arrives after the close, the result is the same. */
    dc_carrier_t *c = carrier_new(1, 2, DC_STRATEGY_BLOCKING, dc_partitioner_rolling(1));
    cr_assert(dc_produce(c, (void *)1));
    cr_assert(dc_produce(c, (void *)2));
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, blocked_producer, c), 0);
    cr_assert_eq(dc_carrier_shutdown(c), 0);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += WAIT_LIMIT_S;
    void *res = (void *)1;
    cr_assert_eq(pthread_timedjoin_np(t, &res, &deadline), 0,
                 "blocked producer not released by shutdown within %d s", WAIT_LIMIT_S);
    cr_assert_eq((uintptr_t)res, 0, "a produce refused by shutdown returns false");
    stats_expect(c, 2, 0, 0, 1);
    dc_carrier_destroy(c);
}

static void expect_create_error(uint32_t ch, uint32_t size, dc_strategy_t s, dc_partitioner_t p,
                                const char *name, const char *must_name)
{
    char err[256] = "";
    static char not_a_carrier;
    dc_carrier_t *c = (dc_carrier_t *)(void *)&not_a_carrier;
    cr_assert_eq(dc_carrier_create(name, ch, size, s, p, &c, err, sizeof err), DC_EINVAL,
                 "create(%u, %u) should fail with DC_EINVAL", ch, size);
    cr_assert_null(c, "a failed create leaves *out NULL");
    cr_assert(strstr(err, must_name) != NULL, "error '%s' does not name '%s'", err, must_name);
    /* No errbuf: still no crash. */
    cr_assert_eq(dc_carrier_create(name, ch, size, s, p, &c, NULL, 0), DC_EINVAL);
}

Test(datacarrier, bad_arguments_are_named)
{
    dc_partitioner_t ok = dc_partitioner_rolling(1);
    dc_partitioner_t none = {.partition = NULL, .max_retry = 1};
    expect_create_error(0, 8, DC_STRATEGY_BLOCKING, ok, "x", "channel_size");
    expect_create_error(2, 0, DC_STRATEGY_BLOCKING, ok, "x", "buffer_size");
    expect_create_error(2, UINT32_MAX, DC_STRATEGY_BLOCKING, ok, "x", "buffer_size");
    expect_create_error(UINT32_MAX, UINT32_C(1) << 30, DC_STRATEGY_BLOCKING, ok, "x", "overflows");
    expect_create_error(2, 8, DC_STRATEGY_BLOCKING, none, "x", "partitioner.partition");
    expect_create_error(2, 8, (dc_strategy_t)7, ok, "x", "strategy");
    expect_create_error(2, 8, DC_STRATEGY_BLOCKING, ok, NULL, "name");

    dc_carrier_t *c = carrier_new(2, 8, DC_STRATEGY_IF_POSSIBLE, ok);
    recorder_t r;
    recorder_init(&r);
    cr_assert_eq(dc_consume(c, NULL, NULL, &r, 1, 0), DC_EINVAL, "NULL consume_fn");
    cr_assert_eq(dc_consume(c, record_batch, NULL, &r, 0, 0), DC_EINVAL, "0 threads");
    cr_assert_eq(dc_consume(c, record_batch, NULL, &r, 3, 0), DC_EINVAL, "threads > channels");
    cr_assert_not(dc_produce(c, NULL), "a NULL item is refused");
    cr_assert_not(dc_produce(NULL, (void *)1), "a NULL carrier is refused");
    cr_assert_eq(dc_consume(c, record_batch, NULL, &r, 2, 0), 0);
    cr_assert_eq(dc_consume(c, record_batch, NULL, &r, 2, 0), DC_ESTATE, "consume twice");
    cr_assert_eq(dc_carrier_shutdown(c), 0);
    cr_assert_eq(dc_consume(c, record_batch, NULL, &r, 1, 0), DC_ESTATE, "consume after shut");
    stats_expect(c, 0, 0, 0, 0);
    dc_carrier_destroy(c);
    recorder_fini(&r);

    cr_assert_str_eq(dc_err_name(DC_EINVAL), "DC_EINVAL");
    cr_assert_str_eq(dc_err_name(DC_ETHREAD), "DC_ETHREAD");
    cr_assert_str_eq(dc_strerror(DC_ENOMEM), "out of memory");
    cr_assert_str_eq(dc_err_name(-99), "unknown");
    cr_assert_not_null(dc_strerror(12345));
}

typedef struct stats_run {
    dc_carrier_t *carrier;
    uintptr_t base;
} stats_run_t;

static void *produce_1000(void *arg)
{
    stats_run_t *run = arg;
    for (uintptr_t i = 0; i < 1000; i++) {
        if (!dc_produce(run->carrier, (void *)(run->base + i))) {
            return (void *)1;
        }
    }
    return NULL;
}

Test(datacarrier, stats_are_exact)
{
    dc_carrier_t *c = carrier_new(3, 16, DC_STRATEGY_BLOCKING, dc_partitioner_thread(1));
    recorder_t r;
    recorder_init(&r);
    cr_assert_eq(dc_consume(c, record_batch, record_exit, &r, 2, 5), 0);
    pthread_t t[2];
    stats_run_t runs[2] = {{c, 1}, {c, 100001}};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(pthread_create(&t[i], NULL, produce_1000, &runs[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        void *res;
        pthread_join(t[i], &res);
        cr_assert_null(res, "a BLOCKING produce returned false before shutdown");
    }
    cr_assert_eq(dc_carrier_shutdown(c), 0);
    stats_expect(c, 2000, 2000, 0, 0);
    cr_assert_eq(r.count, 2000, "the callbacks saw %zu items", r.count);
    cr_assert_eq(r.exits, 1);
    dc_carrier_destroy(c);
    recorder_fini(&r);
}

Test(datacarrier, idle_consumer_is_woken_early)
{
    /* An idle consumer sleeps without a timeout: were it not woken by the producer, an item
       would wait beyond the 5 s bound. Five rounds; a round whose store comes after the 20 ms
       nap finds the consumer asleep. Functional, not a timing measurement. */
    dc_carrier_t *c = carrier_new(2, 8, DC_STRATEGY_IF_POSSIBLE, dc_partitioner_rolling(2));
    recorder_t r;
    recorder_init(&r);
    cr_assert_eq(dc_consume(c, record_batch, record_exit, &r, 1, 20), 0);
    for (uintptr_t i = 1; i <= 5; i++) {
        cr_assert(dc_produce(c, (void *)i));
        cr_assert(recorder_wait(&r, i),
                  "item %zu not consumed within %d s: the idle consumer was not woken", (size_t)i,
                  WAIT_LIMIT_S);
    }
    cr_assert_eq(dc_carrier_shutdown(c), 0);
    cr_assert_eq(r.exits, 1);
    stats_expect(c, 5, 5, 0, 0);
    dc_carrier_destroy(c);
    recorder_fini(&r);
}

Test(datacarrier, destroy_without_shutdown_delivers_and_exits_once)
{
    dc_carrier_t *c = carrier_new(1, 8, DC_STRATEGY_IF_POSSIBLE, dc_partitioner_rolling(1));
    recorder_t r;
    recorder_init(&r);
    cr_assert_eq(dc_consume(c, record_batch, record_exit, &r, 1, 20), 0);
    for (uintptr_t i = 1; i <= 8; i++) {
        dc_produce(c, (void *)i);
    }
    dc_stats_t st;
    dc_carrier_stats(c, &st);
    dc_carrier_destroy(c);
    cr_assert_eq(r.exits, 1, "destroy shuts down once");
    cr_assert_eq(r.count_at_exit, st.produced, "every stored item delivered before on_exit");
    recorder_fini(&r);
}

/* The times the thread named `name` of this process has blocked; -1 when there is no such
   thread. */
static long thread_blocks(const char *name)
{
    long blocks = -1;
    return thread_stat_read(name, NULL, &blocks) ? blocks : -1;
}

Test(datacarrier, idle_consumer_sleeps_until_a_store)
{
    /* Once its rings are empty the consumer naps once and then sleeps until a producer wakes
       it: no timed wake-ups while nothing is stored (each one is charged to the process's CPU
       time, 50 times a second with a 20 ms cycle; rate_bench prints what they cost). Over
       the 300 ms observed it may block twice (the nap, then idle); a consumer that woke every
       cycle would have blocked about 15 times. */
    dc_carrier_t *c = carrier_new(2, 16, DC_STRATEGY_IF_POSSIBLE, dc_partitioner_rolling(2));
    recorder_t r;
    recorder_init(&r);
    cr_assert_eq(dc_consume(c, record_batch, record_exit, &r, 1, 20), 0);
    cr_assert(dc_produce(c, (void *)1));
    cr_assert(recorder_wait(&r, 1), "the first item was not consumed within %d s", WAIT_LIMIT_S);
    long before = thread_blocks("test-c0");
    cr_assert_geq(before, 0, "no consumer thread named test-c0");
    struct timespec window = {0, 300000000};
    nanosleep(&window, NULL); /* the span observed, not a wait for anything */
    long blocked = thread_blocks("test-c0") - before;
    cr_expect_leq(blocked, 3, "the idle consumer blocked %ld times in 300 ms: it wakes on a timer",
                  blocked);
    cr_assert(dc_produce(c, (void *)2));
    cr_assert(recorder_wait(&r, 2), "a store did not wake the idle consumer within %d s",
              WAIT_LIMIT_S);
    cr_assert_eq(dc_carrier_shutdown(c), 0);
    stats_expect(c, 2, 2, 0, 0);
    dc_carrier_destroy(c);
    recorder_fini(&r);
}

Test(datacarrier, trickle_through_spin_nap_and_idle_loses_no_wakeup)
{
    /* Items one at a time, each after the previous one was consumed, with gaps of 0, 2 and
       30 ms in turn: they reach the consumer while it spins after a batch, while it naps (the
       20 ms cycle) and after it went idle. An idle consumer sleeps without a timeout, so an item
       whose store did not wake it would wait beyond the 5 s bound. The gaps only vary the
       timing; nothing waits on them. */
    dc_carrier_t *c = carrier_new(2, 16, DC_STRATEGY_IF_POSSIBLE, dc_partitioner_rolling(2));
    recorder_t r;
    recorder_init(&r);
    cr_assert_eq(dc_consume(c, record_batch, record_exit, &r, 1, 20), 0);
    static const long gaps_ns[] = {0, 2000000, 30000000};
    for (uintptr_t i = 1; i <= 60; i++) {
        struct timespec gap = {0, gaps_ns[i % 3]};
        nanosleep(&gap, NULL);
        cr_assert(dc_produce(c, (void *)i));
        cr_assert(recorder_wait(&r, i),
                  "item %zu not consumed within %d s: a store did not wake the consumer", (size_t)i,
                  WAIT_LIMIT_S);
    }
    cr_assert_eq(dc_carrier_shutdown(c), 0);
    stats_expect(c, 60, 60, 0, 0);
    dc_carrier_destroy(c);
    recorder_fini(&r);
}
