/*
 * chunk.h - encoded segments on their way from the thread that finished them to the consumer
 * (internal).
 *
 * A thread encodes each segment it finishes (segment_encode.c) into its current chunk, a block
 * of SW__CHUNK_BYTES that only it writes, and hands the record (sw__encoded_t, inside the
 * chunk) to the DataCarrier. The segment block goes straight back to the thread's cache, where
 * the next segment finds it in this core's cache; what crosses to the consumer's core is the
 * encoded bytes only, a few consecutive lines per segment, read in order.
 *
 * Ownership of a chunk is a biased count: `refs` starts at SW__CHUNK_BIAS. The consumer subtracts
 * 1 for each record it has reported (sw__chunk_release, once per run of records of one chunk);
 * the owner, when it is done with the chunk (full, thread exit, or no holding credit: see
 * below), subtracts BIAS minus the records it handed over (sw__chunk_seal). The count reaches 0
 * exactly once, after the last of all these, and whoever brings it there frees the chunk (back
 * to the pool). Both subtractions are acq_rel: everything either side did with the chunk happens
 * before its reuse. The owner's writes of a record reach the consumer through the DataCarrier's
 * release/acquire publication of the record pointer.
 *
 * Bounds. Memory is counted in units of SW__CHUNK_BYTES: a record larger than a chunk gets a
 * chunk of its own, sized for it, that counts as that many units; at most `max_units` exist at
 * once. A thread that needs a chunk at the cap drops the segment (the caller counts it). A
 * thread keeps its current chunk between segments only with a holding credit from a fixed
 * budget (max_units / 2): without one it seals the chunk after each record, so idle threads
 * never hold more than the budget, however many threads there are.
 *
 * Threads: sw__chunk_encode / sw__chunk_unencode / sw__chunk_seal by the owning thread (the one
 * whose `current` it is); sw__chunk_release by the consumer; pool init/destroy by sw_init /
 * sw_shutdown while no other thread uses the pool. Nothing here blocks or takes a lock.
 */
#ifndef SW_ENCODE_CHUNK_H
#define SW_ENCODE_CHUNK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../segment/free_list.h"
#include "../segment/segment.h"
#include "encode.h"

#define SW__CHUNK_BYTES (16 * 1024)
#define SW__CHUNK_BIAS  ((int64_t)1 << 40) /* more than any chunk's records */

typedef struct sw__chunk sw__chunk_t;

/* One encoded segment, inside its chunk: what the consumer reports. */
typedef struct sw__encoded {
    sw__chunk_t *chunk;
    const uint8_t *data;    /* the packed SegmentObject */
    const char *segment_id; /* NUL-terminated (the Kafka key) */
    uint32_t len;           /* bytes of data */
    uint32_t room_at;       /* the chunk's `used` before this record (sw__chunk_unencode) */
} sw__encoded_t;

struct sw__chunk {
    sw__free_node_t link; /* first member (free_list.h) */
    size_t cap;           /* bytes of data[]: SW__CHUNK_BYTES, or more for one big record */
    _Alignas(64) _Atomic int64_t refs;
    /* Owning thread only. */
    _Alignas(64) size_t used; /* bytes of data[] in use */
    uint64_t handed;          /* records given to the DataCarrier */
    bool held;                /* took a holding credit */
    _Alignas(64) uint8_t data[];
};

typedef struct sw__chunk_pool {
    sw__free_list_t free; /* chunks of SW__CHUNK_BYTES */
    /* Units allocated and not freed (<= max_units); reserved with a relaxed CAS before malloc. */
    _Atomic uint64_t allocated;
    /* Credits for keeping a chunk between segments; relaxed RMW (a number, publishes nothing). */
    _Atomic int64_t hold_credits;
    uint64_t max_units; /* immutable after init */
} sw__chunk_pool_t;

/* The cap sw_init uses: a quarter of the segment blocks' cap plus 64 units (SW__CHUNK_BYTES
   each), at most SW__CHUNK_UNITS_MAX. Pure. */
#define SW__CHUNK_UNITS_MAX (1u << 20)
uint64_t sw__chunk_pool_default_max(uint64_t max_blocks);

/* max_units >= 1. Allocates nothing. */
void sw__chunk_pool_init(sw__chunk_pool_t *pool, uint64_t max_units);

/* Frees the chunks on the free list (not those a thread still holds). */
void sw__chunk_pool_destroy(sw__chunk_pool_t *pool);

/*
 * Encodes `seg` into *current (sealing it and taking a new one when the record does not fit)
 * and returns the record, or NULL when no chunk could be had (the cap, or malloc failed): then
 * nothing was handed over and the segment is the caller's to count as dropped. The caller
 * hands the record to the DataCarrier and, if that fails, calls sw__chunk_unencode at once.
 * Then sw__chunk_after_hand_off. Owning thread only.
 */
sw__encoded_t *sw__chunk_encode(sw__chunk_pool_t *pool, sw__chunk_t **current,
                                const sw__encoder_t *enc, const sw__segment_t *seg);

/* Takes back the record sw__chunk_encode just returned (the carrier refused it). */
void sw__chunk_unencode(sw__encoded_t *rec);

/* After the hand-off: seals *current when the thread may not keep it (no holding credit). */
void sw__chunk_after_hand_off(sw__chunk_pool_t *pool, sw__chunk_t **current);

/* The owner is done with `chunk` (thread exit, or the run is over: pool NULL, the chunk is then
   freed, not pooled, once its records are released). */
void sw__chunk_seal(sw__chunk_pool_t *pool, sw__chunk_t *chunk);

/* Consumer: `n` records of `chunk` have been reported. */
void sw__chunk_release(sw__chunk_pool_t *pool, sw__chunk_t *chunk, uint64_t n);

#endif /* SW_ENCODE_CHUNK_H */
