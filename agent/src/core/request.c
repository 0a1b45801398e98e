/*
 * request.c - request contexts: a segment held by the program through span references
 * (skywalking.h "Request contexts") instead of by a thread's span stack.
 *
 * A context is a segment block. Its spans are recorded by the same code as the stack API's: a
 * call on a reference puts the context's segment and the referenced span on the calling
 * thread's context for the length of the call (swap_in), runs the stack API's function, and
 * puts the thread's own state back (swap_out). So the setters, injection, sampling, ignore
 * rules, the span limit and the counters are one implementation for both APIs; the thread's
 * context only lends its per-thread parts (counters, segment cache, chunk, id state).
 * sw_context_attach is the same swap, left in place until sw_context_detach.
 *
 * Lifetime of a context's block: while any handle span is open or the context is attached
 * (ctx_holds > 0), the context holds one count of the segment's async_open, so the stack API
 * never reports it (sw__context_finish only parks a segment whose async_open is not 0). When
 * ctx_holds drops to 0 the context ends: its generation moves on (every reference is stale),
 * and it gives its async_open count back; the segment is reported then, or by the end of the
 * last asynchronous preload span begun inside it (instrument/span_async.c).
 *
 * Threads: the fields of a context belong to the thread that is inside a call on it; the
 * program hands the context from thread to thread with its own synchronisation. ctx_generation,
 * ctx_epoch and ctx_user are atomics read relaxed: they only let a stale or misused reference
 * be refused without a data race on them; they order nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "../profile/profile_sampler.h"
#include "../segment/clock.h"
#include "agent_state.h"
#include "context.h"

/* The context of references that record nothing: only its address is used (never written). */
static const char unrecorded_byte;

static inline sw_context_t *unrecorded_context(void)
{
    const void *p = &unrecorded_byte;
    return (sw_context_t *)p;
}

static inline sw_span_ref_t unrecorded_ref(void)
{
    return (sw_span_ref_t){unrecorded_context(), 0, -1};
}

/* What a swap replaced on the thread's context. */
typedef struct thread_state {
    sw__segment_t *segment;
    int32_t active;
    uint32_t noop_depth;
    bool unrecorded;
} thread_state_t;

static inline void swap_in(sw__context_t *c, sw__segment_t *seg, int32_t active,
                           thread_state_t *saved)
{
    saved->segment = c->segment;
    saved->active = c->active;
    saved->noop_depth = c->noop_depth;
    saved->unrecorded = c->unrecorded;
    c->segment = seg;
    c->active = active;
    c->noop_depth = 0;
    c->unrecorded = false;
}

static inline void swap_out(sw__context_t *c, const thread_state_t *saved)
{
    c->segment = saved->segment;
    c->active = saved->active;
    c->noop_depth = saved->noop_depth;
    c->unrecorded = saved->unrecorded;
}

/*
 * Checks `r` and joins the calling thread to the run. Returns the context's segment with
 * *cp = the thread's context, or NULL with *rc: SW_EINVAL, SW_ENOTRACED, SW_ENOSPAN (ended, or
 * from a finished run: *stale is then set when the context itself is of a finished run) or
 * SW_EBUSY.
 */
static sw__segment_t *ref_open(sw_span_ref_t r, sw__context_t **cp, int *rc, bool *stale)
{
    *stale = false;
    if (r.context == NULL) {
        *rc = SW_EINVAL;
        return NULL;
    }
    if (r.context == unrecorded_context()) {
        *rc = r.id < 0 ? SW_ENOTRACED : SW_EINVAL;
        return NULL;
    }
    if (r.id < 0) {
        *rc = SW_EINVAL;
        return NULL;
    }
    sw__segment_t *seg = (sw__segment_t *)(void *)r.context;
    if (atomic_load_explicit(&seg->ctx_generation, memory_order_relaxed) != r.generation) {
        *rc = SW_ENOSPAN;
        return NULL;
    }
    /* relaxed: compared with the run, as span.c's hot path does. */
    uint32_t run = atomic_load_explicit(&sw__epoch, memory_order_relaxed);
    if (atomic_load_explicit(&seg->ctx_epoch, memory_order_relaxed) != run || run == 0) {
        *stale = true;
        *rc = SW_ENOSPAN;
        return NULL;
    }
    sw__context_t *c = &sw__tls_context;
    if (c->epoch != run && !sw__context_join(c)) {
        *rc = SW_ENOSPAN;
        return NULL;
    }
    uintptr_t user = atomic_load_explicit(&seg->ctx_user, memory_order_relaxed);
    if (user != 0 && user != (uintptr_t)c) {
        *rc = SW_EBUSY;
        return NULL;
    }
    if ((uint32_t)r.id >= seg->span_count) {
        *rc = SW_EINVAL;
        return NULL;
    }
    *cp = c;
    return seg;
}

