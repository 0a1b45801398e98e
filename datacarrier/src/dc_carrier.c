/*
 * dc_carrier.c - the carrier's life: create (all memory up front), shutdown (close, drain,
 * join, on_exit), destroy, and the statistics.
 */
#include "dc_carrier.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dc_consumer.h"
#include "dc_ring.h"
#include "swc_errbuf.h"

/* The largest ring: positions are 63-bit, so any power of two up to this
   is safe; the cap keeps a typo from asking for terabytes. */
#define DC_BUFFER_SIZE_MAX (UINT32_C(1) << 30)

/* Rounds up to a power of two, at least 2. The slot protocol (dc_ring.h) would allow one slot;
   two is kept as the documented minimum (buffer_size 1 yields 2 slots, which tests check). */
static uint64_t round_up_pow2(uint32_t v)
{
    uint64_t p = 2;
    while (p < v) {
        p <<= 1;
    }
    return p;
}

/* Checks the arguments; returns the ring capacity, or 0 after writing the reason. */
static uint64_t arguments_check(const char *name, uint32_t channel_size, uint32_t buffer_size,
                                dc_strategy_t strategy, const dc_partitioner_t *partitioner,
                                char *errbuf, size_t errlen)
{
    if (name == NULL) {
        swc__errbuf_printf(errbuf, errlen, "dc_carrier_create: name must not be NULL");
        return 0;
    }
    if (channel_size == 0) {
        swc__errbuf_printf(errbuf, errlen,
                           "dc_carrier_create: channel_size must be at least 1 (got 0)");
        return 0;
    }
    if (buffer_size == 0) {
        swc__errbuf_printf(errbuf, errlen,
                           "dc_carrier_create: buffer_size must be at least 1 (got 0)");
        return 0;
    }
    if (buffer_size > DC_BUFFER_SIZE_MAX) {
        swc__errbuf_printf(errbuf, errlen,
                           "dc_carrier_create: buffer_size %u exceeds the maximum %u", buffer_size,
                           DC_BUFFER_SIZE_MAX);
        return 0;
    }
    uint64_t capacity = round_up_pow2(buffer_size);
    size_t bytes;
    if (__builtin_mul_overflow((size_t)channel_size, (size_t)capacity, &bytes) ||
        __builtin_mul_overflow(bytes, sizeof(dc__slot_t), &bytes)) {
        swc__errbuf_printf(
            errbuf, errlen,
            "dc_carrier_create: channel_size %u * buffer_size %u overflows the size of "
            "memory",
            channel_size, buffer_size);
        return 0;
    }
    if (strategy != DC_STRATEGY_BLOCKING && strategy != DC_STRATEGY_IF_POSSIBLE) {
        swc__errbuf_printf(errbuf, errlen,
                           "dc_carrier_create: strategy %d is unknown (use DC_STRATEGY_BLOCKING or "
                           "DC_STRATEGY_IF_POSSIBLE)",
                           (int)strategy);
        return 0;
    }
    if (partitioner->partition == NULL) {
        swc__errbuf_printf(errbuf, errlen,
                           "dc_carrier_create: partitioner.partition must not be NULL");
        return 0;
    }
    return capacity;
}

static void carrier_free(dc_carrier_t *c)
{
    free(c->consumers);
    free(c->slots);
    free(c->rings);
    free(c);
}

static void *aligned_calloc(size_t count, size_t size)
{
    size_t bytes = count * size; /* the callers checked the product */
    bytes = (bytes + DC__CACHE_LINE - 1) / DC__CACHE_LINE * DC__CACHE_LINE;
    void *p = aligned_alloc(DC__CACHE_LINE, bytes);
    if (p != NULL) {
        memset(p, 0, bytes);
    }
    return p;
}

