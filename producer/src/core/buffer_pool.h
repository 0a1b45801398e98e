/*
 * buffer_pool.h - the Java producer's BufferPool: buffer.memory bytes handed out as batch
 * buffers.
 *
 * Blocks of exactly `poolable` bytes (batch.size) are recycled through a free list; other
 * sizes are malloc'd from and freed back to the non-pooled budget. A thread that finds too
 * little memory waits, in FIFO order with the other waiters (each on its own condition), up
 * to the time it was given; deallocate() wakes the first waiter.
 *
 * Concurrency: every function may be called from any thread; all state is protected by the
 * pool's one mutex, which is never held while calling out.
 */
#ifndef KP_CORE_BUFFER_POOL_H
#define KP_CORE_BUFFER_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct kp_buffer_pool kp_buffer_pool_t;

/* Creates a pool of total_memory bytes with poolable-sized blocks. Returns NULL when out of
 * memory or when poolable < 1 or poolable > total_memory. */
kp_buffer_pool_t *kp__buffer_pool_new(int64_t total_memory, int32_t poolable);

/* Frees the pool and every block on its free list. Blocks still allocated must have been
 * returned; no thread may be waiting. */
void kp__buffer_pool_destroy(kp_buffer_pool_t *pool);

/*
 * Allocates `size` bytes into *out. Returns 0; KP_EMSG_SIZE_TOO_LARGE at once when size
 * exceeds the pool's total memory; KP_EBUFFER_TIMEOUT when max_block_ms passed without
 * enough memory being returned (nothing is then held); KP_ECLOSED when the pool was closed
 * while waiting; KP_ENOMEM when malloc failed. Blocks up to max_block_ms (at least 0).
 */
int kp__buffer_pool_allocate(kp_buffer_pool_t *pool, int32_t size, int64_t max_block_ms,
                             void **out);

/* Returns a block of `size` bytes obtained from allocate(). The pointer is invalid
 * afterwards. Wakes the first waiter. Never blocks except on the pool mutex. */
void kp__buffer_pool_deallocate(kp_buffer_pool_t *pool, void *buf, int32_t size);

/* Wakes every waiter, which then fails with KP_ECLOSED; later allocations that would have
 * to wait fail at once with KP_ECLOSED. */
void kp__buffer_pool_close(kp_buffer_pool_t *pool);

/* Free-list bytes plus unallocated bytes. */
int64_t kp__buffer_pool_available(kp_buffer_pool_t *pool);
/* Unallocated (non-pooled) bytes only. */
int64_t kp__buffer_pool_unallocated(kp_buffer_pool_t *pool);
/* Number of threads waiting for memory. */
uint32_t kp__buffer_pool_waiters(kp_buffer_pool_t *pool);
/* Number of blocks on the free list. */
uint32_t kp__buffer_pool_free_blocks(kp_buffer_pool_t *pool);

#endif /* KP_CORE_BUFFER_POOL_H */
