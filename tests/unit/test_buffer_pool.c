/*
 * test_buffer_pool.c - BufferPool (Java: BufferPool): pooled and non-pooled paths, free_up, FIFO
 * waiters, the max.block.ms timeout and close. Real threads; waits are bounded loops on the
 * pool's own waiter count, never sleeps.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "core/buffer_pool.h"
#include "kproducer.h"

#define BLOCK 1024

/* Waits (bounded) until the pool has `n` waiters. */
static void await_waiters(kp_buffer_pool_t *pool, uint32_t n)
{
    for (long i = 0; i < 50000000L; i++) {
        if (kp__buffer_pool_waiters(pool) == n) {
            return;
        }
        sched_yield();
    }
    cr_assert_fail("pool never reached %u waiters (has %u)", n, kp__buffer_pool_waiters(pool));
}

Test(buffer_pool, pooled_blocks_are_recycled)
{
    kp_buffer_pool_t *pool = kp__buffer_pool_new(4 * BLOCK, BLOCK);
    cr_assert_not_null(pool);
    void *a = NULL;
    cr_assert_eq(kp__buffer_pool_allocate(pool, BLOCK, 0, &a), 0);
    memset(a, 0xab, BLOCK);
    cr_assert_eq(kp__buffer_pool_available(pool), 3 * BLOCK);
    kp__buffer_pool_deallocate(pool, a, BLOCK);
    cr_assert_eq(kp__buffer_pool_free_blocks(pool), 1);
    cr_assert_eq(kp__buffer_pool_unallocated(pool), 3 * BLOCK);
    void *b = NULL;
    cr_assert_eq(kp__buffer_pool_allocate(pool, BLOCK, 0, &b), 0);
    cr_assert_eq(b, a, "a poolable block must come back from the free list");
    kp__buffer_pool_deallocate(pool, b, BLOCK);
    kp__buffer_pool_destroy(pool);
}

Test(buffer_pool, non_pooled_sizes_return_to_budget)
{
    kp_buffer_pool_t *pool = kp__buffer_pool_new(4 * BLOCK, BLOCK);
    void *a = NULL;
    cr_assert_eq(kp__buffer_pool_allocate(pool, 3 * BLOCK, 0, &a), 0);
    memset(a, 1, 3 * BLOCK);
    cr_assert_eq(kp__buffer_pool_available(pool), BLOCK);
    kp__buffer_pool_deallocate(pool, a, 3 * BLOCK);
    cr_assert_eq(kp__buffer_pool_free_blocks(pool), 0, "non-pooled sizes never join the free list");
    cr_assert_eq(kp__buffer_pool_unallocated(pool), 4 * BLOCK);
    void *s = NULL;
    cr_assert_eq(kp__buffer_pool_allocate(pool, 100, 0, &s), 0);
    kp__buffer_pool_deallocate(pool, s, 100);
    cr_assert_eq(kp__buffer_pool_unallocated(pool), 4 * BLOCK);
    kp__buffer_pool_destroy(pool);
}

