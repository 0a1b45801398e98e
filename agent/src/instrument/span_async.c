/*
 * span_async.c - exit spans that outlive the call that began them (see span_async.h).
 */
#include "span_async.h"

#include "../segment/clock.h"
#include "../core/context.h"
#include "../util/locality.h"

int64_t sw__span_clock_ms(void)
{
    return sw__now_ms();
}

/* Thread tokens: a thread's context may sit at the address of an exited thread's, so the owner
   of a detached span is recorded as a number no other thread ever gets. */
static _Atomic uint64_t next_token = 1;
static _Thread_local uint64_t tls_token SW__TLS_MODEL; /* as sw__tls_context */

static uint64_t thread_token(void)
{
    if (tls_token == 0) { /* relaxed: uniqueness only needs the atomic increment */
        tls_token = atomic_fetch_add_explicit(&next_token, 1, memory_order_relaxed);
    }
    return tls_token;
}

/* relaxed: compares with the run this thread joined, like span.c's hot path. */
static bool run_current(uint32_t epoch)
{
    return epoch != 0 && epoch == atomic_load_explicit(&sw__epoch, memory_order_relaxed);
}

void sw__span_async_begin_exit(const char *operation, const char *peer, sw__span_async_t *a,
                               sw__span_mark_t *mark)
{
    sw__context_t *c = &sw__tls_context;
    sw__span_begin_exit_marked(operation, peer, mark);
    a->owner = thread_token();
    if (c->noop_depth != 0 || c->segment == NULL) {
        a->segment = NULL;
        a->span_id = -1;
        a->epoch = 0;
        return;
    }
    a->segment = c->segment;
    a->span_id = c->active;
    a->epoch = c->epoch;
}

void sw__span_async_detach(sw__span_async_t *a)
{
    sw__context_t *c = &sw__tls_context;
    sw__segment_t *seg = a->segment;
    if (seg == NULL || c->segment != seg || c->active != a->span_id || c->noop_depth != 0 ||
        !run_current(a->epoch)) {
        a->segment = NULL; /* not recorded, or not the active span: end it as a plain span */
        sw_span_end();
        return;
    }
    seg->async_open++;
    c->active = seg->spans[a->span_id].parent_id;
    if (c->active < 0) {
        sw__context_finish(c); /* parks the segment: async_open != 0 */
    }
}

bool sw__span_async_resume(sw__span_async_t *a, sw__span_async_saved_t *s)
{
    sw__context_t *c = &sw__tls_context;
    s->resumed = false;
    if (a->segment == NULL || a->owner != thread_token() || !run_current(a->epoch) ||
        c->epoch != a->epoch) {
        return false;
    }
    s->segment = c->segment;
    s->active = c->active;
    s->noop_depth = c->noop_depth;
    s->unrecorded = c->unrecorded;
    s->resumed = true;
    c->segment = a->segment;
    c->active = a->span_id;
    c->noop_depth = 0;
    c->unrecorded = false;
    return true;
}

bool sw__span_async_end(sw__span_async_t *a, sw__span_async_saved_t *s)
{
    sw__context_t *c = &sw__tls_context;
    if (!s->resumed) {
        if (a->segment != NULL && a->owner != thread_token()) {
            return false;
        }
        /* Not recorded, or from an earlier run: its block may be gone with that run's
           context (sw__context_drop_stale), so it is not touched. */
        a->segment = NULL;
        return true;
    }
    sw__segment_t *seg = a->segment;
    seg->spans[a->span_id].end_ms = sw__now_ms();
    seg->async_open--;
    bool parked = seg != s->segment;
    if (parked && seg->async_open == 0) {
        c->active = -1;
        sw__context_finish(c); /* reports seg and clears c->segment */
    }
    c->segment = s->segment;
    c->active = s->active;
    c->noop_depth = s->noop_depth;
    c->unrecorded = s->unrecorded;
    a->segment = NULL;
    return true;
}

SW__HOT void sw__span_begin_exit_since(const char *operation, const char *peer, int64_t start_ms,
                                       sw__span_mark_t *mark)
{
    sw__context_t *c = &sw__tls_context;
    sw__span_begin_exit_marked(operation, peer, mark);
    if (start_ms == 0 || mark->segment == NULL) {
        return;
    }
    sw__span_t *sp = &c->segment->spans[c->active];
    int64_t floor = sp->parent_id >= 0 ? c->segment->spans[sp->parent_id].start_ms : INT64_MIN;
    if (start_ms < floor) {
        start_ms = floor;
    }
    if (start_ms < sp->start_ms) {
        sp->start_ms = start_ms;
    }
}
