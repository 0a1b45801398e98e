/*
 * segment.h - a TraceSegment under construction (internal): all spans one thread records for
 * one request, in one fixed-size block that is recycled through the segment pool.
 *
 * Layout of a block (one allocation, sized at sw_init from the config):
 *
 *   [ sw__segment_t header | arena[arena_cap] | spans[span_limit] ]
 *
 * A finished segment of up to 16 spans is encoded on the thread that finished it
 * (encode/chunk.h) and its block goes back to that thread's cache, so a thread's next segment
 * usually finds its block in the same core's cache; a bigger one goes to the consumer as its
 * block (encode/segment_item.h). The order keeps what a typical segment touches on few lines and
 * pages: the header's hot fields (counts, trace and segment id) first, the strings right after the
 * header, and the attributes (which grow down from the arena's end) next to spans[0].
 *
 * The arena holds NUL-terminated strings growing up from its start and attribute records
 * (tags, logs, log fields) growing down from its end; when the two meet, strings are truncated
 * and attributes dropped, and `truncations` counts each case. Nothing in a block points outside
 * it except static strings (empty strings, and the agent's own tag literals: sw__span_tag_static
 * in context.h), so a finished block can be encoded by another thread (the one that ends a
 * segment's last asynchronous span: instrument/span_async.h).
 *
 * Ownership: exactly one of {the pool's free list, a thread's cache, a thread's context, the
 * DataCarrier, the consumer thread} owns a block at a time; no field is shared.
 */
#ifndef SW_SEGMENT_SEGMENT_H
#define SW_SEGMENT_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "free_list.h"
#include "../util/locality.h"
#include "skywalking.h"

#define SW__TRACE_ID_MAX   256 /* with the NUL; longer upstream trace ids are rejected */
#define SW__SEGMENT_ID_MAX 96
#define SW__REFS_MAX       8 /* references per segment; more are dropped and counted */

enum sw__attr_kind {
    SW__ATTR_TAG = 0,    /* key, value */
    SW__ATTR_LOG = 1,    /* time_ms, kv_count: the next kv_count records are its fields */
    SW__ATTR_LOG_KV = 2, /* key, value of the preceding LOG */
};

/*
 * String lengths (key_len, value_len, operation_len, peer_len) spare the encoder a strlen: the
 * length of the string, or 0 when not known (the encoder measures the string then), never a
 * wrong one. Whoever changes a string pointer sets or clears its length.
 */
typedef struct sw__attr {
    const char *key;
    const char *value;
    union {
        int64_t time_ms; /* LOG */
        struct {         /* TAG, LOG_KV */
            uint32_t key_len;
            uint32_t value_len;
        };
    };
    uint16_t span_id;
    uint8_t kind;
    uint8_t reserved;
    uint32_t kv_count;
} sw__attr_t;

typedef struct sw__span {
    int64_t start_ms;
    int64_t end_ms;
    const char *operation; /* never NULL */
    const char *peer;      /* NULL when unset */
    uint32_t operation_len;
    uint32_t peer_len;
    int32_t parent_id;
    int32_t component_id;
    uint8_t type;  /* sw_span_type_t */
    uint8_t layer; /* sw_layer_t */
    uint8_t is_error;
    uint8_t reserved;
} sw__span_t;

typedef struct sw__ref {
    const char *trace_id;
    const char *parent_segment_id;
    const char *parent_service;
    const char *parent_instance;
    const char *parent_endpoint;
    const char *address; /* "" for CrossThread */
    int32_t parent_span_id;
    uint16_t span_id; /* the span that carries the reference */
    uint8_t type;     /* 0 CrossProcess, 1 CrossThread */
} sw__ref_t;

typedef struct sw__segment sw__segment_t;
struct sw__segment {
    sw__free_node_t link; /* free-list / cache link (first member: free_list.h) */
    sw__span_t *spans;    /* span_limit entries, right after the header */
    char *arena;          /* arena_cap bytes, right after spans, 8-byte aligned */
    uint32_t span_limit;
    uint32_t arena_cap;

    /* Reset by sw__segment_reset for each new segment. */
    uint32_t span_count;
    uint32_t arena_used; /* strings: [0, arena_used) */
    uint32_t attr_count; /* attributes: the last attr_count records of the arena */
    uint32_t ref_count;
    uint32_t truncations;
    uint32_t async_open; /* spans opened by span_async.h and not ended yet: the segment is
                            reported only when this is 0 (instrument/span_async.h) */
    bool size_limited;
    char trace_id[SW__TRACE_ID_MAX];
    char segment_id[SW__SEGMENT_ID_MAX];
    sw_correlation_t correlation;
    sw__ref_t refs[SW__REFS_MAX];
    /* The W3C tracestate members (other than our `sw`) that came in with the entry span that
       began this segment, to forward on exits (in the arena; NULL: none). */
    const char *tracestate;

