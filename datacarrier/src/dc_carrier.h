/*
 * dc_carrier.h - the carrier object shared by the files of this library (internal).
 */
#ifndef DC_CARRIER_H
#define DC_CARRIER_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "dc_consumer.h"
#include "dc_ring.h"
#include "dc_sync.h"
#include "datacarrier.h"

typedef enum dc__state {
    DC__STATE_CREATED = 0, /* accepting items, no consumers */
    DC__STATE_CONSUMING,   /* accepting items, consumer threads running */
    DC__STATE_SHUT,        /* shutdown has begun or finished */
} dc__state_t;

/* Values of dc_carrier.stopping, read by consumer threads. */
enum { DC__RUN = 0, DC__STOP_DRAIN = 1, DC__STOP_NOW = 2 };

struct dc_carrier {
    /* Immutable after dc_carrier_create: read by producers without synchronisation (the
       carrier pointer reaches other threads through whatever the caller uses to share it,
       which orders these writes before their reads). */
    char name[32];
    uint32_t channel_count;
    dc_strategy_t strategy;
    dc_partitioner_t partitioner; /* state points at rolling_counter for the built-in rolling */
    uint32_t attempts;            /* max(1, partitioner.max_retry) */
    dc__ring_t *rings;            /* channel_count rings, cache-line aligned */
    dc__slot_t *slots;            /* channel_count * capacity slots */
    dc__consumer_t *consumers;    /* channel_count entries (the most dc_consume may start) */

    /* The built-in rolling partitioner's counter, alone on its line because every producer
       increments it (relaxed: only spreading matters, not order). */
    alignas(DC__CACHE_LINE) _Atomic uint32_t rolling_counter;

    /* Consumer-side control, read by consumer threads each pass. DC__RUN until shutdown;
       written with seq_cst after every ring is closed (partner: the consumers' acquire load). */
    alignas(DC__CACHE_LINE) _Atomic uint32_t stopping;

    /* Lifecycle. `lifecycle` protects state, n_consumers, consume_fn, on_exit and ctx; the
       consumer threads read consume_fn/ctx/n_consumers without it because dc_consume writes
       them before pthread_create. */
    alignas(DC__CACHE_LINE) pthread_mutex_t lifecycle;
    dc__state_t state;
    uint32_t n_consumers;
    uint32_t consume_cycle_ms;
    dc_consume_fn consume_fn;
    dc_on_exit_fn on_exit;
    void *ctx;
};

/* True for the partitioner returned by dc_partitioner_rolling (dc_channels.c). */
bool dc__partitioner_is_rolling(const dc_partitioner_t *p);

#endif /* DC_CARRIER_H */
