/*
 * batch.h - a ProducerBatch: one RecordBatch v2 for one partition, written in place in one
 * BufferPool block, with the delivery callbacks of its records.
 *
 * Block layout (the whole batch lives in the block, so buffer.memory bounds everything):
 *
 *   [kp__batch_t][RecordBatch v2 bytes, growing up ->      <- thunks, growing down]
 *
 * Before each append the writer's capacity is lowered so that the record and its thunk both
 * fit. Thread: appended to under the accumulator lock by application threads while it is in
 * its partition's deque; after the sender took it out of the deque only the sender touches it.
 */
#ifndef KP_CORE_BATCH_H
#define KP_CORE_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "kproducer.h"
#include "wire/record_batch.h"

struct kp__partition;

typedef struct kp__thunk {
    kp_delivery_cb_t cb;
    void *opaque;
} kp__thunk_t;

typedef struct kp__batch {
    struct kp__batch *next; /* deque link (accumulator lock) or the sender's lists */
    struct kp__partition *part;
    kp_record_batch_t rb;
    int32_t block_size;
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

/* The i-th record's thunk. */
static inline kp__thunk_t *kp__batch_thunk(kp__batch_t *b, int32_t i)
{
    return (kp__thunk_t *)((uint8_t *)b + kp__batch_end(b)) - (i + 1);
}

/* Runs every record's callback with (error, partition, base_offset + i, or -1 offsets when
 * base_offset < 0). Sender thread (or the closing thread). */
void kp__batch_complete(kp__batch_t *b, int error, int32_t partition, int64_t base_offset);

#endif /* KP_CORE_BATCH_H */