/* The context lets go of one hold; at the last one it ends (see the top of this file). */
static void context_release(sw__context_t *c, sw__segment_t *seg)
{
    if (--seg->ctx_holds != 0) {
        return;
    }
    atomic_fetch_add_explicit(&seg->ctx_generation, 1, memory_order_relaxed);
    sw__counter_add(&c->counters.contexts_ended, 1);
    if (--seg->async_open == 0) {
        sw__context_report(c, seg);
    }
}

/* A hold of a context whose run ended goes: its last one frees the block (the run's pool is
   gone; nothing is reported), unless a preload span begun in it still holds it. */
static void stale_release(sw__segment_t *seg)
{
    if (--seg->ctx_holds == 0 && seg->async_open == 1) {
        free(seg);
    }
}

/* A span of a context whose run ended: its end frees the block once nothing holds it (the
   run's pool is gone; nothing is reported). Other calls only refuse. */
static void stale_end(sw_span_ref_t r)
{
    sw__segment_t *seg = (sw__segment_t *)(void *)r.context;
    if ((uint32_t)r.id >= seg->span_count || seg->spans[r.id].end_ms != SW__SPAN_OPEN) {
        return;
    }
    seg->spans[r.id].end_ms = 0;
    stale_release(seg);
}

/* Turns span `id` of the context `seg`, just begun, into a handle span. */
static sw_span_ref_t handle_span(sw__segment_t *seg, int32_t id)
{
    seg->spans[id].end_ms = SW__SPAN_OPEN;
    seg->ctx_holds++;
    return (sw_span_ref_t){(sw_context_t *)(void *)seg,
                           atomic_load_explicit(&seg->ctx_generation, memory_order_relaxed), id};
}

/* Begins a new context with the stack API's begin functions on an emptied thread state. */
static int context_begin(sw_span_type_t type, const char *operation, const char *peer,
                         const sw_headers_t *in, sw_span_ref_t *span)
{
    if (span == NULL) {
        return SW_EINVAL;
    }
    *span = unrecorded_ref();
    sw__context_t *c = &sw__tls_context;
    static const sw_headers_t none;
    const sw_headers_t *h = in != NULL ? in : &none;
    /* A W3C entry that is not sampled writes these for sw_inject_w3c: kept for the thread. */
    bool w3c = h->traceparent != NULL;
    bool w3c_unsampled = c->w3c_unsampled;
    char w3c_trace_id[sizeof c->w3c_trace_id], w3c_parent_id[sizeof c->w3c_parent_id];
    if (w3c) {
        memcpy(w3c_trace_id, c->w3c_trace_id, sizeof w3c_trace_id);
        memcpy(w3c_parent_id, c->w3c_parent_id, sizeof w3c_parent_id);
    }
    if (c->epoch != atomic_load_explicit(&sw__epoch, memory_order_relaxed)) {
        sw__context_drop_stale(c); /* what the thread holds of a finished run */
    }
    thread_state_t saved;
    swap_in(c, NULL, -1, &saved);
    if (type == SW_SPAN_ENTRY &&
        (h->sw8 != NULL || h->sw8_correlation != NULL || h->sw8_x != NULL || w3c)) {
        sw_entry_span_begin_w3c(operation, h->sw8, h->sw8_correlation, h->sw8_x, h->traceparent,
                                h->tracestate);
    } else if (type == SW_SPAN_ENTRY) {
        sw_entry_span_begin(operation, NULL); /* no headers: the short path */
    } else if (type == SW_SPAN_EXIT) {
        sw_exit_span_begin(operation, peer);
    } else {
        sw_local_span_begin(operation);
    }
    int rc = SW_ENOTRACED;
    sw__segment_t *seg = c->segment;
    if (seg != NULL && c->noop_depth == 0) {
        atomic_fetch_add_explicit(&seg->ctx_generation, 1, memory_order_relaxed);
        atomic_store_explicit(&seg->ctx_epoch, c->epoch, memory_order_relaxed);
        atomic_store_explicit(&seg->ctx_user, 0, memory_order_relaxed);
        seg->ctx_holds = 0;
        seg->async_open++; /* the context's hold: the stack API never reports it */
        *span = handle_span(seg, c->active);
        sw__counter_add(&c->counters.contexts_begun, 1);
        rc = SW_OK;
    } else if (c->unrecorded) {
        sw__context_unrecorded_end(c); /* no block: finished and dropped, as a stack root */
    }
    swap_out(c, &saved);
    c->w3c_unsampled = w3c_unsampled;
    if (w3c) {
        memcpy(c->w3c_trace_id, w3c_trace_id, sizeof w3c_trace_id);
        memcpy(c->w3c_parent_id, w3c_parent_id, sizeof w3c_parent_id);
    }
    return rc;
}

