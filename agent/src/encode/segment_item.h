/*
 * segment_item.h - what the segment DataCarrier carries (internal).
 *
 * A segment of at most SW__THREAD_ENCODE_MAX_SPANS spans is encoded by the thread that finished
 * it, into its chunk, and the item is the record (sw__encoded_t *, encode/chunk.h): the block is
 * in that core's cache then, and is reused at once. A bigger segment goes to the consumer as its
 * block, tagged with the low bit, and the consumer encodes it: its encoding (which grows with its
 * spans) would otherwise land on the request that ends it, and a big block is not reused hot
 * anyway. Both pointers are at least 8-byte aligned, so the low bit is free.
 */
#ifndef SW_ENCODE_SEGMENT_ITEM_H
#define SW_ENCODE_SEGMENT_ITEM_H

#include <stdint.h>

#include "../segment/segment.h"

#define SW__THREAD_ENCODE_MAX_SPANS 16

static inline void *sw__item_of_block(sw__segment_t *seg)
{
    return (void *)((uintptr_t)seg | 1u);
}

/* The block an item carries, or NULL when the item is an encoded record. */
static inline sw__segment_t *sw__item_block(void *item)
{
    uintptr_t v = (uintptr_t)item;
    return (v & 1u) != 0 ? (sw__segment_t *)(v & ~(uintptr_t)1u) : NULL;
}

#endif /* SW_ENCODE_SEGMENT_ITEM_H */
