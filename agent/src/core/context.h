/*
 * context.h - the per-thread TracingContext (internal); the process-wide state it joins is in
 * agent_state.h.
 *
 * Each thread owns one sw__context_t in initial-exec TLS. Its hot fields (noop_depth, active,
 * segment, epoch) are read and written by that thread only. `counters` are written by the
 * thread only and read by sw_stats on other threads, hence atomics with relaxed load+store (no
 * read-modify-write on the hot path, and no cache line shared with another thread).
 *
 * Agent runs are numbered by `sw__epoch` (0 = off). A context remembers the epoch it joined;
 * when it differs from the current one, everything the context holds belongs to a finished run
 * and is freed, never reused.
 */
#ifndef SW_CORE_CONTEXT_H
#define SW_CORE_CONTEXT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../segment/ids.h"
#include "../segment/segment.h"
#include "../segment/segment_pool.h"
#include "../util/tls_model.h"
#include "skywalking.h"
#include "span_instrument.h"

typedef struct sw__thread_counters {
    _Atomic uint64_t finished;
    _Atomic uint64_t dropped;
    _Atomic uint64_t sampled_out;
    _Atomic uint64_t ignored;
    _Atomic uint64_t spans_limited;
    _Atomic uint64_t arena_truncated;
    _Atomic uint64_t sw8_invalid;
    _Atomic uint64_t contexts_begun; /* request contexts (request.c) begun on this thread... */
    _Atomic uint64_t contexts_ended; /* ...and ended on it (a context may end on another) */
} sw__thread_counters_t;

/* Single-writer increment: the owning thread only. Relaxed: readers want a value, not order. */
static inline void sw__counter_add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

typedef struct sw__context sw__context_t;
struct sw__context {
    /* Hot: span begin/end. Owning thread only. */
    uint32_t noop_depth;    /* open spans that are not recorded (unsampled, over the limit) */
    int32_t active;         /* id of the active recorded span, -1 when none */
    sw__segment_t *segment; /* the segment being recorded, NULL when none */
    uint32_t epoch;         /* the agent run this context joined; 0: none */
    bool unrecorded;        /* the open no-op trace was sampled but got no segment block */

    /* Owning thread only. */
    bool key_set; /* the thread-exit destructor is armed */
    /* The open no-op trace was begun by a W3C traceparent with the sampled flag off: its
       trace-id and parent-id, which sw_inject_w3c passes on unchanged (flags 00) so that the
       downstream keeps the decision. Cleared by every trace start (sw__context_start). */
    bool w3c_unsampled;
    char w3c_trace_id[33];
    char w3c_parent_id[17];
    sw__segment_cache_t cache;
    struct sw__chunk *chunk; /* where this thread encodes its finished segments (chunk.h) */
    sw__id_state_t ids;
    /* A segment whose first span is open but off the stack, set aside between two calls of
       one request (sw__span_stash_marked, span_mark.h), and the two pointers it was set aside
       under; NULL: none. At most one per thread: a newer one gives the older back. */
    sw__segment_t *stash;
    const void *stash_key[2];

    /* Written by the owning thread, read by sw_stats (see sw__counter_add). */
    sw__thread_counters_t counters;

    /* Registry links and the run they belong to: protected by sw__agent.registry_lock. */
    sw__context_t *reg_prev, *reg_next;
    uint32_t registered_epoch;
};

extern _Thread_local sw__context_t sw__tls_context SW__TLS_MODEL;

/*
 * The current run (0 = agent off). Stored with release by sw_init after the agent state is
 * complete and with release by sw_shutdown (0); a thread joining a run loads it with acquire
 * (partner) in sw__context_join. The hot path compares it relaxed against the epoch the thread
 * already joined, which needs no ordering.
 */
extern _Atomic uint32_t sw__epoch;

/* Slow path of every begin: joins the current run if needed. Returns false when the agent is
   off (the caller then records nothing and counts nothing). */
bool sw__context_join(sw__context_t *c);

/* Frees what a context holds from a finished run and empties it. */
void sw__context_drop_stale(sw__context_t *c);

/*
 * Starts a trace on a context with no open span: ignore list, sampling, a segment from the pool,
 * the upstream trace id when there is one, the first span (the ids: sw__context_ids). `upstream`
 * may be NULL. Owning thread only.
 */