    /* A segment that is a request context (core/request.c). sw__segment_reset leaves these
       alone: `ctx_generation` must keep counting so that a stale sw_span_ref_t never matches a
       block that was reused. It and `ctx_user` are atomics (relaxed) because a stale or misused
       reference may read them while another thread owns the block; the other fields belong to
       the thread that uses the context (one at a time, ordered by the program's hand-off). */
    _Atomic uint32_t ctx_generation; /* bumped when a context begins and when it ends */
    _Atomic uint32_t ctx_epoch;      /* the agent run the context began in */
    _Atomic(uintptr_t) ctx_user;     /* the thread context that has it attached; 0: none */
    uint32_t ctx_holds;              /* open handle spans plus attachments; 0: ended */
};

/* end_ms of a request context's span that has not ended (core/request.c). */
#define SW__SPAN_OPEN INT64_MIN

/* Bytes of one block for these limits, or 0 when they are out of range. */
size_t sw__segment_block_size(uint32_t span_limit, uint32_t arena_cap);

/* Sets up the pointers of a freshly allocated block of sw__segment_block_size bytes. */
void sw__segment_format(sw__segment_t *seg, uint32_t span_limit, uint32_t arena_cap);

/* Empties a block for reuse (no memset of the big arrays). */
void sw__segment_reset(sw__segment_t *seg);

/*
 * Copies `s` (NULL counts as "") into the arena and returns the copy, made valid UTF-8
 * (util/utf8.h: a byte that starts no valid sequence becomes '?'). When the arena is short the
 * copy is truncated on a sequence boundary (counted); when not even the NUL fits, returns a
 * static "" (counted). Every string of a segment is copied here.
 */
const char *sw__segment_strdup(sw__segment_t *seg, const char *s);

/* Same for the first `len` bytes of `s` (no NUL needed in s). */
const char *sw__segment_strndup(sw__segment_t *seg, const char *s, size_t len);

/* sw__segment_strdup / sw__segment_strndup that also store the copy's length in *out_len. */
const char *sw__segment_strdup_len(sw__segment_t *seg, const char *s, uint32_t *out_len);
const char *sw__segment_strndup_len(sw__segment_t *seg, const char *s, size_t len,
                                    uint32_t *out_len);

/* Appends one attribute record; returns it, or NULL when the arena is full (counted). Inline:
   every tag and log field makes one. */
static inline sw__attr_t *sw__segment_attr_add(sw__segment_t *seg)
{
    size_t room =
        (size_t)seg->arena_cap - seg->arena_used - (size_t)seg->attr_count * sizeof(sw__attr_t);
    if (room < sizeof(sw__attr_t) || seg->attr_count >= UINT16_MAX) {
        seg->truncations++;
        return NULL;
    }
    seg->attr_count++;
    return (sw__attr_t *)(void *)(seg->arena + seg->arena_cap) - seg->attr_count;
}

/* The i-th attribute in insertion order (0 <= i < attr_count). */
static inline const sw__attr_t *sw__segment_attr(const sw__segment_t *seg, uint32_t i)
{
    const sw__attr_t *end = (const sw__attr_t *)(const void *)(seg->arena + seg->arena_cap);
    return end - 1 - i;
}

/* Before a fresh segment is written (locality.h): the fields sw__segment_reset and the first
   span write, the first strings and the first attributes (at the arena's end). */
static inline void sw__segment_prefetch_fresh(const sw__segment_t *seg)
{
    sw__prefetch_write(seg, SW__LINE);
    sw__prefetch_write(seg->trace_id, SW__LINE);
    sw__prefetch_write(seg->segment_id, SW__LINE);
    sw__prefetch_write(&seg->correlation.count, sizeof seg->correlation.count);
    sw__prefetch_write(&seg->tracestate, sizeof seg->tracestate);
    sw__prefetch_write(seg->spans, sizeof(sw__span_t));
    sw__prefetch_write(seg->arena, SW__LINE);
    sw__prefetch_write(seg->arena + seg->arena_cap - 3 * sizeof(sw__attr_t),
                       3 * sizeof(sw__attr_t));
}

/* Before a finished segment is read to be encoded (locality.h): the lines the encoder reads,
   the ids' first lines (most ids fit in one), spans, references, strings and attributes. */
static inline void sw__segment_prefetch_used(const sw__segment_t *seg)
{
    sw__prefetch_read(seg, SW__LINE);
    sw__prefetch_read(seg->trace_id, SW__LINE);
    sw__prefetch_read(seg->segment_id, SW__LINE);
    sw__prefetch_read(seg->refs, seg->ref_count * sizeof(sw__ref_t));
    sw__prefetch_read(seg->spans, seg->span_count * sizeof(sw__span_t));
    sw__prefetch_read(seg->arena, seg->arena_used);
    size_t attrs = seg->attr_count * sizeof(sw__attr_t);
    sw__prefetch_read(seg->arena + seg->arena_cap - attrs, attrs);
}

#endif /* SW_SEGMENT_SEGMENT_H */
