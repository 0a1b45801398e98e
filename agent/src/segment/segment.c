/*
 * segment.c - block layout, reset, and the bounded arena of a TraceSegment.
 */
#include "segment.h"
#include "../util/locality.h"
#include "../util/small_copy.h"
#include "../util/utf8.h"

#include <string.h>

static const char empty_string[1] = "";

static size_t align8(size_t n)
{
    return (n + 7u) & ~(size_t)7u;
}

size_t sw__segment_block_size(uint32_t span_limit, uint32_t arena_cap)
{
    if (span_limit == 0 || span_limit > 10000 || arena_cap < 256 || arena_cap > (1u << 24)) {
        return 0;
    }
    return align8(sizeof(sw__segment_t)) + align8(arena_cap) +
           align8((size_t)span_limit * sizeof(sw__span_t));
}

void sw__segment_format(sw__segment_t *seg, uint32_t span_limit, uint32_t arena_cap)
{
    /* The arena comes before the spans (segment.h): a request's strings start next to the
       header and its attributes end next to spans[0]. */
    char *base = (char *)seg;
    seg->arena = base + align8(sizeof(sw__segment_t));
    seg->spans = (sw__span_t *)(void *)(seg->arena + align8(arena_cap));
    seg->span_limit = span_limit;
    seg->arena_cap = (uint32_t)align8(arena_cap);
    seg->link.next = NULL;
    sw__segment_reset(seg);
}

SW__HOT void sw__segment_reset(sw__segment_t *seg)
{
    seg->span_count = 0;
    seg->arena_used = 0;
    seg->attr_count = 0;
    seg->ref_count = 0;
    seg->truncations = 0;
    seg->async_open = 0;
    seg->size_limited = false;
    seg->correlation.count = 0;
    seg->trace_id[0] = '\0';
    seg->segment_id[0] = '\0';
    seg->tracestate = NULL;
}

/* Bytes between the strings (growing up) and the attributes (growing down). */
SW__HOT static size_t arena_free(const sw__segment_t *seg)
{
    return (size_t)seg->arena_cap - seg->arena_used - (size_t)seg->attr_count * sizeof(sw__attr_t);
}

/* A string that does not fit in the `room` left (> 0): cut on a UTF-8 boundary (utf8.h) and
   counted, then copied by sw__segment_strndup_len, where it fits now. Out of line and cold, so
   that the call of the cut costs the common path no saved registers. */
static __attribute__((noinline, cold)) const char *
strndup_cut(sw__segment_t *seg, const char *s, size_t len, size_t room, uint32_t *out_len)
{
    seg->truncations++;
    len = sw__utf8_cut(s, len, room - 1);
    if (len == 0) {
        return empty_string;
    }
    return sw__segment_strndup_len(seg, s, len, out_len);
}

/* A string that is not all ASCII (it fits, len > 0): copied with memcpy, then made valid UTF-8
   in the arena. Out of line for the same reason, and so that sw__copy stays inlined in the one
   common path. */
static __attribute__((noinline, cold)) const char *strndup_repair(sw__segment_t *seg, const char *s,
                                                                  size_t len, uint32_t *out_len)
{
    char *dst = seg->arena + seg->arena_used;
    memcpy(dst, s, len);
    dst[len] = '\0';
    seg->arena_used += (uint32_t)(len + 1);
    *out_len = (uint32_t)len;
    return sw__utf8_repair(dst, len);
}

SW__HOT const char *sw__segment_strndup_len(sw__segment_t *seg, const char *s, size_t len,
                                            uint32_t *out_len)
{
    size_t room = arena_free(seg);
    *out_len = 0;
    if (len == 0) {
        return empty_string;
    }
    if (room == 0) {
        seg->truncations++;
        return empty_string;
    }
    if (len + 1 > room) {
        return strndup_cut(seg, s, len, room, out_len);
    }
    /* Every string of a segment enters here and leaves valid UTF-8 (utf8.h), so that no hostile
       byte fails the segment's gRPC call. An ASCII string costs one check a word at a time;
       the others go to the cold path (a tail call: the common path saves no registers). */
    if (__builtin_expect(!sw__utf8_ascii(s, len), 0)) {
        return strndup_repair(seg, s, len, out_len);
    }
    char *dst = seg->arena + seg->arena_used;
    sw__copy(dst, s, len);
    dst[len] = '\0';
    seg->arena_used += (uint32_t)(len + 1);
    *out_len = (uint32_t)len;
    return dst;
}

const char *sw__segment_strndup(sw__segment_t *seg, const char *s, size_t len)
{
    uint32_t n;
    return sw__segment_strndup_len(seg, s, len, &n);
}

SW__HOT const char *sw__segment_strdup_len(sw__segment_t *seg, const char *s, uint32_t *out_len)
{
    if (s == NULL) {
        *out_len = 0;
        return empty_string;
    }
    return sw__segment_strndup_len(seg, s, strlen(s), out_len);
}

const char *sw__segment_strdup(sw__segment_t *seg, const char *s)
{
    uint32_t n;
    return sw__segment_strdup_len(seg, s, &n);
}
