/*
 * segment_pool.c - lock-free free list of segment blocks, per-thread caches backed by a fixed
 * budget of credits, and the cap on blocks.
 */
#include "segment_pool.h"
#include "../util/locality.h"

#include <stdlib.h>

/* Bounds of the wait for another thread's give-back (see refill_wait): pause iterations per
   wait, and waits per get. At most 2 x 128 PAUSE instructions on an application thread, and
   only when the pool is at its cap: overload is answered by a counted drop, not by waiting. */
#define REFILL_WAIT_SPINS  128
#define REFILL_WAIT_ROUNDS 2

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

uint64_t sw__segment_pool_default_max(uint64_t carrier_slots)
{
    uint64_t max = 2 * carrier_slots + SW__SEGMENT_POOL_MARGIN;
    return max > SW__SEGMENT_POOL_MAX ? SW__SEGMENT_POOL_MAX : max;
}

int sw__segment_pool_init(sw__segment_pool_t *pool, uint32_t span_limit, uint32_t arena_cap,
                          uint64_t max_blocks)
{
    size_t size = sw__segment_block_size(span_limit, arena_cap);
    if (size == 0 || max_blocks == 0 || max_blocks > SW__SEGMENT_POOL_MAX) {
        return SW_EINVAL;
    }
    uint64_t credits = max_blocks / 4;
    if (credits > SW__SEGMENT_CACHE_CREDITS) {
        credits = SW__SEGMENT_CACHE_CREDITS;
    }
    sw__free_list_init(&pool->free);
    atomic_init(&pool->refilling, 0);
    atomic_init(&pool->cache_credits, (int64_t)credits);
    atomic_init(&pool->allocated, 0);
    pool->max_blocks = max_blocks;
    pool->block_size = size;
    pool->span_limit = span_limit;
    pool->arena_cap = arena_cap;
    return 0;
}

/* The block whose link is `node` (its first member: free_list.h). */
static sw__segment_t *segment_of(sw__free_node_t *node)
{
    return (sw__segment_t *)(void *)node;
}

void sw__segment_pool_destroy(sw__segment_pool_t *pool)
{
    sw__free_list_free_all(&pool->free);
}

SW__HOT void sw__segment_pool_push_chain(sw__segment_pool_t *pool, sw__segment_t *first,
                                         sw__segment_t *last)
{
    sw__free_list_push_chain(&pool->free, &first->link, &last->link);
}

/* Takes up to `want` credits from the pool's budget; returns how many it got. */
static uint32_t credits_take(sw__segment_pool_t *pool, uint32_t want)
{
    /* relaxed throughout: a credit is a number, it publishes nothing. */
    int64_t have = atomic_load_explicit(&pool->cache_credits, memory_order_relaxed);
    int64_t got;
    do {
        if (have <= 0) {
            return 0;
        }
        got = have < (int64_t)want ? have : (int64_t)want;
    } while (!atomic_compare_exchange_weak_explicit(&pool->cache_credits, &have, have - got,
                                                    memory_order_relaxed, memory_order_relaxed));
    return (uint32_t)got;
}

static void credits_return(sw__segment_pool_t *pool, uint32_t n)
{
    if (n != 0) { /* relaxed: see credits_take */
        atomic_fetch_add_explicit(&pool->cache_credits, (int64_t)n, memory_order_relaxed);
    }
}

/* A new block if the cap allows and malloc succeeds, else NULL (the count is unchanged). */
static sw__segment_t *block_allocate(sw__segment_pool_t *pool)
{
    /* relaxed: `allocated` only counts; the CAS makes the cap exact across threads. */
    uint64_t n = atomic_load_explicit(&pool->allocated, memory_order_relaxed);
    do {
        if (n >= pool->max_blocks) {
            return NULL;
        }
    } while (!atomic_compare_exchange_weak_explicit(&pool->allocated, &n, n + 1,
                                                    memory_order_relaxed, memory_order_relaxed));
    sw__segment_t *seg = malloc(pool->block_size);
    if (seg == NULL) {
        atomic_fetch_sub_explicit(&pool->allocated, 1, memory_order_relaxed);
        return NULL;
    }
    sw__segment_format(seg, pool->span_limit, pool->arena_cap);
    return seg;
}

/*
 * At the cap with an empty list: if another thread is between its exchange and its give-back,
 * the list is only momentarily empty. Waits (bounded: a preempted taker must not stall us for
 * its time slice) until the list has blocks or no refill is in progress. Returns true when the
 * list is worth another exchange.
 */