int sw_context_begin_entry(const char *operation, const sw_headers_t *incoming, sw_span_ref_t *span)
{
    return context_begin(SW_SPAN_ENTRY, operation, NULL, incoming, span);
}

int sw_context_begin_local(const char *operation, sw_span_ref_t *span)
{
    return context_begin(SW_SPAN_LOCAL, operation, NULL, NULL, span);
}

int sw_context_begin_exit(const char *operation, const char *peer, sw_span_ref_t *span)
{
    return context_begin(SW_SPAN_EXIT, operation, peer, NULL, span);
}

/* Begins a span under `parent` in its context. */
static int child_begin(sw_span_ref_t parent, sw_span_type_t type, const char *operation,
                       const char *peer, sw_span_ref_t *span)
{
    if (span == NULL) {
        return SW_EINVAL;
    }
    *span = unrecorded_ref();
    int rc;
    bool stale;
    sw__context_t *c;
    sw__segment_t *seg = ref_open(parent, &c, &rc, &stale);
    if (seg == NULL) {
        return rc;
    }
    int32_t id = sw__context_span_add(c, seg, parent.id, type, operation, peer, sw__now_ms());
    if (id < 0) {
        return SW_ENOTRACED; /* over the span limit (counted) */
    }
    *span = handle_span(seg, id);
    return SW_OK;
}

int sw_span_ref_begin_entry(sw_span_ref_t parent, const char *operation, sw_span_ref_t *span)
{
    return child_begin(parent, SW_SPAN_ENTRY, operation, NULL, span);
}

int sw_span_ref_begin_local(sw_span_ref_t parent, const char *operation, sw_span_ref_t *span)
{
    return child_begin(parent, SW_SPAN_LOCAL, operation, NULL, span);
}

int sw_span_ref_begin_exit(sw_span_ref_t parent, const char *operation, const char *peer,
                           sw_span_ref_t *span)
{
    return child_begin(parent, SW_SPAN_EXIT, operation, peer, span);
}

int sw_span_ref_end(sw_span_ref_t span)
{
    int rc;
    bool stale;
    sw__context_t *c;
    sw__segment_t *seg = ref_open(span, &c, &rc, &stale);
    if (seg == NULL) {
        if (stale) {
            stale_end(span);
        }
        return rc == SW_ENOTRACED ? SW_OK : rc;
    }
    sw__span_t *sp = &seg->spans[span.id];
    if (sp->end_ms != SW__SPAN_OPEN) {
        return SW_ENOSPAN; /* ended already, or a span the stack API began */
    }
    sp->end_ms = sw__now_ms();
    context_release(c, seg);
    return SW_OK;
}

/* Runs one stack-API call `call` with `span` as the thread's active span. */
#define WITH_SPAN(span, call)                                       \
    do {                                                            \
        int rc_;                                                    \
        bool stale_;                                                \
        sw__context_t *c_;                                          \
        sw__segment_t *seg_ = ref_open((span), &c_, &rc_, &stale_); \
        if (seg_ == NULL) {                                         \
            return rc_;                                             \
        }                                                           \
        thread_state_t saved_;                                      \
        swap_in(c_, seg_, (span).id, &saved_);                      \
        rc_ = (call);                                               \
        swap_out(c_, &saved_);                                      \
        return rc_;                                                 \
    } while (0)

int sw_span_ref_set_component(sw_span_ref_t span, int32_t component_id)
{
    WITH_SPAN(span, sw_span_set_component(component_id));
}

int sw_span_ref_set_layer(sw_span_ref_t span, sw_layer_t layer)
{
    WITH_SPAN(span, sw_span_set_layer(layer));
}

int sw_span_ref_set_peer(sw_span_ref_t span, const char *peer)
{
    WITH_SPAN(span, sw_span_set_peer(peer));
}

