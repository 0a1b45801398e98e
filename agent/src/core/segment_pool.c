/*
 * segment_pool.c - lock-free free list of segment blocks plus per-thread caches.
 */
#include "segment_pool.h"

#include <stdlib.h>

int sw__segment_pool_init(sw__segment_pool_t *pool, uint32_t span_limit, uint32_t arena_cap)
{
    size_t size = sw__segment_block_size(span_limit, arena_cap);
    if (size == 0)
        return SW_EINVAL;
    atomic_init(&pool->free_head, NULL);
    atomic_init(&pool->allocated, 0);
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
           sw__segment_cache_get / pool_destroy. A failed CAS reloads head (relaxed: we only
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
        /* release: republishes the blocks of `rest` (which we acquired in cache_refill) to the
           next taker's acquire exchange. relaxed on failure: we only learn that it is not
           empty and take it below. */
        if (atomic_compare_exchange_strong_explicit(&pool->free_head, &expected, rest,
                                                    memory_order_release, memory_order_relaxed))
            return;
        /* acquire: partner of the release CAS in push_chain (or of ours, by another taker). */
        sw__segment_t *fresh =
            atomic_exchange_explicit(&pool->free_head, NULL, memory_order_acquire);
        if (fresh == NULL)
            continue; /* another taker emptied it first: try the empty case again */
        sw__segment_t *tail = fresh;
        while (tail->next != NULL)
            tail = tail->next;
        tail->next = rest;
        rest = fresh;
    }
}

/* Takes the whole free list, keeps at most SW__SEGMENT_CACHE_MAX blocks in the cache and
   gives the rest back without walking it (rest_give_back). */
static void cache_refill(sw__segment_cache_t *cache, sw__segment_pool_t *pool)
{
    /* acquire: partner of the release CAS in push_chain. Taking the whole list at once is
       what makes this ABA-free: no thread ever pops a single node from a shared head. */
    sw__segment_t *list = atomic_exchange_explicit(&pool->free_head, NULL, memory_order_acquire);
    if (list == NULL)
        return;
    sw__segment_t *keep_last = list;
    uint32_t kept = 1;
    while (kept < SW__SEGMENT_CACHE_MAX && keep_last->next != NULL) {
        keep_last = keep_last->next;
        kept++;
    }
    sw__segment_t *rest = keep_last->next;
    keep_last->next = cache->head;
    cache->head = list;
    cache->count += kept;
    if (rest != NULL)
        rest_give_back(pool, rest);
}

sw__segment_t *sw__segment_cache_get(sw__segment_cache_t *cache, sw__segment_pool_t *pool)
{
    if (cache->head == NULL)
        cache_refill(cache, pool);
    sw__segment_t *seg = cache->head;
    if (seg != NULL) {
        cache->head = seg->next;
        cache->count--;
        sw__segment_reset(seg);
        return seg;
    }
    seg = malloc(pool->block_size);
    if (seg == NULL)
        return NULL;
    /* relaxed: a statistic, no ordering needed. */
    atomic_fetch_add_explicit(&pool->allocated, 1, memory_order_relaxed);
    sw__segment_format(seg, pool->span_limit, pool->arena_cap);
    return seg;
}

void sw__segment_cache_put(sw__segment_cache_t *cache, sw__segment_pool_t *pool, sw__segment_t *seg)
{
    if (cache->count >= SW__SEGMENT_CACHE_MAX) {
        sw__segment_pool_push_chain(pool, seg, seg);
        return;
    }
    seg->next = cache->head;
    cache->head = seg;
    cache->count++;
}

void sw__segment_cache_flush(sw__segment_cache_t *cache, sw__segment_pool_t *pool)
{
    if (cache->head == NULL)
        return;
    sw__segment_t *last = cache->head;
    while (last->next != NULL)
        last = last->next;
    sw__segment_pool_push_chain(pool, cache->head, last);
    cache->head = NULL;
    cache->count = 0;
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
}
