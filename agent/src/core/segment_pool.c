/*
 * segment_pool.c - lock-free free list of segment blocks, per-thread caches backed by a fixed
 * budget of credits, and the cap on blocks.
 */
#include "segment_pool.h"

#include <stdlib.h>

/* Bounds of the wait for another thread's give-back (see refill_wait): pause iterations per
   wait, and waits per get. At most ~10 us on an application thread, and only when the pool is
   at its cap: overload is answered by a counted drop, not by waiting. */
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
    atomic_init(&pool->free_head, NULL);
    atomic_init(&pool->refilling, 0);
    atomic_init(&pool->cache_credits, (int64_t)credits);
    atomic_init(&pool->allocated, 0);
    pool->max_blocks = max_blocks;
    pool->block_size = size;
    pool->span_limit = span_limit;
    pool->arena_cap = arena_cap;
    return 0;
}

void sw__segment_pool_destroy(sw__segment_pool_t *pool)
{
    /* acquire: partner of the pushers' release CAS, so their last writes precede free(). */
    sw__segment_t *seg = atomic_exchange_explicit(&pool->free_head, NULL, memory_order_acquire);
    while (seg != NULL) {
        sw__segment_t *next = seg->next;
        free(seg);
        seg = next;
    }
}

void sw__segment_pool_push_chain(sw__segment_pool_t *pool, sw__segment_t *first,
                                 sw__segment_t *last)
{
    sw__segment_t *head = atomic_load_explicit(&pool->free_head, memory_order_relaxed);
    do {
        last->next = head;
        /* release: publishes the blocks' contents and links to the acquire exchange in
           refill / rest_give_back / pool_destroy. A failed CAS reloads head (relaxed: we only
           link to it, the success path republishes). */
    } while (!atomic_compare_exchange_weak_explicit(&pool->free_head, &head, first,
                                                    memory_order_release, memory_order_relaxed));
}

/*
 * Gives `rest` (a chain whose tail we do not know) back to the free list in O(1) when the list
 * is still empty, which it almost always is: we emptied it a few instructions ago. If someone
 * pushed meanwhile, we take what they pushed (only the pushes of that short window), walk it to
 * its tail, put `rest` behind it and try again. Each node is walked at most once per such race,
 * so the cost is O(1) amortised per push, whatever the length of the list. The CAS from NULL has
 * no ABA problem: whenever it succeeds the list is empty, and `rest` becomes all of it.
 */
static void rest_give_back(sw__segment_pool_t *pool, sw__segment_t *rest)
{
    for (;;) {
        sw__segment_t *expected = NULL;
        /* release: republishes the blocks of `rest` (which we acquired in the refill) to the
           next taker's acquire exchange. relaxed on failure: we only learn that it is not
           empty and take it below. */
        if (atomic_compare_exchange_strong_explicit(&pool->free_head, &expected, rest,
                                                    memory_order_release, memory_order_relaxed)) {
            return;
        }
        /* acquire: partner of the release CAS in push_chain (or of ours, by another taker). */
        sw__segment_t *fresh =
            atomic_exchange_explicit(&pool->free_head, NULL, memory_order_acquire);
        if (fresh == NULL) {
            continue; /* another taker emptied it first: try the empty case again */
        }
        sw__segment_t *tail = fresh;
        while (tail->next != NULL) {
            tail = tail->next;
        }
        tail->next = rest;
        rest = fresh;
    }
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
        /* relaxed: only a hint when to retry; the exchange that follows acquires. */
        if (atomic_load_explicit(&pool->free_head, memory_order_relaxed) != NULL) {
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
    while (kept < credits && keep_last->next != NULL) {
        keep_last = keep_last->next;
        kept++;
    }
    credits_return(pool, credits - kept);
    sw__segment_t *rest = keep_last->next;
    keep_last->next = NULL;
    cache->head = list;
    cache->count = kept;
    cache->credits = kept;
    return rest;
}

/* The cache is empty: takes the whole free list, uses its first block, keeps a few more in the
   cache and gives the rest back without walking it. Falls back to a new block below the cap. */
static __attribute__((noinline)) sw__segment_t *cache_refill(sw__segment_cache_t *cache,
                                                             sw__segment_pool_t *pool)
{
    for (int round = 0;; round++) {
        /* relaxed: a hint for refill_wait, which only decides whether to look again. */
        atomic_fetch_add_explicit(&pool->refilling, 1, memory_order_relaxed);
        /* acquire: partner of the release CAS in push_chain / rest_give_back. Taking the whole
           list at once is what makes this ABA-free: nobody pops one node from a shared head. */
        sw__segment_t *list =
            atomic_exchange_explicit(&pool->free_head, NULL, memory_order_acquire);
        if (list != NULL) {
            sw__segment_t *rest = cache_keep(cache, pool, list->next);
            if (rest != NULL) {
                rest_give_back(pool, rest);
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

sw__segment_t *sw__segment_cache_get(sw__segment_cache_t *cache, sw__segment_pool_t *pool)
{
    sw__segment_t *seg = cache->head;
    if (seg == NULL) {
        return cache_refill(cache, pool);
    }
    cache->head = seg->next;
    if (--cache->count == 0) {
        credits_return(pool, cache->credits); /* an idle thread holds no credit */
        cache->credits = 0;
    }
    sw__segment_reset(seg);
    return seg;
}

void sw__segment_cache_put(sw__segment_cache_t *cache, sw__segment_pool_t *pool, sw__segment_t *seg)
{
    if (cache->count >= cache->credits) {
        sw__segment_pool_push_chain(pool, seg, seg);
        return;
    }
    seg->next = cache->head;
    cache->head = seg;
    cache->count++;
}

void sw__segment_cache_flush(sw__segment_cache_t *cache, sw__segment_pool_t *pool)
{
    if (cache->head != NULL) {
        sw__segment_t *last = cache->head;
        while (last->next != NULL) {
            last = last->next;
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
        sw__segment_t *next = seg->next;
        free(seg);
        seg = next;
    }
    cache->head = NULL;
    cache->count = 0;
    cache->credits = 0;
}
