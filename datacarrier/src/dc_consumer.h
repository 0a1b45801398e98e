/*
 * dc_consumer.h - the consumer driver: threads that own rings (ring k belongs to thread
 * k % n), drain them into one batch per pass and sleep when idle until a producer wakes them.
 */
#ifndef DC_CONSUMER_H
#define DC_CONSUMER_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "dc_ring.h"
#include "dc_sync.h"
#include "datacarrier.h"

typedef struct dc__consumer {
    /* Idle line, read by every producer after each store (dc__consumer_notify); written by this
       consumer only when it goes idle, and by the one producer that wakes it. */
    alignas(DC__CACHE_LINE) _Atomic uint32_t sleeping; /* 1 while in the idle protocol */
    _Atomic uint32_t wake_word;                        /* futex word; bumped to wake */

    /* Items handed to consume_fn; written only by this consumer (release), read by stats. */
    alignas(DC__CACHE_LINE) _Atomic uint64_t consumed;

    /* Private to the thread; written by dc_consume before pthread_create (which orders it). */
    alignas(DC__CACHE_LINE) struct dc_carrier *carrier;
    uint32_t index;
    void **batch;
    size_t batch_cap;
    pthread_t thread;
    int started;
} dc__consumer_t;

/* Wakes `consumer` if it sleeps; out of line so the produce fast path stays small. */
void dc__consumer_wake(dc__consumer_t *consumer);

/*
 * Called by a producer after it stored into `ring`: wakes the owning consumer when it sleeps.
 * In steady state this is two loads and no store, so producers pay no syscall per item.
 */
static inline void dc__consumer_notify(dc__ring_t *ring)
{
    /* seq_cst: see dc__consumer_attach (a NULL owner means the consumer thread starts later and
       will look at the ring anyway). */
    dc__consumer_t *owner = atomic_load_explicit(&ring->owner, memory_order_seq_cst);
    /* seq_cst: the load half of the producer side of the Dekker pair (partner: the consumer's
       seq_cst store of sleeping = 1 then seq_cst load of tail in consumer_idle (dc_consumer.c); our
       half is the seq_cst claim CAS in dc__ring_push, then this load). */
    if (owner != NULL && atomic_load_explicit(&owner->sleeping, memory_order_seq_cst) != 0) {
        dc__consumer_wake(owner);
    }
}

/* Joins the started consumer threads and frees their batches. Lifecycle lock held. */
void dc__consumers_join(struct dc_carrier *carrier);

#endif /* DC_CONSUMER_H */