struct sw__sw8;
void sw__context_start(sw__context_t *c, sw_span_type_t type, const char *op, const char *peer,
                       const struct sw__sw8 *upstream, int64_t now_ms);

/* Pushes a recorded span (or a no-op one past the limit) on a context with a segment. */
void sw__context_push(sw__context_t *c, sw_span_type_t type, const char *op, const char *peer,
                      int64_t now_ms);

/* Adds a span under `parent` to `seg` (the thread's segment, or a request context's) and
   returns its id, or -1 past the segment's span limit (counted in c's spans_limited, the
   segment marked size-limited). c is the calling thread's context, in the current run. */
int32_t sw__context_span_add(sw__context_t *c, sw__segment_t *seg, int32_t parent,
                             sw_span_type_t type, const char *op, const char *peer, int64_t now_ms);

/*
 * A segment's ids (its segment id and, unless it continues another trace, a new trace id) are
 * made when first needed: by sw_inject / sw_inject_w3c / sw_capture, a log's trace context, a
 * W3C entry that compares trace ids, and at the latest by sw__context_finish. A segment that a
 * plugin begins and discards again (span_mark.h: libmicrohttpd calls its handler once before
 * each request's real call) never makes them. Until then both are "" (sw__segment_reset).
 * They are made as sw__context_start once made them, with the time the segment began.
 * Owning thread only.
 */
void sw__context_ids_make(sw__context_t *c, sw__segment_t *seg);

static inline void sw__context_ids(sw__context_t *c, sw__segment_t *seg)
{
    if (__builtin_expect(seg->segment_id[0] == '\0', 0)) {
        sw__context_ids_make(c, seg);
    }
}

/* Records a reference on the active span. Returns 0 or SW_ELIMIT. */
int sw__context_add_ref(sw__context_t *c, int type, const char *trace_id,
                        const char *parent_segment_id, int32_t parent_span_id,
                        const char *parent_service, const char *parent_instance,
                        const char *parent_endpoint, const char *address);

/* The last span ended: counts and hands the segment to the DataCarrier; a segment with
   asynchronous spans still open (seg->async_open) is only detached from the context (parked)
   and reported by the end of its last asynchronous span. */
void sw__context_finish(sw__context_t *c);

/* sw_span_tag on span `span` of `seg` (a request context's segment, request.c). Returns 0 or
   SW_EINVAL (key NULL). */
int sw__span_tag_at(sw__segment_t *seg, int32_t span, const char *key, const char *value);

/* Counts `seg`, a finished segment the calling thread owns, and hands it to the DataCarrier
   (or counts it dropped); its block goes to c's cache. c must be in the current run. */
void sw__context_report(sw__context_t *c, sw__segment_t *seg);

/*
 * The root span of a trace that was sampled but got no segment block (the pool's cap, or
 * malloc) ended: counts the segment as finished and dropped, so that finished == reported +
 * dropped + failed still holds. Not counted when the run it began in is over. Owning thread.
 */
void sw__context_unrecorded_end(sw__context_t *c);

/* The recorded active span if the thread has one in the current run, else NULL; *rc says why. */
sw__span_t *sw__context_active_span(sw__context_t *c, int *rc);

/* The calling thread's context when it has a recorded active span in the current run (its
   segment is c->segment, the span c->active), else NULL; *rc says why, as above. Inline: every
   setter and tag runs it; the cases without a recorded span go to sw__context_active_span.
   relaxed: compares with the run this thread joined (above). */
static inline sw__context_t *sw__context_recording(int *rc)
{
    sw__context_t *c = &sw__tls_context;
    if (__builtin_expect(c->noop_depth == 0 && c->segment != NULL &&
                             c->epoch == atomic_load_explicit(&sw__epoch, memory_order_relaxed),
                         1)) {
        *rc = 0;
        return c;
    }
    (void)sw__context_active_span(c, rc);
    return NULL;
}

/* The segment the calling thread records now (its span stack's, or an attached request
   context's), or NULL: the profiler's signal handler asks it (profile/profile_sampler.h).
   Async-signal-safe. */
sw__segment_t *sw__context_current_segment(void);

#endif /* SW_CORE_CONTEXT_H */
