/*
 * dc_example.c - the DataCarrier in a few lines: two producer threads store numbered items,
 * one consumer thread sums them in batches, and the final counters are printed.
 *
 *   ./dc_example            exits 0 when consumed + dropped == attempted and nothing is lost
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "datacarrier.h"

enum { PRODUCERS = 2, ITEMS_PER_PRODUCER = 200000 };

struct totals {
    _Atomic uint64_t items; /* written by the consumer thread, read by main after shutdown */
    _Atomic uint64_t batches;
};

static void on_batch(void *ctx, void **items, size_t count)
{
    struct totals *t = ctx;
    for (size_t i = 0; i < count; i++) {
        (void)items[i]; /* a reporter would serialise the item here */
    }
    atomic_fetch_add_explicit(&t->items, count, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->batches, 1, memory_order_relaxed);
}

static void on_exit_cb(void *ctx)
{
    struct totals *t = ctx;
    printf("on_exit: consumer delivered %" PRIu64 " items in %" PRIu64 " batches\n",
           atomic_load_explicit(&t->items, memory_order_relaxed),
           atomic_load_explicit(&t->batches, memory_order_relaxed));
}

/* Stands in for the application's own work between two finished segments. */
static uint64_t application_work(uint64_t x)
{
    for (int i = 0; i < 200; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
    }
    return x;
}

static void *producer(void *arg)
{
    dc_carrier_t *carrier = arg;
    uint64_t state = 1;
    for (uintptr_t i = 1; i <= ITEMS_PER_PRODUCER; i++) {
        state = application_work(state);
        dc_produce(carrier, (void *)i); /* false = dropped, counted by the carrier */
    }
    return (void *)(uintptr_t)(state & 1); /* keeps the work from being optimised away */
}

int main(void)
{
    char err[256];
    /* SkyWalking's defaults: 5 channels of 300 (rounded up to 512), IF_POSSIBLE. */
    dc_carrier_t *carrier = NULL;
    if (dc_carrier_create("example", 5, 300, DC_STRATEGY_IF_POSSIBLE, dc_partitioner_rolling(5),
                          &carrier, err, sizeof err) != DC_OK) {
        fprintf(stderr, "dc_carrier_create: %s\n", err);
        return 1;
    }
    struct totals totals = {0};
    int rc = dc_consume(carrier, on_batch, on_exit_cb, &totals, 1, 20);
    if (rc != 0) {
        fprintf(stderr, "dc_consume: %s\n", dc_strerror(rc));
        return 1;
    }
    pthread_t threads[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) {
        pthread_create(&threads[i], NULL, producer, carrier);
    }
    for (int i = 0; i < PRODUCERS; i++) {
        pthread_join(threads[i], NULL);
    }
    dc_carrier_shutdown(carrier);
    dc_stats_t st;
    dc_carrier_stats(carrier, &st);
    dc_carrier_destroy(carrier);

    uint64_t attempted = (uint64_t)PRODUCERS * ITEMS_PER_PRODUCER;
    printf("attempted=%" PRIu64 " produced=%" PRIu64 " consumed=%" PRIu64 " dropped=%" PRIu64
           " rejected=%" PRIu64 " pending=%" PRIu64 "\n",
           attempted, st.produced, st.consumed, st.dropped, st.rejected, st.pending);
    int ok = st.produced + st.dropped == attempted && st.consumed == st.produced &&
             st.consumed == atomic_load_explicit(&totals.items, memory_order_relaxed);
    if (!ok) {
        fprintf(stderr, "dc_example: counters do not add up\n");
    }
    return ok ? 0 : 1;
}
