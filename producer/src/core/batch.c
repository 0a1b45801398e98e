/*
 * batch.c - ProducerBatch in a pool block (see batch.h).
 */
#include "core/batch.h"

#include <stdlib.h>
#include <string.h>

kp__batch_t *kp__batch_init(void *block, int32_t block_size, struct kp__partition *part,
                            int64_t now_ms, int64_t wall_ms)
{
    kp__batch_t *b = block;
    memset(b, 0, sizeof(*b));
    b->part = part;
    b->block_size = block_size;
    b->created_ms = now_ms;
    b->base_sequence = -1;
    b->producer_id = -1;
    b->producer_epoch = -1;
    b->total_size = block_size;
    uint8_t *records = (uint8_t *)block + KP__BATCH_HEADER;
    kp__record_batch_init(&b->rb, records, (size_t)block_size - KP__BATCH_HEADER, wall_ms);
    return b;
}

/* Usable end of a continuation block (aligned for its thunks). */
static size_t ext_end(const kp__batch_ext_t *e)
{
    return (size_t)e->block_size & ~(_Alignof(kp__thunk_t) - 1);
}

static kp__thunk_t *ext_thunk(kp__batch_ext_t *e, int32_t i)
{
    return (kp__thunk_t *)((uint8_t *)e + ext_end(e)) - (i + 1);
}

/* The first block's i-th thunk. */
static kp__thunk_t *first_thunk(kp__batch_t *b, int32_t i)
{
    return (kp__thunk_t *)((uint8_t *)b + kp__batch_end(b)) - (i + 1);
}

kp__thunk_t *kp__batch_thunk(kp__batch_t *b, int32_t i)
{
    if (i < b->first_count) {
        return first_thunk(b, i);
    }
    i -= b->first_count;
    for (kp__batch_ext_t *e = b->ext_head; e; e = e->next) {
        if (i < e->count) {
            return ext_thunk(e, i);
        }
        i -= e->count;
    }
    return NULL; /* not reached for i < rb.count */
}

void kp__batch_grow(kp__batch_t *b, void *block, int32_t block_size)
{
    kp__batch_ext_t *e = block;
    memset(e, 0, sizeof(*e));
    e->block_size = block_size;
    kp__record_batch_chain(&b->rb, &e->seg, (uint8_t *)block + KP__BATCH_EXT_HEADER,
                           ext_end(e) - KP__BATCH_EXT_HEADER);
    if (b->ext_tail) {
        b->ext_tail->next = e;
    } else {
        b->ext_head = e;
    }
    b->ext_tail = e;
    b->total_size += block_size;
}

int kp__batch_try_append(kp__batch_t *b, int64_t timestamp, const void *key, size_t key_len,
                         const void *value, size_t value_len, const kp_record_header_t *headers,
                         size_t n_headers, kp_delivery_cb_t cb, void *opaque)
{
    kp__batch_ext_t *e = b->ext_tail;
    int32_t here = e ? e->count : b->first_count;
    size_t room = e ? ext_end(e) - KP__BATCH_EXT_HEADER : kp__batch_end(b) - KP__BATCH_HEADER;
    size_t used = e ? e->seg.len : b->rb.head_len;
    size_t thunks = (size_t)(here + 1) * sizeof(kp__thunk_t);
    if (thunks + used > room) {
        return KP_ENOSPACE; /* the new thunk would overlap records already written */
    }
    /* Lower the writer's capacity so that the records never reach the thunk area: the writer
     * checks every record against `cap` and keeps no other copy of it. */
    if (e) {
        e->seg.cap = room - thunks;
    } else {
        b->rb.cap = room - thunks;
    }
    int rc = kp__record_batch_try_append(&b->rb, timestamp, key, key_len, value, value_len, headers,
                                         n_headers);
    if (rc != 0) {
        return rc;
    }
    kp__thunk_t *t = e ? ext_thunk(e, e->count++) : first_thunk(b, b->first_count++);
    t->cb = cb;
    t->opaque = opaque;
    return 0;
}

static void fire(const kp__thunk_t *t, int error, int32_t partition, int64_t base_offset, int32_t i)
{
    if (t->cb) {
        t->cb(t->opaque, error, partition, base_offset < 0 ? -1 : base_offset + i);
    }
}

void kp__batch_complete(kp__batch_t *b, int error, int32_t partition, int64_t base_offset)
{
    int32_t i = 0;
    for (int32_t k = 0; k < b->first_count; k++) {
        fire(first_thunk(b, k), error, partition, base_offset, i++);
    }
    for (kp__batch_ext_t *e = b->ext_head; e; e = e->next) {
        for (int32_t k = 0; k < e->count; k++) {
            fire(ext_thunk(e, k), error, partition, base_offset, i++);
        }
    }
}

void kp__batch_free(kp__batch_t *b, kp_buffer_pool_t *pool)
{
    kp__batch_ext_t *e = b->ext_head;
    while (e) {
        kp__batch_ext_t *next = e->next;
        kp__buffer_pool_deallocate(pool, e, e->block_size);
        e = next;
    }
    if (b->heap) {
        free(b);
    } else {
        kp__buffer_pool_deallocate(pool, b, b->block_size);
    }
}
