/*
 * chunk.c - the chunks that carry encoded segments to the consumer: the pool with its cap and
 * holding credits, encoding into a chunk, and the biased release (chunk.h).
 */
#include "chunk.h"

#include <stdlib.h>
#include <string.h>

#include "../util/locality.h"
#include "../util/small_copy.h"
#include "skywalking.h"

/* Record header and the alignment of each record in a chunk. */
#define RECORD_ALIGN ((size_t) _Alignof(sw__encoded_t))

uint64_t sw__chunk_pool_default_max(uint64_t max_blocks)
{
    uint64_t units = max_blocks / 4 + 64;
    return units > SW__CHUNK_UNITS_MAX ? SW__CHUNK_UNITS_MAX : units;
}

void sw__chunk_pool_init(sw__chunk_pool_t *pool, uint64_t max_units)
{
    sw__free_list_init(&pool->free);
    atomic_init(&pool->allocated, 0);
    atomic_init(&pool->hold_credits, (int64_t)(max_units / 2));
    pool->max_units = max_units;
}

/* The chunk whose link is `node` (its first member: free_list.h). */
static sw__chunk_t *chunk_of(sw__free_node_t *node)
{
    return (sw__chunk_t *)(void *)node;
}

void sw__chunk_pool_destroy(sw__chunk_pool_t *pool)
{
    sw__free_list_free_all(&pool->free);
}

static uint64_t units_of(size_t cap)
{
    return (cap + SW__CHUNK_BYTES - 1) / SW__CHUNK_BYTES;
}

/* A new chunk with `cap` data bytes if the cap allows and malloc succeeds, else NULL. */
static sw__chunk_t *chunk_allocate(sw__chunk_pool_t *pool, size_t cap)
{
    uint64_t units = units_of(cap);
    /* relaxed: `allocated` only counts; the CAS makes the cap exact across threads. */
    uint64_t n = atomic_load_explicit(&pool->allocated, memory_order_relaxed);
    do {
        if (n + units > pool->max_units) {
            return NULL;
        }
    } while (!atomic_compare_exchange_weak_explicit(&pool->allocated, &n, n + units,
                                                    memory_order_relaxed, memory_order_relaxed));
    /* aligned_alloc: the struct's members are aligned to cache lines; the size is a multiple
       of the alignment (offsetof(data) is one, and cap is rounded up). */
    size_t size = offsetof(sw__chunk_t, data) + ((cap + 63) & ~(size_t)63);
    sw__chunk_t *c = aligned_alloc(64, size);
    if (c == NULL) {
        atomic_fetch_sub_explicit(&pool->allocated, units, memory_order_relaxed);
        return NULL;
    }
    c->cap = cap;
    return c;
}

/* Takes a pooled chunk: the whole free list, keeping the first and giving the rest back. */
static sw__chunk_t *chunk_take(sw__chunk_pool_t *pool)
{
    sw__free_node_t *list = sw__free_list_take_all(&pool->free);
    if (list != NULL && list->next != NULL) {
        sw__free_list_give_back(&pool->free, list->next);
    }
    return chunk_of(list);
}

/* Returns the chunk's memory: pooled when it is of the pool's size and the pool lives. */
static void chunk_free(sw__chunk_pool_t *pool, sw__chunk_t *chunk)
{
    if (pool == NULL) {
        free(chunk); /* the run is over: its pool and its counts are gone */
    } else if (chunk->cap != SW__CHUNK_BYTES) {
        uint64_t units = units_of(chunk->cap);
        free(chunk);
        atomic_fetch_sub_explicit(&pool->allocated, units, memory_order_relaxed);
    } else {
        chunk->link.next = NULL;
        sw__free_list_push_chain(&pool->free, &chunk->link, &chunk->link);
    }
}

/* Subtracts n from the count; the one that reaches 0 frees the chunk. */
static void chunk_put(sw__chunk_pool_t *pool, sw__chunk_t *chunk, int64_t n)
{
    /* acq_rel: see chunk.h (all uses of the chunk happen before its reuse). */
    if (atomic_fetch_sub_explicit(&chunk->refs, n, memory_order_acq_rel) == n) {
        chunk_free(pool, chunk);
    }
}

void sw__chunk_release(sw__chunk_pool_t *pool, sw__chunk_t *chunk, uint64_t n)
{
    chunk_put(pool, chunk, (int64_t)n);
}

