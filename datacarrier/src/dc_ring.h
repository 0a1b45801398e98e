/*
 * dc_ring.h - one bounded ring of pointer slots: many producers, ONE consumer (a bounded queue
 * after Vyukov's and ck_ring's, restricted to a single consumer).
 *
 *   operation             may run concurrently with
 *   --------------------  -------------------------------------------------------------
 *   dc__ring_push         any number of pushes, the owning consumer, dc__ring_close
 *   dc__ring_push_wait    same as dc__ring_push
 *   dc__ring_drain*       pushes and dc__ring_close; only ever the ONE owning consumer thread
 *   dc__ring_close        pushes and the consumer; once
 *
 * Slot protocol. Positions p = 0, 1, 2, ... map to slot p & mask; a slot is one pointer, NULL
 * while empty (items are never NULL: dc_produce refuses them). Two things govern a slot:
 *   head            (consumer's line) the next position the consumer will take; every slot
 *                   of a position below head has been read and cleared by the consumer.
 *   slot != NULL    the item for the slot's current position is published.
 * A producer may claim p only when p - head < capacity (position p - cap, the slot's previous
 * lap, was taken and cleared); it claims p by CAS on `tail`, then stores the item (release).
 * Two producers never write one slot (the CAS gives p to one of them) and no write is torn or
 * lost: the Java Buffer's check-then-write race on a plain array cannot happen here. The
 * consumer takes a run of non-NULL slots, clears each (a relaxed store), then publishes its new
 * head with ONE release store. The clear happens before the next lap's store (through head's
 * release/acquire), so that store comes later in the slot's modification order, and the
 * consumer, which reads its own clear or something later, never mistakes the old item for a
 * new one. Slots are 8 bytes: a 64-byte line carries 8 items between the cores.
 *
 * Why not a free test on the slot (Vyukov's seq == p, or slot == NULL): a producer probing a
 * full ring would read a slot line the consumer is reading and writing at that moment, and every
 * probe would pull the line away from the consumer, which is exactly when the consumer must run
 * fastest. Instead producers keep `head_cache` on their own line (ck_ring's cached consumer
 * position): a ring looks full from that line alone, and only then does a producer read `head`
 * (a line the consumer writes once per drain) and refresh the cache.
 *
 * Closing. dc__ring_close sets DC__RING_CLOSED in `tail` with one atomic RMW. A producer's
 * claim CAS is on the same word, so in its modification order every claim is either before the
 * close (the position is below the final tail and its item will be consumed) or fails and sees
 * the bit (the push returns DC__PUSH_CLOSED). Nothing is stored after the close.
 */
#ifndef DC_RING_H
#define DC_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dc_sync.h"

#define DC__RING_CLOSED (UINT64_C(1) << 63)

struct dc__consumer;

typedef struct dc__slot {
    _Atomic(void *) item; /* NULL = empty; see the slot protocol above */
} dc__slot_t;

typedef enum dc__push_result {
    DC__PUSH_OK = 0,
    DC__PUSH_FULL,
    DC__PUSH_CLOSED,
} dc__push_result_t;

typedef struct dc__ring {
    /* Producers' line: the next position to claim, | DC__RING_CLOSED once closed. Written by
       producers (claim CAS) and dc__ring_close; read by the consumer to see the final tail. */
    alignas(DC__CACHE_LINE) _Atomic uint64_t tail;
    /* A value `head` had at some point (head only grows, so this never overstates the room).
       Written by producers only when the ring looks full, with release after their acquire load
       of head; read with acquire (partner: that release store), so a producer that passes the
       room test through the cache also happens after the consumer's reads it relies on. */
    _Atomic uint64_t head_cache;

    /* Read-mostly line, set up before the ring is shared; `owner` is written once by
       dc_consume (seq_cst, see dc__consumer_attach) and read by every producer. */
    alignas(DC__CACHE_LINE) dc__slot_t *slots;
    uint64_t mask; /* capacity - 1; capacity is a power of two */
    bool blocking; /* BLOCKING carrier: the consumer signals `space_gen` after each drain */
    _Atomic(struct dc__consumer *) owner;

    /* BLOCKING producers' waiting line: `space_waiters` counts producers inside the wait
       protocol of dc__ring_push_wait; `space_gen` is the futex word the consumer (and
       dc__ring_close) bump after freeing slots. See dc__ring_push_wait for the argument. */
    alignas(DC__CACHE_LINE) _Atomic uint32_t space_waiters;
    _Atomic uint32_t space_gen;

    /* Counters touched only on slow paths (relaxed: pure statistics, read by stats). */
    alignas(DC__CACHE_LINE) _Atomic uint64_t dropped;
    _Atomic uint64_t rejected;

    /* Consumer's line: the next position to take. Written only by the owning consumer, once per
       drain (release, partner: the producers' acquire load in dc__ring_push); read by the
       consumer (relaxed: its own writes) and by producers that find the ring looking full. */
    alignas(DC__CACHE_LINE) _Atomic uint64_t head;
} dc__ring_t;

/* Initialises `ring` over `slots` (capacity entries, a power of two). Not thread-safe. */
void dc__ring_init(dc__ring_t *ring, dc__slot_t *slots, uint64_t capacity, bool blocking);

