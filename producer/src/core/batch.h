/*
 * batch.h - a ProducerBatch: one RecordBatch v2 for one partition, written in place in one
 * BufferPool block, with the delivery callbacks of its records.
 *
 * Block layout (the whole batch lives in the block, so buffer.memory bounds everything):
 *
 *   [kp__batch_t][RecordBatch v2 bytes, growing up ->      <- thunks, growing down]
 *
 * Before each append the writer's capacity is lowered so that the record and its thunk both
 * fit. A batch may grow past its first block (batch.max.size, the idea of KIP-782): further
 * blocks of batch.size from the same pool are chained behind it, each laid out as
 *
 *   [kp__batch_ext_t][records of this block ->            <- thunks of these records]
 *
 * so the pool only ever sees its ordinary blocks. Thread: appended to under the accumulator lock by
 * application threads while it is in its partition's deque; after the sender took it out of the
 * deque only the sender touches it.
 */
#ifndef KP_CORE_BATCH_H
#define KP_CORE_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buffer_pool.h"
#include "kproducer.h"
#include "wire/record_batch.h"

struct kp__partition;

typedef struct kp__thunk {
    kp_delivery_cb_t cb;
    void *opaque;
} kp__thunk_t;

/* Header of a continuation block of a grown batch. */
typedef struct kp__batch_ext {
    kp_record_segment_t seg; /* this block's records, chained into the batch's writer */
    struct kp__batch_ext *next;
    int32_t count;      /* records in this block */
    int32_t block_size; /* bytes of the block (batch.size) */
} kp__batch_ext_t;

/* Bytes in front of the records inside a continuation block. */
#define KP__BATCH_EXT_HEADER ((sizeof(kp__batch_ext_t) + 63) & ~(size_t)63)

typedef struct kp__batch {
    struct kp__batch *next; /* deque link (accumulator lock) or the sender's lists */
    struct kp__partition *part;
    kp_record_batch_t rb;
    int32_t block_size;        /* bytes of the first block */
    int32_t first_count;       /* records in the first block */
    int64_t total_size;        /* bytes of every block of the batch */
    kp__batch_ext_t *ext_head; /* continuation blocks, in order (NULL: one block) */
    kp__batch_ext_t *ext_tail;
    int64_t created_ms;    /* monotonic: linger.ms and delivery.timeout.ms count from here */
    int64_t retry_at_ms;   /* a retried batch is not sent before this */
    uint64_t ordinal;      /* creation order within the partition: retries keep it */
    int attempts;          /* sends so far */
    int32_t base_sequence; /* -1 until the first drain with idempotence */
    int64_t producer_id;
    int16_t producer_epoch;
    bool is_retry; /* counted in its partition's `retrying` */
    bool full;     /* no more appends: the sender may send it without waiting for linger */
    bool heap;     /* a piece of a split batch: malloc'd outside the pool, freed with free() */
} kp__batch_t;

/* Bytes in front of the record batch inside the block. */
#define KP__BATCH_HEADER ((sizeof(kp__batch_t) + 63) & ~(size_t)63)

/* Block size needed for a batch holding one record of this size. */
static inline int32_t kp__batch_block_size(int32_t batch_size, size_t record_upper_bound)
{
    size_t need = KP__BATCH_HEADER + record_upper_bound + sizeof(kp__thunk_t);
    /* Thunks are laid out down from the block's end: keep that end aligned for them. */
    need = (need + _Alignof(kp__thunk_t) - 1) & ~(_Alignof(kp__thunk_t) - 1);
    return need > (size_t)batch_size ? (int32_t)need : batch_size;
}

/* Builds an empty batch at the start of block. */
kp__batch_t *kp__batch_init(void *block, int32_t block_size, struct kp__partition *part,
                            int64_t now_ms, int64_t wall_ms);

/* Appends one record and its callback. Returns 0 or KP_ENOSPACE (batch unchanged). */
int kp__batch_try_append(kp__batch_t *b, int64_t timestamp, const void *key, size_t key_len,
                         const void *value, size_t value_len, const kp_record_header_t *headers,
                         size_t n_headers, kp_delivery_cb_t cb, void *opaque);

/* Usable bytes of the block: its size rounded down so that the thunks below the end are
 * aligned (batch.size, hence a block's size, may be any number). */
static inline size_t kp__batch_end(const kp__batch_t *b)
{
    return (size_t)b->block_size & ~(_Alignof(kp__thunk_t) - 1);
}

/* The i-th record's thunk (walks the continuation blocks: at most batch.max.size /
 * batch.size of them). */
kp__thunk_t *kp__batch_thunk(kp__batch_t *b, int32_t i);

/* Continues b in a fresh block of block_size bytes (a pool block of batch.size): later
 * appends go there. b must be open (in its deque, under the accumulator lock). */
void kp__batch_grow(kp__batch_t *b, void *block, int32_t block_size);

/* Returns every block of b to the pool (a heap batch, a split piece, is freed with free()).
 * b is invalid afterwards. */
void kp__batch_free(kp__batch_t *b, kp_buffer_pool_t *pool);

/* Runs every record's callback with (error, partition, base_offset + i, or -1 offsets when
 * base_offset < 0). Sender thread (or the closing thread). */
void kp__batch_complete(kp__batch_t *b, int error, int32_t partition, int64_t base_offset);

#endif /* KP_CORE_BATCH_H */