void sw__chunk_seal(sw__chunk_pool_t *pool, sw__chunk_t *chunk)
{
    if (chunk->held && pool != NULL) { /* relaxed: see hold_credits */
        atomic_fetch_add_explicit(&pool->hold_credits, 1, memory_order_relaxed);
    }
    chunk_put(pool, chunk, SW__CHUNK_BIAS - (int64_t)chunk->handed);
}

/* Takes one holding credit if one is left. */
static bool credit_take(sw__chunk_pool_t *pool)
{
    /* relaxed throughout: a credit is a number, it publishes nothing. */
    int64_t have = atomic_load_explicit(&pool->hold_credits, memory_order_relaxed);
    do {
        if (have <= 0) {
            return false;
        }
    } while (!atomic_compare_exchange_weak_explicit(&pool->hold_credits, &have, have - 1,
                                                    memory_order_relaxed, memory_order_relaxed));
    return true;
}

/* A fresh chunk with at least `need` bytes, or NULL. */
static sw__chunk_t *chunk_get(sw__chunk_pool_t *pool, size_t need)
{
    sw__chunk_t *c = NULL;
    if (need <= SW__CHUNK_BYTES) {
        c = chunk_take(pool);
        if (c == NULL) {
            c = chunk_allocate(pool, SW__CHUNK_BYTES);
        }
    } else {
        c = chunk_allocate(pool, need);
    }
    if (c == NULL) {
        return NULL;
    }
    /* relaxed: nobody else knows this chunk until a record of it is published. */
    atomic_store_explicit(&c->refs, SW__CHUNK_BIAS, memory_order_relaxed);
    c->used = 0;
    c->handed = 0;
    c->held = c->cap == SW__CHUNK_BYTES && credit_take(pool);
    return c;
}

/*
 * Layout of a record in a chunk, from `used` on: the header (aligned), the packed bytes, the
 * segment id with its NUL. The backward writer fills a room from its end; the header goes right
 * before the first byte it wrote, so a short encoding leaves unused bytes before the header, not
 * between header and bytes. The room is a guess (sw__encode_room_guess); a segment that does
 * not fit is encoded again into twice the room.
 */
SW__HOT sw__encoded_t *sw__chunk_encode(sw__chunk_pool_t *pool, sw__chunk_t **current,
                                        const sw__encoder_t *enc, const sw__segment_t *seg)
{
    sw__ids_len_t ids = sw__ids_len(seg);
    size_t header = sizeof(sw__encoded_t) + RECORD_ALIGN; /* with its alignment */
    for (size_t room = sw__encode_room_guess(enc, seg, &ids);; room *= 2) {
        size_t need = header + room + ids.segment_id + 1 + RECORD_ALIGN;
        sw__chunk_t *c = *current;
        if (c == NULL || c->cap - c->used < need) {
            sw__chunk_t *fresh = chunk_get(pool, need);
            if (fresh == NULL) {
                return NULL;
            }
            if (c != NULL) {
                sw__chunk_seal(pool, c);
            }
            *current = c = fresh;
        }
        uint8_t *end = c->data + c->used + header + room;
        /* The lines the record will take were last read by the consumer's core: asked for
           together (marked as about to be written), and the process fields the encoder copies
           (util/locality.h). */
        sw__prefetch_write(c->data + c->used, need);
        sw__prefetch_read(enc->process_fields, enc->process_fields_len);
        uint8_t *first;
        int rc = sw__encode_segment_room(enc, seg, &ids, end - room, end, &first);
        if (rc == SW_ENOMEM) {
            return NULL;
        }
        if (rc != 0) {
            continue; /* the guess was short */
        }
        uintptr_t at = ((uintptr_t)first - sizeof(sw__encoded_t)) & ~(uintptr_t)(RECORD_ALIGN - 1);
        sw__encoded_t *rec = (sw__encoded_t *)at;
        rec->chunk = c;
        rec->data = first;
        rec->len = (uint32_t)(end - first);
        rec->segment_id = (const char *)end;
        rec->room_at = (uint32_t)c->used;
        sw__copy(end, seg->segment_id, ids.segment_id + 1);
        size_t used = (size_t)(end - c->data) + ids.segment_id + 1;
        c->used = (used + RECORD_ALIGN - 1) & ~(RECORD_ALIGN - 1);
        c->handed++;
        return rec;
    }
}

void sw__chunk_unencode(sw__encoded_t *rec)
{
    rec->chunk->used = rec->room_at;
    rec->chunk->handed--;
}

SW__HOT void sw__chunk_after_hand_off(sw__chunk_pool_t *pool, sw__chunk_t **current)
{
    if (*current != NULL && !(*current)->held) {
        sw__chunk_seal(pool, *current);
        *current = NULL;
    }
}