Test(buffer_pool, free_up_takes_blocks_back_from_free_list)
{
    kp_buffer_pool_t *pool = kp__buffer_pool_new(4 * BLOCK, BLOCK);
    void *blocks[4];
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(kp__buffer_pool_allocate(pool, BLOCK, 0, &blocks[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        kp__buffer_pool_deallocate(pool, blocks[i], BLOCK);
    }
    cr_assert_eq(kp__buffer_pool_free_blocks(pool), 4);
    cr_assert_eq(kp__buffer_pool_unallocated(pool), 0);
    void *big = NULL;
    cr_assert_eq(kp__buffer_pool_allocate(pool, 2 * BLOCK + 1, 0, &big), 0);
    cr_assert_eq(kp__buffer_pool_free_blocks(pool), 1, "freeUp must release exactly 3 blocks");
    cr_assert_eq(kp__buffer_pool_unallocated(pool), BLOCK - 1);
    kp__buffer_pool_deallocate(pool, big, 2 * BLOCK + 1);
    cr_assert_eq(kp__buffer_pool_available(pool), 4 * BLOCK);
    kp__buffer_pool_destroy(pool);
}

Test(buffer_pool, too_large_fails_at_once)
{
    kp_buffer_pool_t *pool = kp__buffer_pool_new(4 * BLOCK, BLOCK);
    void *a = NULL;
    cr_assert_eq(kp__buffer_pool_allocate(pool, 4 * BLOCK + 1, 60000, &a), KP_EMSG_SIZE_TOO_LARGE);
    cr_assert_eq(kp__buffer_pool_allocate(pool, 0, 0, &a), KP_EINVAL);
    kp__buffer_pool_destroy(pool);
}

Test(buffer_pool, times_out_with_distinct_error_and_keeps_nothing)
{
    kp_buffer_pool_t *pool = kp__buffer_pool_new(2 * BLOCK, BLOCK);
    void *a = NULL, *b = NULL;
    cr_assert_eq(kp__buffer_pool_allocate(pool, BLOCK + 10, 0, &a), 0);
    cr_assert_eq(kp__buffer_pool_allocate(pool, BLOCK, 20, &b), KP_EBUFFER_TIMEOUT);
    cr_assert_eq(kp__buffer_pool_waiters(pool), 0);
    cr_assert_eq(kp__buffer_pool_available(pool), BLOCK - 10,
                 "a timed-out waiter must give back the partial memory it collected");
    kp__buffer_pool_deallocate(pool, a, BLOCK + 10);
    cr_assert_eq(kp__buffer_pool_available(pool), 2 * BLOCK);
    kp__buffer_pool_destroy(pool);
}

struct taker {
    kp_buffer_pool_t *pool;
    int32_t size;
    void *got;
    int rc;
    int id;
    atomic_int *order; /* next finishing position, relaxed: only read after join */
    int position;
};

static void *take(void *arg)
{
    struct taker *t = arg;
    t->rc = kp__buffer_pool_allocate(t->pool, t->size, 60000, &t->got);
    t->position = atomic_fetch_add_explicit(t->order, 1, memory_order_relaxed);
    return NULL;
}

Test(buffer_pool, waiters_are_served_in_fifo_order)
{
    kp_buffer_pool_t *pool = kp__buffer_pool_new(2 * BLOCK, BLOCK);
    void *a = NULL, *b = NULL;
    cr_assert_eq(kp__buffer_pool_allocate(pool, BLOCK, 0, &a), 0);
    cr_assert_eq(kp__buffer_pool_allocate(pool, BLOCK, 0, &b), 0);
    atomic_int order = 0;
    struct taker t[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        t[i] = (struct taker){.pool = pool, .size = BLOCK, .id = i, .order = &order};
        pthread_create(&th[i], NULL, take, &t[i]);
        await_waiters(pool, (uint32_t)i + 1); /* queue them in a known order */
    }
    kp__buffer_pool_deallocate(pool, a, BLOCK);
    pthread_join(th[0], NULL);
    cr_assert_eq(t[0].rc, 0);
    cr_assert_eq(t[0].got, a, "the first waiter gets the returned block");
    cr_assert_eq(kp__buffer_pool_waiters(pool), 2);
    kp__buffer_pool_deallocate(pool, b, BLOCK);
    pthread_join(th[1], NULL);
    cr_assert_eq(t[1].got, b, "then the second waiter");
    kp__buffer_pool_deallocate(pool, t[0].got, BLOCK);
    pthread_join(th[2], NULL);
    cr_assert_eq(t[2].got, a);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(t[i].position, i, "waiter %d finished out of FIFO order", i);
    }
    kp__buffer_pool_deallocate(pool, t[1].got, BLOCK);
    kp__buffer_pool_deallocate(pool, t[2].got, BLOCK);
    kp__buffer_pool_destroy(pool);
}

Test(buffer_pool, large_waiter_accumulates_across_deallocations)
{
    kp_buffer_pool_t *pool = kp__buffer_pool_new(3 * BLOCK, BLOCK);
    void *blocks[3];
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(kp__buffer_pool_allocate(pool, BLOCK, 0, &blocks[i]), 0);
    }
    atomic_int order = 0;
    struct taker t = {.pool = pool, .size = 2 * BLOCK + 100, .order = &order};
    pthread_t th;
    pthread_create(&th, NULL, take, &t);
    await_waiters(pool, 1);
    kp__buffer_pool_deallocate(pool, blocks[0], BLOCK);
    kp__buffer_pool_deallocate(pool, blocks[1], BLOCK);
    cr_assert_eq(kp__buffer_pool_waiters(pool), 1, "2 blocks are not enough; still waiting");
    kp__buffer_pool_deallocate(pool, blocks[2], BLOCK);
    pthread_join(th, NULL);
    cr_assert_eq(t.rc, 0);
    memset(t.got, 7, 2 * BLOCK + 100);
    cr_assert_eq(kp__buffer_pool_available(pool), BLOCK - 100);
    kp__buffer_pool_deallocate(pool, t.got, 2 * BLOCK + 100);
    cr_assert_eq(kp__buffer_pool_available(pool), 3 * BLOCK);
    kp__buffer_pool_destroy(pool);
}

Test(buffer_pool, close_fails_waiters)
{
    kp_buffer_pool_t *pool = kp__buffer_pool_new(BLOCK, BLOCK);
    void *a = NULL;
    cr_assert_eq(kp__buffer_pool_allocate(pool, BLOCK, 0, &a), 0);
    atomic_int order = 0;
    struct taker t = {.pool = pool, .size = BLOCK, .order = &order};
    pthread_t th;
    pthread_create(&th, NULL, take, &t);
    await_waiters(pool, 1);
    kp__buffer_pool_close(pool);
    pthread_join(th, NULL);
    cr_assert_eq(t.rc, KP_ECLOSED);
    kp__buffer_pool_deallocate(pool, a, BLOCK);
    kp__buffer_pool_destroy(pool);
}

struct churn {
    kp_buffer_pool_t *pool;
    int rounds;
    int failures;
};

static void *churn_run(void *arg)
{
    struct churn *c = arg;
    for (int i = 0; i < c->rounds; i++) {
        int32_t size = (i % 3 == 0) ? BLOCK + 1 + i % 500 : BLOCK;
        void *p = NULL;
        if (kp__buffer_pool_allocate(c->pool, size, 60000, &p) != 0) {
            c->failures++;
            continue;
        }
        ((char *)p)[size - 1] = 1;
        kp__buffer_pool_deallocate(c->pool, p, size);
    }
    return NULL;
}

Test(buffer_pool, stress_keeps_the_memory_invariant)
{
    kp_buffer_pool_t *pool = kp__buffer_pool_new(4 * BLOCK, BLOCK);
    struct churn c[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (struct churn){.pool = pool, .rounds = 5000};
        pthread_create(&th[i], NULL, churn_run, &c[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(c[i].failures, 0);
    }
    cr_assert_eq(kp__buffer_pool_available(pool), 4 * BLOCK);
    cr_assert_eq(kp__buffer_pool_waiters(pool), 0);
    kp__buffer_pool_destroy(pool);
}
