/*
 * segment_pool.h - recycles segment blocks between application threads and the consumer
 * (internal). No allocation in steady state; no lock anywhere; a fixed cap on blocks.
 *
 * Concurrency contract (the lock-free list of free_list.h, which has no ABA problem):
 *
 *   operation                   who                    may run concurrently with
 *   --------------------------  ---------------------  -------------------------------------
 *   sw__segment_pool_push_chain any thread             everything but pool_destroy
 *   refill (exchange, then CAS) sw__segment_cache_get  everything but pool_destroy
 *   sw__segment_cache_get/put   the owning thread      everything (the cache is thread-private)
 *   sw__segment_pool_destroy    sw_shutdown            nothing touching the free list
 *
 * Producers of free blocks (the consumer thread, exiting threads) push chains with a CAS;
 * application threads take the WHOLE list with one exchange, use one block, keep up to
 * SW__SEGMENT_CACHE_MAX more in their private cache and give the rest back with one CAS onto
 * the (normally still empty) list: O(1), the rest is never walked (rest_give_back).
 *
 * Bound. At most `max_blocks` blocks exist at once (`allocated` never exceeds it; blocks are
 * freed only by pool_destroy, so it is also the number ever allocated by the run). A thread
 * whose cache and the free list are empty allocates a new block only below the cap; at the cap
 * (or when malloc fails) sw__segment_cache_get returns NULL and the caller records nothing.
 * Every block is in one of
 *   - threads building a segment      1 each, 2 with a segment set aside (span_mark.h)
 *   - per-thread caches               <= the cache credits, min(SW__SEGMENT_CACHE_CREDITS, max/4)
 *   - the free list, or in a refill's hands for a few instructions
 *   - only for segments of more than 16 spans (encode/segment_item.h; smaller ones are encoded
 *     by their thread and the block reused at once): the carrier's rings (<= R = channels *
 *     ring size, rounded up to a power of 2) and the consumer's batch (<= R),
 * so the cap bounds the traces open at the same time plus the big segments waiting. The
 * agent's default cap (sw__segment_pool_default_max) is 2R + SW__SEGMENT_POOL_MARGIN, R = the
 * DataCarrier's slots: room for a full carrier and batch of big segments plus the credits and
 * 128 blocks held by threads. Worst-case memory: cap * block_size; at the
 * defaults (5 channels x 300 -> 512 slots, 300 spans, 16 KiB arena) that is 5376 blocks x
 * 32,424 bytes = 174 MB (166 MiB), reached only with that many traces open at once;
 * SW_AGENT_MAX_SEGMENTS sets a smaller cap.
 *
 * No starvation by caches: a cache may hold a block only with a credit from the pool's fixed
 * budget (taken at refill, all returned when the cache empties or its thread exits), so idle
 * threads can never sit on more than SW__SEGMENT_CACHE_CREDITS blocks in total, whatever the
 * number of threads. A taker that finds the list empty at the cap while another thread is in
 * the middle of a refill waits (bounded) for that refill's give-back instead of failing.
 */
#ifndef SW_SEGMENT_SEGMENT_POOL_H
#define SW_SEGMENT_SEGMENT_POOL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "segment.h"

#define SW__SEGMENT_CACHE_MAX     8          /* blocks one thread may cache */
#define SW__SEGMENT_CACHE_CREDITS 128        /* blocks all caches together may hold */
#define SW__SEGMENT_POOL_MARGIN   256        /* derived cap: 2R + this */
#define SW__SEGMENT_POOL_MAX      (1u << 24) /* largest cap accepted */

typedef struct sw__segment_pool {
    /* The free blocks (free_list.h: a taker sees every write the pusher made to them). */
    sw__free_list_t free;
    /* Threads between their refill's exchange and its give-back (a hint: relaxed). */
    _Atomic uint32_t refilling;
    /* Credits left for caches (see above). RMW with relaxed order: credits order nothing,
       the blocks themselves are published through the free list. */
    _Atomic int64_t cache_credits;
    /* Blocks allocated by this run and not freed: <= max_blocks. Reserved with a relaxed CAS
       before malloc (a counter, no data published through it); read by tests and benches. */
    _Atomic uint64_t allocated;
    /* Immutable after init. */
    uint64_t max_blocks;
    size_t block_size;
    uint32_t span_limit;
    uint32_t arena_cap;
} sw__segment_pool_t;

/* A thread's private cache of free blocks (lives in the thread's context). Owning thread only.
   count <= credits: the credits taken from the pool for this cache. */
typedef struct sw__segment_cache {
    sw__segment_t *head;
    uint32_t count;
    uint32_t credits;
} sw__segment_cache_t;

/*
 * The cap the agent uses when SW_AGENT_MAX_SEGMENTS is 0: 2 * carrier_slots + the margin,
 * clamped to SW__SEGMENT_POOL_MAX. `carrier_slots` is the sum of the carrier's ring sizes as the
 * carrier rounds them. Pure.
 */
uint64_t sw__segment_pool_default_max(uint64_t carrier_slots);

/* Returns 0, or SW_EINVAL for limits out of range or max_blocks not in 1..SW__SEGMENT_POOL_MAX.
   Allocates nothing. Caller: sw_init, before any thread may use the pool. */
int sw__segment_pool_init(sw__segment_pool_t *pool, uint32_t span_limit, uint32_t arena_cap,
                          uint64_t max_blocks);

/* Frees every block on the free list (not those held elsewhere). Caller: sw_shutdown. */
void sw__segment_pool_destroy(sw__segment_pool_t *pool);

/* Pushes the chain first..last (linked through link.next) onto the free list. Lock-free. */
void sw__segment_pool_push_chain(sw__segment_pool_t *pool, sw__segment_t *first,
                                 sw__segment_t *last);

/*
 * Returns a reset block: from the cache, else refilled from the free list, else newly allocated
 * below the cap. Returns NULL when the cap is reached and no block is free (after a bounded
 * wait for a refill in progress elsewhere), or when malloc fails; nothing changes then.
 * Owning thread only; never blocks on a lock.
 */
sw__segment_t *sw__segment_cache_get(sw__segment_cache_t *cache, sw__segment_pool_t *pool);

/* Returns a block to the thread's cache when it has a spare credit, else to the free list.
   Owning thread only. */
void sw__segment_cache_put(sw__segment_cache_t *cache, sw__segment_pool_t *pool,
                           sw__segment_t *seg);

/* Moves the whole cache to the pool's free list and returns its credits (thread exit). */
void sw__segment_cache_flush(sw__segment_cache_t *cache, sw__segment_pool_t *pool);

/* Frees the blocks of a cache whose pool is gone (a previous agent run); forgets its credits,
   which belonged to that run's pool. */
void sw__segment_cache_free(sw__segment_cache_t *cache);

#endif /* SW_SEGMENT_SEGMENT_POOL_H */
