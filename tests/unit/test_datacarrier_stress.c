/*
 * test_datacarrier_stress.c - 4 producer threads x N items into 2 consumer threads, for both
 * strategies. Every item is a pointer to a record the producer writes with plain stores just
 * before dc_produce (producer id, sequence, a check word); the consumer reads the record with
 * plain loads and checks it, then marks a per-producer bitmap. A lost, duplicated or torn item
 * is detected, and so is a publish that does not order the record's writes before the item:
 * under TSan a relaxed slot store in dc__ring_push shows as a data race on the record, and on
 * any build the consumer may see a stale record (counted as torn).
 *
 * N is 1M in the default build. Sanitizer builds run 10-20x slower, so they use 100k
 * (the interleavings that matter happen within the first thousands of wrap-arounds); the
 * environment variable DC_STRESS_ITEMS overrides either.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "datacarrier.h"
#include "test_util.h"

#if TEST_SANITIZED
#define DEFAULT_ITEMS 100000u
#else
#define DEFAULT_ITEMS 1000000u
#endif

enum { PRODUCERS = 4, CONSUMERS = 2 };

/* Shared by producers and consumers of one run; all fields atomic or written before start. */
typedef struct run {
    dc_carrier_t *carrier;
    uint32_t items;                      /* per producer */
    _Atomic uint64_t *bitmap[PRODUCERS]; /* items bits each; set with fetch_or (2 consumers) */
    struct record *records[PRODUCERS];   /* items each; record i written by its producer only */
    _Atomic uint64_t seen;
    _Atomic uint64_t duplicates;
    _Atomic uint64_t torn;
    _Atomic uint64_t accepted[PRODUCERS];
    _Atomic int exits;
} run_t;

/*
 * What an item points at. Written with plain stores by its producer before dc_produce and read
 * with plain loads by a consumer: only the carrier's release/acquire pair orders the two, which
 * is what this test checks. Each record is used once, so no write follows the publish.
 */
typedef struct record {
    uint32_t producer;
    uint32_t seq;
    uint64_t check; /* record_check(producer, seq): a stale or half-seen record fails it */
} record_t;

static uint64_t record_check(uint32_t producer, uint32_t seq)
{
    return (((uint64_t)producer << 32) | seq) * UINT64_C(0x9e3779b97f4a7c15) ^ UINT64_C(0xa5a5);
}

static void *item_make(run_t *run, uint32_t producer, uint32_t seq)
{
    record_t *r = &run->records[producer][seq];
    r->producer = producer;
    r->seq = seq;
    r->check = record_check(producer, seq);
    return r;
}

static uint32_t items_per_producer(void)
{
    const char *env = getenv("DC_STRESS_ITEMS");
    if (env != NULL && atoi(env) > 0) {
        return (uint32_t)atoi(env);
    }
    return DEFAULT_ITEMS;
}

static void check_batch(void *ctx, void **items, size_t n)
{
    run_t *run = ctx;
    for (size_t i = 0; i < n; i++) {
        const record_t *r = items[i];
        uint32_t producer = r->producer;
        uint32_t seq = r->seq;
        if (producer >= PRODUCERS || seq >= run->items || r != &run->records[producer][seq] ||
            r->check != record_check(producer, seq)) {
            atomic_fetch_add_explicit(&run->torn, 1, memory_order_relaxed);
            continue;
        }
        uint64_t bit = UINT64_C(1) << (seq % 64);
        /* relaxed: the bitmap is read after the consumer threads were joined. */
        uint64_t old =
            atomic_fetch_or_explicit(&run->bitmap[producer][seq / 64], bit, memory_order_relaxed);
        if (old & bit) {
            atomic_fetch_add_explicit(&run->duplicates, 1, memory_order_relaxed);
        }
    }
    atomic_fetch_add_explicit(&run->seen, n, memory_order_relaxed);
}

static void count_exit(void *ctx)
{
    run_t *run = ctx;
    atomic_fetch_add_explicit(&run->exits, 1, memory_order_relaxed);
}

typedef struct producer_arg {
    run_t *run;
    uint32_t id;
} producer_arg_t;

static void *producer_main(void *arg)
{
    producer_arg_t *p = arg;
    uint64_t accepted = 0;
    for (uint32_t seq = 0; seq < p->run->items; seq++) {
        accepted += dc_produce(p->run->carrier, item_make(p->run, p->id, seq));
    }
    atomic_store_explicit(&p->run->accepted[p->id], accepted, memory_order_relaxed);
    return NULL;
}

