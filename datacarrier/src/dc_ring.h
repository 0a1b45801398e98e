/*
 * dc_ring.h - one bounded ring of pointer slots: many producers, ONE consumer (Vyukov's
 * bounded queue with a per-slot sequence number, restricted to a single consumer).
 *
 *   operation             may run concurrently with
 *   --------------------  -------------------------------------------------------------
 *   dc__ring_push         any number of pushes, the owning consumer, dc__ring_close
 *   dc__ring_push_wait    same as dc__ring_push
 *   dc__ring_drain*       pushes and dc__ring_close; only ever the ONE owning consumer thread
 *   dc__ring_close        pushes and the consumer; once
 *
 * Slot protocol. Slot i starts with seq == i. For the position p that maps to it:
 *   seq == p        the slot is free for the producer that claims position p;
 *   seq == p + 1    the item for position p is published; the consumer may take it;
 *   seq == p + cap  the consumer has taken it; free for position p + cap (the next lap).
 * A producer claims p by CAS on `tail` only after it saw seq == p, writes the item, then
 * publishes seq = p + 1 (release). So two producers never write one slot (the CAS gives p to
 * one of them) and no write is torn or lost: the Java Buffer's check-then-write race on a plain
 * array cannot happen here.
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
    _Atomic uint64_t seq; /* see the slot protocol above */
    void *item;           /* plain: ordered by seq (written before seq's release store by the
                             producer, read after seq's acquire load by the consumer) */
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

    /* Consumer-private line: the next position to take. Only the owning consumer thread reads
       or writes it (and dc_carrier_stats never does), so it needs no atomic. */
    alignas(DC__CACHE_LINE) uint64_t head;
} dc__ring_t;

/* Initialises `ring` over `slots` (capacity entries, a power of two). Not thread-safe. */
void dc__ring_init(dc__ring_t *ring, dc__slot_t *slots, uint64_t capacity, bool blocking);

/*
 * Claims a slot and stores item. Never blocks; lock-free (a failed CAS means another producer
 * made progress). Returns OK, FULL (no slot free right now) or CLOSED. Any thread.
 */
static inline dc__push_result_t dc__ring_push(dc__ring_t *ring, void *item)
{
    /* relaxed: only a hint; the CAS below re-validates it against the word itself. */
    uint64_t pos = atomic_load_explicit(&ring->tail, memory_order_relaxed);
    for (;;) {
        if (pos & DC__RING_CLOSED) {
            return DC__PUSH_CLOSED;
        }
        dc__slot_t *slot = &ring->slots[pos & ring->mask];
        /* acquire: pairs with the consumer's release store of seq = p + cap in dc__ring_drain,
           so the consumer's read of the old item happens before our write below. */
        uint64_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
        int64_t diff = (int64_t)(seq - pos);
        if (diff == 0) {
            /* seq_cst on success: this claim is the producer half of the "consumer sleeping"
               Dekker pair (partner: the consumer's seq_cst store of `sleeping` followed by its
               seq_cst load of `tail` in consumer_idle (dc_consumer.c)). On x86 a locked CAS costs
               the same in every order. relaxed on failure: we only retry with the fresh value. */
            if (atomic_compare_exchange_weak_explicit(&ring->tail, &pos, pos + 1,
                                                      memory_order_seq_cst, memory_order_relaxed)) {
                slot->item = item;
                /* release: pairs with the consumer's acquire load of seq in dc__ring_drain;
                   publishes the item write above. */
                atomic_store_explicit(&slot->seq, pos + 1, memory_order_release);
                return DC__PUSH_OK;
            }
        } else if (diff < 0) {
            return DC__PUSH_FULL; /* the slot still holds the previous lap's item */
        } else {
            /* Another producer claimed pos already; relaxed reload as above. */
            pos = atomic_load_explicit(&ring->tail, memory_order_relaxed);
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
    return (tail & ~DC__RING_CLOSED) != ring->head;
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