int dc_carrier_create(const char *name, uint32_t channel_size, uint32_t buffer_size,
                      dc_strategy_t strategy, dc_partitioner_t partitioner, dc_carrier_t **out,
                      char *errbuf, size_t errlen)
{
    if (out == NULL) {
        swc__errbuf_printf(errbuf, errlen, "dc_carrier_create: out must not be NULL");
        return DC_EINVAL;
    }
    *out = NULL;
    uint64_t capacity =
        arguments_check(name, channel_size, buffer_size, strategy, &partitioner, errbuf, errlen);
    if (capacity == 0) {
        return DC_EINVAL;
    }
    dc_carrier_t *c = aligned_calloc(1, sizeof *c);
    if (c != NULL) {
        c->rings = aligned_calloc(channel_size, sizeof(dc__ring_t));
        c->slots = aligned_calloc((size_t)channel_size * capacity, sizeof(dc__slot_t));
        c->consumers = aligned_calloc(channel_size, sizeof(dc__consumer_t));
    }
    if (c == NULL || c->rings == NULL || c->slots == NULL || c->consumers == NULL) {
        swc__errbuf_printf(errbuf, errlen,
                           "dc_carrier_create: out of memory for %u channels of %llu slots",
                           channel_size, (unsigned long long)capacity);
        if (c != NULL) {
            carrier_free(c);
        }
        return DC_ENOMEM;
    }
    snprintf(c->name, sizeof c->name, "%s", name);
    c->channel_count = channel_size;
    c->strategy = strategy;
    c->partitioner = partitioner;
    c->attempts = partitioner.max_retry ? partitioner.max_retry : 1;
    atomic_init(&c->rolling_counter, 0);
    if (dc__partitioner_is_rolling(&partitioner)) {
        c->partitioner.state = (void *)&c->rolling_counter;
    }
    for (uint32_t k = 0; k < channel_size; k++) {
        dc__ring_init(&c->rings[k], c->slots + (size_t)k * capacity, capacity,
                      strategy == DC_STRATEGY_BLOCKING);
        atomic_init(&c->consumers[k].sleeping, 0);
        atomic_init(&c->consumers[k].wake_word, 0);
        atomic_init(&c->consumers[k].consumed, 0);
    }
    atomic_init(&c->stopping, DC__RUN);
    pthread_mutex_init(&c->lifecycle, NULL);
    c->state = DC__STATE_CREATED;
    *out = c;
    return DC_OK;
}

int dc_carrier_shutdown(dc_carrier_t *c)
{
    if (c == NULL) {
        return DC_EINVAL;
    }
    pthread_mutex_lock(&c->lifecycle);
    if (c->state == DC__STATE_SHUT) {
        pthread_mutex_unlock(&c->lifecycle);
        return DC_ESTATE;
    }
    bool had_consumers = c->state == DC__STATE_CONSUMING;
    c->state = DC__STATE_SHUT;
    /* 1. No claim succeeds after this; BLOCKING waiters wake and return false. */
    for (uint32_t k = 0; k < c->channel_count; k++) {
        dc__ring_close(&c->rings[k]);
    }
    /* 2. seq_cst (a release suffices for the partner): pairs with the consumers' acquire load
       of stopping; their final pass then sees every ring closed with its final tail. */
    atomic_store_explicit(&c->stopping, DC__STOP_DRAIN, memory_order_seq_cst);
    /* 3. Wake and join; each thread drains everything claimed before step 1. */
    dc__consumers_join(c);
    dc_on_exit_fn on_exit = c->on_exit;
    void *ctx = c->ctx;
    pthread_mutex_unlock(&c->lifecycle);
    if (had_consumers && on_exit != NULL) {
        on_exit(ctx);
    }
    return 0;
}

void dc_carrier_destroy(dc_carrier_t *c)
{
    if (c == NULL) {
        return;
    }
    pthread_mutex_lock(&c->lifecycle);
    bool shut = c->state == DC__STATE_SHUT;
    pthread_mutex_unlock(&c->lifecycle);
    if (!shut) {
        dc_carrier_shutdown(c);
    }
    pthread_mutex_destroy(&c->lifecycle);
    carrier_free(c);
}

void dc_carrier_stats(const dc_carrier_t *carrier, dc_stats_t *stats)
{
    if (stats == NULL) {
        return;
    }
    memset(stats, 0, sizeof *stats);
    if (carrier == NULL) {
        return;
    }
    dc_carrier_t *c = (dc_carrier_t *)carrier; /* atomics are read, never written */
    /* Consumed first (acquire, partner: the release store in consumer_pass), then the tails:
       every counted item's claim happens before, so produced >= consumed in one reading. */
    for (uint32_t i = 0; i < c->channel_count; i++) {
        stats->consumed += atomic_load_explicit(&c->consumers[i].consumed, memory_order_acquire);
    }
    for (uint32_t k = 0; k < c->channel_count; k++) {
        dc__ring_t *ring = &c->rings[k];
        stats->produced += dc__ring_stored(ring);
        /* relaxed: statistics (see count() in dc_channels.c). */
        stats->dropped += atomic_load_explicit(&ring->dropped, memory_order_relaxed);
        stats->rejected += atomic_load_explicit(&ring->rejected, memory_order_relaxed);
    }
    stats->pending = stats->produced - stats->consumed;
}