int sw_span_ref_set_error(sw_span_ref_t span, bool is_error)
{
    WITH_SPAN(span, sw_span_set_error(is_error));
}

int sw_span_ref_tag(sw_span_ref_t span, const char *key, const char *value)
{
    int rc;
    bool stale;
    sw__context_t *c;
    sw__segment_t *seg = ref_open(span, &c, &rc, &stale);
    return seg != NULL ? sw__span_tag_at(seg, span.id, key, value) : rc;
}

int sw_span_ref_log(sw_span_ref_t span, const sw_kv_t *kvs, size_t n)
{
    WITH_SPAN(span, sw_span_log(kvs, n));
}

int sw_span_ref_inject(sw_span_ref_t span, char *sw8, size_t sw8_len, char *correlation,
                       size_t correlation_len, char *sw8_x, size_t sw8_x_len)
{
    WITH_SPAN(span, sw_inject(sw8, sw8_len, correlation, correlation_len, sw8_x, sw8_x_len));
}

int sw_span_ref_inject_w3c(sw_span_ref_t span, char *traceparent, size_t traceparent_len,
                           char *tracestate, size_t tracestate_len)
{
    WITH_SPAN(span, sw_inject_w3c(traceparent, traceparent_len, tracestate, tracestate_len));
}

int sw_span_ref_capture(sw_span_ref_t span, sw_snapshot_t *snap)
{
    if (snap != NULL) {
        snap->span_id = -1; /* not captured until sw_capture says so */
    }
    WITH_SPAN(span, sw_capture(snap));
}

int sw_span_ref_continue(sw_span_ref_t span, const sw_snapshot_t *snap)
{
    WITH_SPAN(span, sw_continue(snap));
}

int sw_context_attach(sw_span_ref_t span, sw_attach_t *saved)
{
    if (saved == NULL) {
        return SW_EINVAL;
    }
    memset(saved, 0, sizeof *saved);
    sw__context_t *c = &sw__tls_context;
    int rc;
    bool stale;
    sw__context_t *owner;
    sw__segment_t *seg = NULL;
    if (span.context != unrecorded_context() || span.id >= 0) {
        seg = ref_open(span, &owner, &rc, &stale);
        if (seg == NULL) {
            return rc;
        }
    }
    thread_state_t was;
    swap_in(c, seg, seg != NULL ? span.id : -1, &was);
    saved->segment_ = was.segment;
    saved->active_ = was.active;
    saved->noop_depth_ = was.noop_depth;
    saved->unrecorded_ = was.unrecorded;
    saved->attached_ = true;
    if (seg == NULL) {
        c->noop_depth = 1; /* the stack API records nothing until detach */
        return SW_ENOTRACED;
    }
    saved->context_ = span.context;
    saved->generation_ = span.generation;
    /* ctx_user: whether another thread has it attached too; stored here, cleared by the
       detach of the outermost attach on this thread. */
    if (atomic_load_explicit(&seg->ctx_user, memory_order_relaxed) == 0) {
        atomic_store_explicit(&seg->ctx_user, (uintptr_t)c, memory_order_relaxed);
    } else {
        saved->nested_ = true; /* attached on this thread already: keep ctx_user */
    }
    seg->ctx_holds++;
    /* Trace profiling: a profiled context is sampled on the thread it is attached to. */
    if (__builtin_expect(atomic_load_explicit(&sw__profile_task_now, memory_order_relaxed) != NULL,
                         0)) {
        sw__profile_attach(seg);
    }
    return SW_OK;
}

int sw_context_detach(sw_attach_t *saved)
{
    if (saved == NULL || !saved->attached_) {
        return SW_EINVAL;
    }
    sw__context_t *c = &sw__tls_context;
    thread_state_t was = {saved->segment_, saved->active_, saved->noop_depth_, saved->unrecorded_};
    saved->attached_ = false;
    sw__segment_t *seg = (sw__segment_t *)(void *)saved->context_;
    swap_out(c, &was);
    if (seg == NULL) {
        return SW_OK;
    }
    if (atomic_load_explicit(&seg->ctx_epoch, memory_order_relaxed) !=
        atomic_load_explicit(&sw__epoch, memory_order_relaxed)) {
        stale_release(seg); /* the run ended while attached */
        return SW_OK;
    }
    if (!saved->nested_) {
        atomic_store_explicit(&seg->ctx_user, 0, memory_order_relaxed);
    }
    context_release(c, seg);
    return SW_OK;
}