/* The slow half of the room test: reads head and, when it moved past `cached` (the value this
   producer holds), refreshes head_cache. Returns the fresh head. A full ring is the common case
   here under overload, and then nothing is stored: the probe writes no shared line. */
static inline uint64_t dc__ring_head_refresh(dc__ring_t *ring, uint64_t cached)
{
    /* acquire: pairs with the consumer's release store of head in dc__ring_drain: its reads of
       the items below head happen before our overwrite of their slots. */
    uint64_t head = atomic_load_explicit(&ring->head, memory_order_acquire);
    if (head != cached) {
        /* release: pairs with the acquire load of head_cache in dc__ring_push (other
           producers), passing on the ordering we just acquired. */
        atomic_store_explicit(&ring->head_cache, head, memory_order_release);
    }
    return head;
}

/*
 * Claims a slot and stores item. Never blocks; lock-free (a failed CAS means another producer
 * made progress). Returns OK, FULL (no slot free right now) or CLOSED. Any thread.
 */
static inline dc__push_result_t dc__ring_push(dc__ring_t *ring, void *item)
{
    int64_t cap = (int64_t)(ring->mask + 1);
    /* relaxed: only a hint; the CAS below re-validates it against the word itself. */
    uint64_t pos = atomic_load_explicit(&ring->tail, memory_order_relaxed);
    /* acquire: pairs with the release store in dc__ring_head_refresh (see head_cache). */
    uint64_t head = atomic_load_explicit(&ring->head_cache, memory_order_acquire);
    for (;;) {
        if (pos & DC__RING_CLOSED) {
            return DC__PUSH_CLOSED;
        }
        /* Signed: a stale pos may lie below a fresh head; it passes, and the CAS then fails. */
        if ((int64_t)(pos - head) >= cap) {
            head = dc__ring_head_refresh(ring, head);
            if ((int64_t)(pos - head) >= cap) {
                return DC__PUSH_FULL; /* position pos - cap is not taken yet */
            }
        }
        /* seq_cst on success: this claim is the producer half of the "consumer sleeping"
           Dekker pair (partner: the consumer's seq_cst store of `sleeping` followed by its
           seq_cst load of `tail` in consumer_idle (dc_consumer.c)). On x86 a locked CAS costs
           the same in every order. relaxed on failure: we only retry with the fresh value,
           and the room test is redone for it. */
        if (atomic_compare_exchange_weak_explicit(&ring->tail, &pos, pos + 1, memory_order_seq_cst,
                                                  memory_order_relaxed)) {
            /* release: pairs with the consumer's acquire load of the slot in dc__ring_drain;
               publishes whatever the caller wrote into the item before dc_produce. */
            atomic_store_explicit(&ring->slots[pos & ring->mask].item, item, memory_order_release);
            return DC__PUSH_OK;
        }
    }
}

/*
 * BLOCKING push: spins briefly, then sleeps on a futex until the consumer frees a slot or the
 * ring is closed. Returns OK or CLOSED (never FULL). Any thread; blocks only on the consumer.
 */
dc__push_result_t dc__ring_push_wait(dc__ring_t *ring, void *item);

/*
 * Moves up to `room` published items, in order, into out[]; stops at the first slot that is not
 * published yet. Returns the count. Owning consumer thread only. Never blocks.
 */
size_t dc__ring_drain(dc__ring_t *ring, void **out, size_t room);

/*
 * After dc__ring_close: moves every item claimed before the close into out[] (room must be
 * at least the capacity), waiting (yield) for claimed slots whose producer has not yet
 * published. Returns the count. Owning consumer thread only.
 */
size_t dc__ring_drain_final(dc__ring_t *ring, void **out, size_t room);

/* True when a position was claimed past the consumer's head. seq_cst load of tail: see
   consumer_idle (dc_consumer.c). Owning consumer thread only. */
static inline bool dc__ring_has_claims(dc__ring_t *ring)
{
    uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_seq_cst);
    /* relaxed: head is written only by this thread. */
    return (tail & ~DC__RING_CLOSED) != atomic_load_explicit(&ring->head, memory_order_relaxed);
}

/* Items claimed in `ring` and not yet taken, as seen now (a stale head only overestimates; a
   head newer than the tail read first wraps to a huge value: also an overestimate). Only a
   heuristic for waking a napping consumer, so both loads are relaxed; head_cache would not do,
   since producers refresh it only when the ring looks full. The consumer does not write head
   while it naps, so the line stays shared and the load is cheap. Any thread. */
static inline uint64_t dc__ring_fill(dc__ring_t *ring)
{
    uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed) & ~DC__RING_CLOSED;
    return tail - atomic_load_explicit(&ring->head, memory_order_relaxed);
}

/* Closes the ring to producers and wakes its BLOCKING waiters. Returns the final tail. */
uint64_t dc__ring_close(dc__ring_t *ring);

/* Items ever stored (claims, exact once producers are quiescent). Any thread. */
static inline uint64_t dc__ring_stored(const dc__ring_t *ring)
{
    /* relaxed: statistics; dc_carrier_stats orders it after the consumed counters. */
    return atomic_load_explicit(&((dc__ring_t *)ring)->tail, memory_order_relaxed) &
           ~DC__RING_CLOSED;
}

#endif /* DC_RING_H */
