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

/* Values of dc__consumer.sleeping. */
enum {
    DC__AWAKE = 0,    /* draining or about to: producers do nothing */
    DC__SLEEPING = 1, /* in the idle protocol (consumer_idle): any store wakes it */
    DC__NAPPING = 2,  /* a short timed nap (consumer_nap): a store that finds its ring at least
                         half full wakes it, other stores wait for the nap's end */
};

typedef struct dc__consumer {
    /* Idle line, read by every producer after each store (dc__consumer_notify); written by this
       consumer only when it naps or goes idle, and by the one producer that wakes it. */
    alignas(DC__CACHE_LINE) _Atomic uint32_t sleeping; /* DC__AWAKE, DC__SLEEPING, DC__NAPPING */
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
 * Called by a producer after it stored into `ring`: wakes the owning consumer when it sleeps,
 * or when it naps and the ring is at least half full. In steady state (consumer awake, or
 * napping under light traffic) this is a few loads and no store, so producers pay no syscall
 * per item.
 */
static inline void dc__consumer_notify(dc__ring_t *ring)
{
    /* seq_cst: see dc__consumer_attach (a NULL owner means the consumer thread starts later and
       will look at the ring anyway). */
    dc__consumer_t *owner = atomic_load_explicit(&ring->owner, memory_order_seq_cst);
    /* seq_cst: the load half of the producer side of the Dekker pair (partner: the consumer's
       seq_cst store of sleeping = DC__SLEEPING then seq_cst load of tail in consumer_idle
       (dc_consumer.c); our half is the seq_cst claim CAS in dc__ring_push, then this load). Any
       value other than DC__SLEEPING read here precedes that store in the total order, so the
       consumer's tail load then sees our claim. DC__NAPPING needs no argument: a nap ends by
       itself after the consume cycle (dc_consumer.c) and is followed by a pass. */
    uint32_t state =
        owner != NULL ? atomic_load_explicit(&owner->sleeping, memory_order_seq_cst) : DC__AWAKE;
    if (state == DC__SLEEPING ||
        (state == DC__NAPPING && dc__ring_fill(ring) >= (ring->mask + 1) / 2)) {
        dc__consumer_wake(owner);
    }
}

/* Joins the started consumer threads and frees their batches. Lifecycle lock held. */
void dc__consumers_join(struct dc_carrier *carrier);

#endif /* DC_CONSUMER_H */
