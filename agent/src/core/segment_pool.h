/*
 * segment_pool.h - recycles segment blocks between application threads and the consumer
 * (internal). No allocation in steady state; no lock anywhere.
 *
 * Concurrency contract (the kernel's llist.h shape, which has no ABA problem):
 *
 *   operation                   who                    may run concurrently with
 *   --------------------------  ---------------------  -------------------------------------
 *   sw__segment_pool_push_chain any thread             everything but pool_destroy
 *   refill (exchange, then CAS) sw__segment_cache_get  everything but pool_destroy
 *   sw__segment_cache_get/put   the owning thread      everything (the cache is thread-private)
 *   sw__segment_pool_destroy    sw_shutdown            nothing touching the free list
 *
 * Producers of free blocks (the consumer thread, exiting threads) push chains with a CAS;
 * application threads take the WHOLE list with one exchange into their private cache, keep up to
 * SW__SEGMENT_CACHE_MAX blocks and give the rest back with one CAS onto the (normally still
 * empty) list: O(1), the rest is never walked (rest_give_back in segment_pool.c). A thread whose
 * cache and the list are both empty allocates a new block (warm-up, or the queue holding many
 * segments).
 */
#ifndef SW_CORE_SEGMENT_POOL_H
#define SW_CORE_SEGMENT_POOL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "segment.h"

#define SW__SEGMENT_CACHE_MAX 16

typedef struct sw__segment_pool {
    /* Head of the free list. Pushers CAS with release (partner: the acquire exchange in
       the refill), so a taker sees every write the pusher made to the blocks it pushed. */
    _Atomic(sw__segment_t *) free_head;
    /* Blocks ever allocated and not yet freed: read by tests and sw_stats (relaxed). */
    _Atomic uint64_t allocated;
    /* Immutable after init. */
    size_t block_size;
    uint32_t span_limit;
    uint32_t arena_cap;
} sw__segment_pool_t;

/* A thread's private cache of free blocks (lives in the thread's context). */
typedef struct sw__segment_cache {
    sw__segment_t *head;
    uint32_t count;
} sw__segment_cache_t;

/* Returns 0 or SW_EINVAL for limits out of range. Allocates nothing. */
int sw__segment_pool_init(sw__segment_pool_t *pool, uint32_t span_limit, uint32_t arena_cap);

/* Frees every block on the free list (not those held elsewhere). Caller: sw_shutdown. */
void sw__segment_pool_destroy(sw__segment_pool_t *pool);

/* Pushes the chain first..last (linked through ->next) onto the free list. Lock-free. */
void sw__segment_pool_push_chain(sw__segment_pool_t *pool, sw__segment_t *first,
                                 sw__segment_t *last);

/*
 * Returns a reset block: from the cache, else refilled from the free list, else newly allocated
 * (NULL when malloc fails). Owning thread only.
 */
sw__segment_t *sw__segment_cache_get(sw__segment_cache_t *cache, sw__segment_pool_t *pool);

/* Returns a block to the thread's cache (when full, to the free list). Owning thread only. */
void sw__segment_cache_put(sw__segment_cache_t *cache, sw__segment_pool_t *pool,
                           sw__segment_t *seg);

/* Moves the whole cache to the pool's free list (thread exit). */
void sw__segment_cache_flush(sw__segment_cache_t *cache, sw__segment_pool_t *pool);

/* Frees the blocks of a cache whose pool is gone (a previous agent run). */
void sw__segment_cache_free(sw__segment_cache_t *cache);

#endif /* SW_CORE_SEGMENT_POOL_H */
