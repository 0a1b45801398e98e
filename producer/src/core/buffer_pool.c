/*
 * buffer_pool.c - BufferPool as in the Java producer (BufferPool.java).
 *
 * Invariant (under `lock`): non_pooled + free_count * poolable + allocated bytes == total.
 * The free list is a deque: allocate() takes from the front, deallocate() appends at the back,
 * free_up() gives blocks from the back back to the non-pooled budget.
 */
#include "core/buffer_pool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "swc_clock.h"
#include "kproducer.h"

/* One blocked allocate(): lives on the waiting thread's stack while it is linked. */
struct waiter {
    pthread_cond_t more_memory;
    struct waiter *next;
    struct waiter *prev;
};

struct kp_buffer_pool {
    pthread_mutex_t lock;
    int64_t total;
    int32_t poolable;
    /* Everything below is protected by `lock`. */
    void **free_ring; /* deque of free blocks, capacity free_cap */
    uint32_t free_cap;
    uint32_t free_head; /* index of the first block */
    uint32_t free_count;
    int64_t non_pooled;  /* unallocated bytes */
    struct waiter *head; /* FIFO of waiters: head is served first */
    struct waiter *tail;
    uint32_t waiter_count;
    bool closed;
};

kp_buffer_pool_t *kp__buffer_pool_new(int64_t total_memory, int32_t poolable)
{
    if (poolable < 1 || total_memory < poolable) {
        return NULL;
    }
    kp_buffer_pool_t *pool = calloc(1, sizeof(*pool));
    if (!pool) {
        return NULL;
    }
    pool->free_cap = (uint32_t)(total_memory / poolable) + 1;
    pool->free_ring = calloc(pool->free_cap, sizeof(void *));
    if (!pool->free_ring) {
        free(pool);
        return NULL;
    }
    pthread_mutex_init(&pool->lock, NULL);
    pool->total = total_memory;
    pool->poolable = poolable;
    pool->non_pooled = total_memory;
    return pool;
}

static void *free_poll_first(kp_buffer_pool_t *pool)
{
    void *b = pool->free_ring[pool->free_head];
    pool->free_head = (pool->free_head + 1) % pool->free_cap;
    pool->free_count--;
    return b;
}

static void *free_poll_last(kp_buffer_pool_t *pool)
{
    pool->free_count--;
    return pool->free_ring[(pool->free_head + pool->free_count) % pool->free_cap];
}

static void free_add_last(kp_buffer_pool_t *pool, void *b)
{
    pool->free_ring[(pool->free_head + pool->free_count) % pool->free_cap] = b;
    pool->free_count++;
}

