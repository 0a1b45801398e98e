/*
 * batch.c - ProducerBatch in a pool block (see batch.h).
 */
#include "core/batch.h"

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
    uint8_t *records = (uint8_t *)block + KP__BATCH_HEADER;
    kp_record_batch_init(&b->rb, records, (size_t)block_size - KP__BATCH_HEADER, wall_ms);
    return b;
}

int kp__batch_try_append(kp__batch_t *b, int64_t timestamp, const void *key, size_t key_len,
                         const void *value, size_t value_len, const kp_record_header_t *headers,
                         size_t n_headers, kp_delivery_cb_t cb, void *opaque)
{
    size_t room = kp__batch_end(b) - KP__BATCH_HEADER;
    size_t thunks = (size_t)(b->rb.count + 1) * sizeof(kp__thunk_t);
    if (thunks + b->rb.len > room)
        return KP_ENOSPACE; /* the new thunk would overlap records already written */
    /* Lower the writer's capacity so that the records never reach the thunk area: the writer
     * checks every record against `cap` and keeps no other copy of it. */
    b->rb.cap = room - thunks;
    int rc = kp_record_batch_try_append(&b->rb, timestamp, key, key_len, value, value_len, headers,
                                        n_headers);
    if (rc != 0)
        return rc;
    kp__thunk_t *t = kp__batch_thunk(b, b->rb.count - 1);
    t->cb = cb;
    t->opaque = opaque;
    return 0;
}

void kp__batch_complete(kp__batch_t *b, int error, int32_t partition, int64_t base_offset)
{
    for (int32_t i = 0; i < b->rb.count; i++) {
        kp__thunk_t *t = kp__batch_thunk(b, i);
        if (t->cb)
            t->cb(t->opaque, error, partition, base_offset < 0 ? -1 : base_offset + i);
    }
}