static uint64_t bits_set(_Atomic uint64_t *words, uint32_t items)
{
    uint64_t n = 0;
    for (uint32_t w = 0; w < (items + 63) / 64; w++) {
        n += (uint64_t)__builtin_popcountll(atomic_load_explicit(&words[w], memory_order_relaxed));
    }
    return n;
}

static void stress(dc_strategy_t strategy, dc_partitioner_t partitioner)
{
    run_t run = {.items = items_per_producer()};
    size_t words = (run.items + 63) / 64;
    for (int p = 0; p < PRODUCERS; p++) {
        run.bitmap[p] = calloc(words, sizeof(uint64_t));
        cr_assert_not_null(run.bitmap[p]);
        run.records[p] = calloc(run.items, sizeof(record_t));
        cr_assert_not_null(run.records[p]);
    }
    char err[256];
    cr_assert_eq(
        dc_carrier_create("stress", 4, 256, strategy, partitioner, &run.carrier, err, sizeof err),
        DC_OK, "%s", err);
    cr_assert_eq(dc_consume(run.carrier, check_batch, count_exit, &run, CONSUMERS, 20), 0);

    pthread_t threads[PRODUCERS];
    producer_arg_t args[PRODUCERS];
    for (uint32_t p = 0; p < PRODUCERS; p++) {
        args[p] = (producer_arg_t){&run, p};
        cr_assert_eq(pthread_create(&threads[p], NULL, producer_main, &args[p]), 0);
    }
    for (int p = 0; p < PRODUCERS; p++) {
        pthread_join(threads[p], NULL);
    }
    cr_assert_eq(dc_carrier_shutdown(run.carrier), 0);

    dc_stats_t st;
    dc_carrier_stats(run.carrier, &st);
    uint64_t attempted = (uint64_t)PRODUCERS * run.items;
    uint64_t accepted = 0, marked = 0;
    for (int p = 0; p < PRODUCERS; p++) {
        accepted += atomic_load(&run.accepted[p]);
        marked += bits_set(run.bitmap[p], run.items);
    }
    cr_expect_eq(atomic_load(&run.torn), 0, "%llu torn items",
                 (unsigned long long)atomic_load(&run.torn));
    cr_expect_eq(atomic_load(&run.duplicates), 0, "%llu duplicated items",
                 (unsigned long long)atomic_load(&run.duplicates));
    cr_expect_eq(marked, accepted, "%llu distinct items seen, %llu accepted by dc_produce",
                 (unsigned long long)marked, (unsigned long long)accepted);
    cr_expect_eq(st.produced, accepted, "stats.produced %llu != accepted %llu",
                 (unsigned long long)st.produced, (unsigned long long)accepted);
    cr_expect_eq(st.consumed, st.produced, "consumed %llu != produced %llu",
                 (unsigned long long)st.consumed, (unsigned long long)st.produced);
    cr_expect_eq(st.consumed + st.dropped, attempted, "consumed+dropped %llu != attempted %llu",
                 (unsigned long long)(st.consumed + st.dropped), (unsigned long long)attempted);
    cr_expect_eq(atomic_load(&run.seen), st.consumed);
    cr_expect_eq(st.rejected, 0);
    cr_expect_eq(st.pending, 0);
    cr_expect_eq(atomic_load(&run.exits), 1, "on_exit ran %d times", atomic_load(&run.exits));
    if (strategy == DC_STRATEGY_BLOCKING) {
        cr_expect_eq(st.dropped, 0, "BLOCKING dropped %llu items", (unsigned long long)st.dropped);
        cr_expect_eq(marked, attempted, "BLOCKING: every item must arrive");
    }
    cr_log_info("strategy %d: attempted %llu consumed %llu dropped %llu", (int)strategy,
                (unsigned long long)attempted, (unsigned long long)st.consumed,
                (unsigned long long)st.dropped);
    dc_carrier_destroy(run.carrier);
    for (int p = 0; p < PRODUCERS; p++) {
        free(run.bitmap[p]);
        free(run.records[p]);
    }
}

Test(datacarrier_stress, if_possible_rolling, .timeout = 280)
{
    stress(DC_STRATEGY_IF_POSSIBLE, dc_partitioner_rolling(4));
}

Test(datacarrier_stress, if_possible_thread, .timeout = 280)
{
    stress(DC_STRATEGY_IF_POSSIBLE, dc_partitioner_thread(4));
}

Test(datacarrier_stress, blocking_rolling, .timeout = 280)
{
    stress(DC_STRATEGY_BLOCKING, dc_partitioner_rolling(1));
}

Test(datacarrier_stress, blocking_thread, .timeout = 280)
{
    stress(DC_STRATEGY_BLOCKING, dc_partitioner_thread(1));
}