void kp__buffer_pool_destroy(kp_buffer_pool_t *pool)
{
    if (!pool) {
        return;
    }
    while (pool->free_count > 0) {
        free(free_poll_first(pool));
    }
    free(pool->free_ring);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

/* Gives free-list blocks back to the non-pooled budget until it covers `size` or the free
 * list is empty. Caller holds `lock`. */
static void free_up(kp_buffer_pool_t *pool, int64_t size)
{
    while (pool->free_count > 0 && pool->non_pooled < size) {
        free(free_poll_last(pool));
        pool->non_pooled += pool->poolable;
    }
}

static void waiter_unlink(kp_buffer_pool_t *pool, struct waiter *w)
{
    if (w->prev) {
        w->prev->next = w->next;
    } else {
        pool->head = w->next;
    }
    if (w->next) {
        w->next->prev = w->prev;
    } else {
        pool->tail = w->prev;
    }
    pool->waiter_count--;
}

/*
 * The blocking path: queue a waiter and collect memory as it is returned until `size` bytes
 * are held. Caller holds `lock`. Returns 0 with *out set to a free-list block (when it could
 * take one whole) or NULL (then `size` non-pooled bytes are reserved).
 */
static int allocate_wait(kp_buffer_pool_t *pool, int32_t size, int64_t max_block_ms, void **out)
{
    struct waiter w = {.next = NULL, .prev = pool->tail};
    if (swc__cond_init_monotonic(&w.more_memory) != 0) {
        return KP_ENOMEM;
    }
    if (pool->tail) {
        pool->tail->next = &w;
    } else {
        pool->head = &w;
    }
    pool->tail = &w;
    pool->waiter_count++;

    int64_t deadline = swc__deadline_after_ms(max_block_ms);
    int64_t accumulated = 0;
    int rc = 0;
    while (accumulated < size) {
        int wrc = swc__cond_wait_until(&w.more_memory, &pool->lock, deadline);
        if (pool->closed) {
            rc = KP_ECLOSED;
            break;
        }
        if (accumulated == 0 && size == pool->poolable && pool->free_count > 0) {
            *out = free_poll_first(pool);
            accumulated = size;
        } else {
            free_up(pool, size - accumulated);
            int64_t got = size - accumulated;
            if (got > pool->non_pooled) {
                got = pool->non_pooled;
            }
            pool->non_pooled -= got;
            accumulated += got;
        }
        if (accumulated < size && wrc != 0) {
            rc = KP_EBUFFER_TIMEOUT;
            break;
        }
    }
    if (rc != 0) {
        pool->non_pooled += accumulated; /* give back what was collected */
    }
    waiter_unlink(pool, &w);
    pthread_cond_destroy(&w.more_memory);
    return rc;
}

int kp__buffer_pool_allocate(kp_buffer_pool_t *pool, int32_t size, int64_t max_block_ms, void **out)
{
    if (size <= 0) {
        return KP_EINVAL;
    }
    if (size > pool->total) {
        return KP_EMSG_SIZE_TOO_LARGE;
    }
    *out = NULL;
    int rc = 0;
    pthread_mutex_lock(&pool->lock);
    if (size == pool->poolable && pool->free_count > 0) {
        *out = free_poll_first(pool);
        pthread_mutex_unlock(&pool->lock);
        return 0;
    }
    if (pool->non_pooled + (int64_t)pool->free_count * pool->poolable >= size) {
        free_up(pool, size);
        pool->non_pooled -= size;
    } else if (pool->closed) {
        rc = KP_ECLOSED;
    } else {
        rc = allocate_wait(pool, size, max_block_ms, out);
    }
    /* Pass the turn on when memory is left over for the next waiter. */
    if ((pool->non_pooled > 0 || pool->free_count > 0) && pool->head) {
        pthread_cond_signal(&pool->head->more_memory);
    }
    pthread_mutex_unlock(&pool->lock);
    if (rc != 0 || *out) {
        return rc;
    }
    *out = malloc((size_t)size);
    if (!*out) {
        pthread_mutex_lock(&pool->lock);
        pool->non_pooled += size;
        if (pool->head) {
            pthread_cond_signal(&pool->head->more_memory);
        }
        pthread_mutex_unlock(&pool->lock);
        return KP_ENOMEM;
    }
    return 0;
}

void kp__buffer_pool_deallocate(kp_buffer_pool_t *pool, void *buf, int32_t size)
{
    pthread_mutex_lock(&pool->lock);
    if (size == pool->poolable) {
        free_add_last(pool, buf);
        buf = NULL;
    } else {
        pool->non_pooled += size;
    }
    if (pool->head) {
        pthread_cond_signal(&pool->head->more_memory);
    }
    pthread_mutex_unlock(&pool->lock);
    free(buf); /* a non-pooled block goes back to malloc, outside the lock */
}

void kp__buffer_pool_close(kp_buffer_pool_t *pool)
{
    pthread_mutex_lock(&pool->lock);
    pool->closed = true;
    for (struct waiter *w = pool->head; w; w = w->next) {
        pthread_cond_signal(&w->more_memory);
    }
    pthread_mutex_unlock(&pool->lock);
}

int64_t kp__buffer_pool_available(kp_buffer_pool_t *pool)
{
    pthread_mutex_lock(&pool->lock);
    int64_t v = pool->non_pooled + (int64_t)pool->free_count * pool->poolable;
    pthread_mutex_unlock(&pool->lock);
    return v;
}

int64_t kp__buffer_pool_unallocated(kp_buffer_pool_t *pool)
{
    pthread_mutex_lock(&pool->lock);
    int64_t v = pool->non_pooled;
    pthread_mutex_unlock(&pool->lock);
    return v;
}

uint32_t kp__buffer_pool_waiters(kp_buffer_pool_t *pool)
{
    pthread_mutex_lock(&pool->lock);
    uint32_t v = pool->waiter_count;
    pthread_mutex_unlock(&pool->lock);
    return v;
}

uint32_t kp__buffer_pool_free_blocks(kp_buffer_pool_t *pool)
{
    pthread_mutex_lock(&pool->lock);
    uint32_t v = pool->free_count;
    pthread_mutex_unlock(&pool->lock);
    return v;
}
