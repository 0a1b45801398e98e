/*
 * span_mark.c - spans that may be removed again at their end (see span_mark.h).
 */
#include "span_mark.h"

#include "../core/context.h"
#include "../core/agent_state.h"
#include "../util/locality.h"

/* The segment state before a begin, valid only for a segment of the current run. */
static void mark_before(const sw__context_t *c, sw__span_mark_t *m)
{
    const sw__segment_t *seg = c->segment;
    if (seg == NULL) {
        return;
    }
    m->arena_before = seg->arena_used;
    m->attrs_before = seg->attr_count;
    m->refs_before = seg->ref_count;
}

/* After a begin: which span was recorded, if any, and what the begin attached. A push into an
   existing segment always gets an id >= 1; id 0 means the begin started a new segment
   (possibly at a recycled address). */
static void mark_after(const sw__context_t *c, sw__span_mark_t *m)
{
    const sw__segment_t *seg = c->segment;
    if (c->noop_depth != 0 || seg == NULL) {
        m->segment = NULL;
        m->span_id = -1;
        return;
    }
    m->segment = c->segment;
    m->span_id = c->active;
    m->attrs_after = seg->attr_count;
    m->refs_after = seg->ref_count;
    m->truncations_after = seg->truncations;
    m->correlation_after = seg->correlation.count;
}

void sw__span_begin_local_marked(const char *operation, sw__span_mark_t *mark)
{
    sw__context_t *c = &sw__tls_context;
    mark_before(c, mark);
    sw_local_span_begin(operation);
    mark_after(c, mark);
}

void sw__span_begin_entry_marked(const char *operation, const char *sw8, const char *correlation,
                                 const char *sw8_x, const char *traceparent, const char *tracestate,
                                 sw__span_mark_t *mark)
{
    sw__context_t *c = &sw__tls_context;
    mark_before(c, mark);
    sw_entry_span_begin_w3c(operation, sw8, correlation, sw8_x, traceparent, tracestate);
    mark_after(c, mark);
}

SW__HOT void sw__span_begin_exit_marked(const char *operation, const char *peer,
                                        sw__span_mark_t *mark)
{
    sw__context_t *c = &sw__tls_context;
    mark_before(c, mark);
    sw_exit_span_begin(operation, peer);
    mark_after(c, mark);
}

/* True when the span of `m` is still the active, last span and nothing was attached to it. */
static bool mark_untouched(const sw__context_t *c, const sw__span_mark_t *m)
{
    const sw__segment_t *seg = c->segment;
    if (m->segment == NULL || seg != m->segment || c->noop_depth != 0 || c->active != m->span_id ||
        seg->span_count != (uint32_t)m->span_id + 1) {
        return false;
    }
    /* relaxed: compares with the run this thread joined, like span.c's hot path. */
    if (c->epoch != atomic_load_explicit(&sw__epoch, memory_order_relaxed)) {
        return false;
    }
    return seg->attr_count == m->attrs_after && seg->ref_count == m->refs_after &&
           seg->truncations == m->truncations_after &&
           seg->correlation.count == m->correlation_after;
}

bool sw__span_discard_marked(const sw__span_mark_t *mark)
{
    sw__context_t *c = &sw__tls_context;
    if (!mark_untouched(c, mark)) {
        return false;
    }
    sw__segment_t *seg = c->segment;
    if (mark->span_id == 0) {
        /* The span began the segment: give the block back unreported (not a finished
           segment, so no counter moves). */
        c->segment = NULL;
        c->active = -1;
        sw__segment_cache_put(&c->cache, &sw__agent.pool, seg);
        return true;
    }
    c->active = seg->spans[mark->span_id].parent_id;
    seg->span_count--;
    /* Drops the copies of its operation and peer, and what its begin attached. */
    seg->arena_used = mark->arena_before;
    seg->attr_count = mark->attrs_before;
    seg->ref_count = mark->refs_before;
    return true;
}

bool sw__span_stash_marked(const sw__span_mark_t *mark, const void *key_a, const void *key_b)
{
    sw__context_t *c = &sw__tls_context;
    if (mark->span_id != 0 || !mark_untouched(c, mark)) {
        return false;
    }
    if (c->stash != NULL) {
        sw__segment_cache_put(&c->cache, &sw__agent.pool, c->stash);
    }
    c->stash = c->segment;
    c->stash_key[0] = key_a;
    c->stash_key[1] = key_b;
    c->segment = NULL;
    c->active = -1;
    return true;
}

bool sw__span_resume_marked(const void *key_a, const void *key_b, sw__span_mark_t *mark)
{
    sw__context_t *c = &sw__tls_context;
    /* relaxed: compares with the run this thread joined, like span.c's hot path; a stash of an
       earlier run is freed by the next begin's join. */
    if (c->stash == NULL || c->stash_key[0] != key_a || c->stash_key[1] != key_b ||
        c->segment != NULL || c->noop_depth != 0 ||
        c->epoch != atomic_load_explicit(&sw__epoch, memory_order_relaxed)) {
        return false;
    }
    c->segment = c->stash;
    c->stash = NULL;
    c->active = 0;
    mark->arena_before = 0;
    mark->attrs_before = 0;
    mark->refs_before = 0;
    mark_after(c, mark);
    return true;
}