static bool refill_wait(sw__segment_pool_t *pool)
{
    for (int i = 0; i < REFILL_WAIT_SPINS; i++) {
        /* only a hint when to retry; the exchange that follows acquires. */
        if (sw__free_list_peek(&pool->free)) {
            return true;
        }
        if (atomic_load_explicit(&pool->refilling, memory_order_relaxed) == 0) {
            return false;
        }
        cpu_relax();
    }
    return false;
}

/* Keeps up to `credits` blocks of `list` in the (empty) cache; returns the rest. */
static sw__segment_t *cache_keep(sw__segment_cache_t *cache, sw__segment_pool_t *pool,
                                 sw__segment_t *list)
{
    if (list == NULL) {
        return NULL;
    }
    uint32_t credits = credits_take(pool, SW__SEGMENT_CACHE_MAX);
    if (credits == 0) {
        return list;
    }
    sw__segment_t *keep_last = list;
    uint32_t kept = 1;
    while (kept < credits && keep_last->link.next != NULL) {
        keep_last = segment_of(keep_last->link.next);
        kept++;
    }
    credits_return(pool, credits - kept);
    sw__segment_t *rest = segment_of(keep_last->link.next);
    keep_last->link.next = NULL;
    cache->head = list;
    cache->count = kept;
    cache->credits = kept;
    return rest;
}

/* The cache is empty: takes the whole free list, uses its first block, keeps a few more in the
   cache and gives the rest back without walking it. Falls back to a new block below the cap. */
SW__HOT static __attribute__((noinline)) sw__segment_t *cache_refill(sw__segment_cache_t *cache,
                                                                     sw__segment_pool_t *pool)
{
    for (int round = 0;; round++) {
        /* relaxed: a hint for refill_wait, which only decides whether to look again. */
        atomic_fetch_add_explicit(&pool->refilling, 1, memory_order_relaxed);
        /* Taking the whole list at once is what makes this ABA-free: nobody pops one node from
           a shared head. */
        sw__segment_t *list = segment_of(sw__free_list_take_all(&pool->free));
        if (list != NULL) {
            sw__segment_t *rest = cache_keep(cache, pool, segment_of(list->link.next));
            if (rest != NULL) {
                sw__free_list_give_back(&pool->free, &rest->link);
            }
            atomic_fetch_sub_explicit(&pool->refilling, 1, memory_order_relaxed);
            sw__segment_reset(list);
            return list;
        }
        atomic_fetch_sub_explicit(&pool->refilling, 1, memory_order_relaxed);
        sw__segment_t *seg = block_allocate(pool);
        if (seg != NULL) {
            return seg;
        }
        if (round == REFILL_WAIT_ROUNDS || !refill_wait(pool)) {
            return NULL;
        }
    }
}

SW__HOT sw__segment_t *sw__segment_cache_get(sw__segment_cache_t *cache, sw__segment_pool_t *pool)
{
    sw__segment_t *seg = cache->head;
    if (seg == NULL) {
        return cache_refill(cache, pool);
    }
    cache->head = segment_of(seg->link.next);
    if (--cache->count == 0) {
        credits_return(pool, cache->credits); /* an idle thread holds no credit */
        cache->credits = 0;
    }
    sw__segment_prefetch_fresh(seg);
    sw__segment_reset(seg);
    return seg;
}

SW__HOT void sw__segment_cache_put(sw__segment_cache_t *cache, sw__segment_pool_t *pool,
                                   sw__segment_t *seg)
{
    if (cache->count >= cache->credits) {
        sw__segment_pool_push_chain(pool, seg, seg);
        return;
    }
    seg->link.next = cache->head != NULL ? &cache->head->link : NULL;
    cache->head = seg;
    cache->count++;
}

void sw__segment_cache_flush(sw__segment_cache_t *cache, sw__segment_pool_t *pool)
{
    if (cache->head != NULL) {
        sw__segment_t *last = cache->head;
        while (last->link.next != NULL) {
            last = segment_of(last->link.next);
        }
        sw__segment_pool_push_chain(pool, cache->head, last);
    }
    credits_return(pool, cache->credits);
    cache->head = NULL;
    cache->count = 0;
    cache->credits = 0;
}

void sw__segment_cache_free(sw__segment_cache_t *cache)
{
    sw__segment_t *seg = cache->head;
    while (seg != NULL) {
        sw__segment_t *next = segment_of(seg->link.next);
        free(seg);
        seg = next;
    }
    cache->head = NULL;
    cache->count = 0;
    cache->credits = 0;
}
