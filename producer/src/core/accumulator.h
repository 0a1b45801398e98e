/*
 * accumulator.h - RecordAccumulator: per-partition deques of batches in BufferPool blocks.
 *
 * Application threads append (kp__accumulator_append); the sender thread asks which
 * partitions are ready and takes their head batches out (kp__accumulator_drain), and puts
 * retried batches back at the front in their original order (kp__accumulator_reenqueue).
 *
 * Locking: `lock` protects the topic table, every deque, every batch while it is in a deque,
 * the sticky partitions and the flush/close flags. Partition fields marked "sender" are
 * touched only by the sender thread. The pool has its own lock; the accumulator never holds
 * `lock` while waiting on the pool.
 */
#ifndef KP_CORE_ACCUMULATOR_H
#define KP_CORE_ACCUMULATOR_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/batch.h"
#include "core/buffer_pool.h"
#include "core/metadata.h"

typedef struct kp__partition {
    kp__batch_t *head; /* lock */
    kp__batch_t *tail; /* lock */
    int32_t id;
    struct kp__topic_acc *topic;
    uint64_t next_ordinal; /* lock */
    /* sender only: */
    int32_t next_sequence;
    int in_flight;        /* batches of this partition in requests not yet answered */
    int retrying;         /* batches of this partition being retried and not yet completed */
    bool acked_under_pid; /* a batch of the current producer id was acknowledged */
} kp__partition_t;

typedef struct kp__topic_acc {
    char *name;
    kp__topic_md_t *md;
    int32_t n_partitions;
    /* lock: n_partitions pointers. The count only grows (partitions added to the topic, seen
     * in metadata); each partition keeps its address for the accumulator's life, since
     * batches point at it. */
    kp__partition_t **parts;
    int32_t cap_parts; /* lock */
    int32_t sticky;    /* lock */
} kp__topic_acc_t;

typedef struct kp__accumulator {
    pthread_mutex_t lock;
    kp_buffer_pool_t *pool;
    int32_t batch_size;
    int32_t batch_max_size; /* a batch grows up to this many bytes of blocks (>= batch_size) */
    int32_t linger_ms;
    int64_t max_block_ms;
    /* lock: */
    kp__topic_acc_t **topics;
    int n_topics;
    int cap_topics;
    uint32_t rng;      /* sticky partition choice (xorshift) */
    int flushing;      /* > 0: every batch is ready regardless of linger */
    bool closing;      /* every batch is ready */
    int64_t n_batches; /* batches in deques */
} kp__accumulator_t;

/* batch_max_size: the most bytes of blocks a batch may grow to while its partition has a
 * backlog (see kp__accumulator_append); batch_size or less disables growth. */
int kp__accumulator_init(kp__accumulator_t *acc, kp_buffer_pool_t *pool, int32_t batch_size,
                         int32_t batch_max_size, int32_t linger_ms);
/* Frees the topic table. Every deque must be empty. */
void kp__accumulator_destroy(kp__accumulator_t *acc);

/*
 * Appends a record. partition < 0: keyed -> murmur2, unkeyed -> sticky. When the tail batch of
 * the partition is full and an older batch of the partition still waits in the deque (the
 * sender is behind: a backlog), the tail grows by another pool block of batch.size instead of
 * a new batch being opened, up to batch_max_size bytes (KIP-782's batch.max.size): fewer,
 * larger batches cost the broker less per record exactly when it is the bottleneck. Returns 0,
 * KP_EBUFFER_TIMEOUT (waited deadline_ms), KP_EMSG_SIZE_TOO_LARGE, KP_EUNKNOWN_PARTITION,
 * KP_ECLOSED, KP_ENOMEM. *new_batch tells the caller to wake the sender. Application threads.
 */
int kp__accumulator_append(kp__accumulator_t *acc, kp__topic_md_t *md, int32_t n_partitions,
                           int32_t partition, int64_t timestamp, const void *key, size_t key_len,
                           const void *value, size_t value_len, const kp_record_header_t *headers,
                           size_t n_headers, kp_delivery_cb_t cb, void *opaque, int64_t deadline_ms,
                           bool *new_batch, int32_t *chosen);

/*
 * Sender: calls take(arg, part, batch, leader) for every partition whose head batch is ready
 * (full, lingered, flush, closing; a retry once its backoff is over and nothing of the
 * partition is in flight); when take returns true the batch is removed from the deque. Returns
 * the milliseconds until the next batch may become ready (for the poll timeout), and sets
 * *unknown_leader when a partition with data has no leader.
 */
int64_t kp__accumulator_drain(kp__accumulator_t *acc, int64_t now,
                              bool (*take)(void *, kp__partition_t *, kp__batch_t *, int32_t),
                              void *arg, bool *unknown_leader);

/* Puts a batch back at the front of its partition, before later batches (by ordinal). */
void kp__accumulator_reenqueue(kp__accumulator_t *acc, kp__batch_t *b);

/* Removes from the front of every deque the batches for which expired(arg, batch) is true,
 * stopping at each deque's first batch for which it is false (a deque is in creation order,
 * so expired must be monotonic in the creation time), and hands them to done(arg, batch)
 * after the lock is released. Cost: one call per partition plus one per expired batch. */
void kp__accumulator_expire(kp__accumulator_t *acc, bool (*expired)(void *, kp__batch_t *),
                            void (*done)(void *, kp__batch_t *), void *arg);

void kp__accumulator_begin_flush(kp__accumulator_t *acc);
void kp__accumulator_end_flush(kp__accumulator_t *acc);
void kp__accumulator_close(kp__accumulator_t *acc);

#endif /* KP_CORE_ACCUMULATOR_H */
