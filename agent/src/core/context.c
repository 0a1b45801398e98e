/*
 * context.c - TracingContext lifecycle: joining a run, starting and finishing segments,
 * references, and the registry of per-thread counters.
 */
#include "context.h"
#include "agent_state.h"

#include <stdlib.h>
#include <string.h>

#include "../propagation/sw8.h"
#include "../propagation/traceparent.h"
#include "../encode/segment_item.h"
#include "../segment/clock.h"
#include "../config/dynamic_config.h"
#include "../util/locality.h"
#include "../profile/profile_sampler.h"

_Thread_local sw__context_t sw__tls_context SW__TLS_MODEL = {.active = -1};

_Atomic uint32_t sw__epoch;

sw__agent_t sw__agent = {.registry_lock = PTHREAD_MUTEX_INITIALIZER};

/* The thread-exit hook, created once per process (global: one key serves every run). */
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void counters_fold(const sw__thread_counters_t *t, sw_stats_t *out)
{
    /* relaxed: single-writer counters; exact once the writer is quiescent. */
    out->segments_finished += atomic_load_explicit(&t->finished, memory_order_relaxed);
    out->segments_dropped += atomic_load_explicit(&t->dropped, memory_order_relaxed);
    out->traces_sampled_out += atomic_load_explicit(&t->sampled_out, memory_order_relaxed);
    out->traces_ignored += atomic_load_explicit(&t->ignored, memory_order_relaxed);
    out->spans_limited += atomic_load_explicit(&t->spans_limited, memory_order_relaxed);
    out->arena_truncated += atomic_load_explicit(&t->arena_truncated, memory_order_relaxed);
    out->sw8_invalid += atomic_load_explicit(&t->sw8_invalid, memory_order_relaxed);
    /* Unsigned wrap-around: a thread may end more contexts than it began; the sum is exact. */
    out->contexts_open += atomic_load_explicit(&t->contexts_begun, memory_order_relaxed) -
                          atomic_load_explicit(&t->contexts_ended, memory_order_relaxed);
}

static void registry_unlink(sw__context_t *c)
{
    if (c->reg_prev != NULL) {
        c->reg_prev->reg_next = c->reg_next;
    } else {
        sw__agent.registry_head = c->reg_next;
    }
    if (c->reg_next != NULL) {
        c->reg_next->reg_prev = c->reg_prev;
    }
    c->reg_prev = c->reg_next = NULL;
    c->registered_epoch = 0;
}

/* Runs when a thread that joined a run exits (pthread key destructor). */
static void context_thread_exit(void *arg)
{
    sw__context_t *c = arg;
    if (sw__agent.thread_exiting != NULL) {
        sw__agent.thread_exiting(c);
    }
    pthread_mutex_lock(&sw__agent.registry_lock);
    if (c->registered_epoch != 0 && c->registered_epoch == sw__agent.run_epoch) {
        /* The run is still open, so its pool is alive: give the blocks back to it. */
        counters_fold(&c->counters, &sw__agent.retired);
        registry_unlink(c);
        if (c->segment != NULL) {
            sw__segment_cache_put(&c->cache, &sw__agent.pool, c->segment);
        }
        if (c->stash != NULL) {
            sw__segment_cache_put(&c->cache, &sw__agent.pool, c->stash);
        }
        c->segment = NULL;
        c->stash = NULL;
        sw__segment_cache_flush(&c->cache, &sw__agent.pool);
        if (c->chunk != NULL) {
            sw__chunk_seal(&sw__agent.chunks, c->chunk);
            c->chunk = NULL;
        }
    }
    pthread_mutex_unlock(&sw__agent.registry_lock);
    /* Frees what was not given back above (a finished run's blocks) and empties the context. */
    sw__context_drop_stale(c);
    c->key_set = false;
}

static _Atomic bool exit_key_made; /* whether exit_key_create ran (read by the destructor) */

static void exit_key_create(void)
{
    if (pthread_key_create(&exit_key, context_thread_exit) == 0) {
        atomic_store_explicit(&exit_key_made, true, memory_order_release);
    }
}

/* When the library is unloaded (dlclose after sw_shutdown): a thread that traced and exits
   later must not call context_thread_exit, whose code is gone. What the thread still holds is
   a finished run's and was counted at sw_shutdown; its static TLS block is the thread's. */
__attribute__((destructor)) static void exit_key_delete(void)
{
    /* acquire: partner of the release store in exit_key_create; exit_key is set. */
    if (atomic_load_explicit(&exit_key_made, memory_order_acquire)) {
        (void)pthread_key_delete(exit_key);
    }
}

void sw__context_drop_stale(sw__context_t *c)
{
    free(c->segment);
    free(c->stash);
    sw__segment_cache_free(&c->cache);
    if (c->chunk != NULL) {
        sw__chunk_seal(NULL, c->chunk); /* the run's consumer has released all its records */
        c->chunk = NULL;
    }
    c->segment = NULL;
    c->stash = NULL;
    c->noop_depth = 0;
    c->unrecorded = false;
    c->active = -1;
    c->epoch = 0;
}

SW__HOT bool sw__context_join(sw__context_t *c)
{
    /* acquire: partner of sw_init's release store; makes the agent state visible. */
    uint32_t e = atomic_load_explicit(&sw__epoch, memory_order_acquire);
    if (c->epoch == e) {
        return e != 0;
    }
    if (c->epoch != 0 || c->segment != NULL || c->stash != NULL || c->cache.head != NULL ||
        c->chunk != NULL) {
        sw__context_drop_stale(c);
    }
    if (e == 0) {
        return false;
    }
    if (!c->key_set) {
        pthread_once(&exit_key_once, exit_key_create);
        c->key_set = pthread_setspecific(exit_key, c) == 0;
    }
    pthread_mutex_lock(&sw__agent.registry_lock);
    if (sw__agent.run_epoch != e) {
        /* The run ended between the load and the lock. */
        pthread_mutex_unlock(&sw__agent.registry_lock);
        return false;
    }
    if (c->registered_epoch != 0) {
        registry_unlink(c);
    }
    /* Counters restart for the new run (the previous run folded them at its shutdown). */
    memset(&c->counters, 0, sizeof c->counters);
    c->reg_prev = NULL;
    c->reg_next = sw__agent.registry_head;
    if (c->reg_next != NULL) {
        c->reg_next->reg_prev = c;
    }
    sw__agent.registry_head = c;
    c->registered_epoch = e;
    pthread_mutex_unlock(&sw__agent.registry_lock);
    if (sw__agent.thread_joined != NULL) {
        sw__agent.thread_joined(c);
    }
    c->epoch = e;
    c->active = -1;
    c->noop_depth = 0;
    c->unrecorded = false;
    return true;
}

SW__HOT void sw__context_push(sw__context_t *c, sw_span_type_t type, const char *op,
                              const char *peer, int64_t now_ms)
{
    int32_t id = sw__context_span_add(c, c->segment, c->active, type, op, peer, now_ms);
    if (id < 0) {
        c->noop_depth++;
        return;
    }
    c->active = id;
}

SW__HOT int32_t sw__context_span_add(sw__context_t *c, sw__segment_t *seg, int32_t parent,
                                     sw_span_type_t type, const char *op, const char *peer,
                                     int64_t now_ms)
{
    if (seg->span_count >= seg->span_limit) {
        seg->size_limited = true;
        sw__counter_add(&c->counters.spans_limited, 1);
        return -1;
    }
    uint32_t id = seg->span_count++;
    sw__span_t *sp = &seg->spans[id];
    sp->start_ms = now_ms;
    sp->end_ms = now_ms;
    sp->operation = sw__segment_strdup_len(seg, op, &sp->operation_len);
    sp->peer_len = 0;
    sp->peer = peer != NULL ? sw__segment_strdup_len(seg, peer, &sp->peer_len) : NULL;
    sp->parent_id = parent;
    sp->component_id = 0;
    sp->type = (uint8_t)type;
    sp->layer = SW_LAYER_UNKNOWN;
    sp->is_error = 0;
    sp->reserved = 0;
    return (int32_t)id;
}

/* A task samples: profiles the segment when its first span is the task's endpoint. Its ids are
   made now, the snapshots name it. acquire: the task and the slots (partner: the release in
   sw__profile_sampler_start). */
static __attribute__((noinline, cold)) void profile_begin(sw__context_t *c, sw__segment_t *seg,
                                                          const char *op, int64_t now_ms)
{
    const sw__profile_task_t *task =
        atomic_load_explicit(&sw__profile_task_now, memory_order_acquire);
    if (task != NULL && sw__profile_wants(task, op)) {
        sw__context_ids(c, seg);
        sw__profile_begin(task, seg, seg->segment_id, now_ms);
    }
}

sw__segment_t *sw__context_current_segment(void)
{
    /* Async-signal-safe: one thread-local read. The profiler's signal handler calls it on a
       thread that began or attached a profiled segment, so its TLS block exists (with the
       dynamic TLS model of a dlopened libskywalking.so a first access could allocate; the only
       way there is a profiled thread that exited with its segment open and whose id a new
       thread took before the next tick noticed). */
    return sw__tls_context.segment;
}

SW__HOT void sw__context_start(sw__context_t *c, sw_span_type_t type, const char *op,
                               const char *peer, const sw__sw8_t *upstream, int64_t now_ms)
{
    c->w3c_unsampled = false;
    if (sw__dyncfg_ignored(op)) {
        c->noop_depth = 1;
        sw__counter_add(&c->counters.ignored, 1);
        return;
    }
    bool sampled;
    if (upstream != NULL) {
        sampled = upstream->sample == 1;
        if (sampled) {
            sw__sampler_force(&sw__agent.sampler, now_ms);
        }
    } else {
        sampled = sw__sampler_try(&sw__agent.sampler, now_ms);
    }
    if (!sampled) {
        c->noop_depth = 1;
        sw__counter_add(&c->counters.sampled_out, 1);
        return;
    }
    sw__segment_t *seg = sw__segment_cache_get(&c->cache, &sw__agent.pool);
    if (seg == NULL) {
        /* The pool is at its cap (or malloc failed): the trace is not recorded, its spans are
           no-ops, and its root span's end counts it as a dropped segment
           (sw__context_unrecorded_end). */
        c->noop_depth = 1;
        c->unrecorded = true;
        return;
    }
    /* The limit of the run now (configuration discovery may change it; dynamic_config.h); it
       stays fixed for this segment, and never exceeds the block's capacity. */
    seg->span_limit = sw__dyncfg_span_limit();
    if (upstream != NULL) {
        size_t n = strlen(upstream->trace_id); /* < SW__TRACE_ID_MAX, checked by the decoder */
        memcpy(seg->trace_id, upstream->trace_id, n + 1);
    }
    c->segment = seg;
    c->active = -1;
    sw__context_push(c, type, op, peer, now_ms);
    /* Trace profiling: one relaxed load while no task samples (profile/profile_sampler.h). */
    const sw__profile_task_t *task =
        atomic_load_explicit(&sw__profile_task_now, memory_order_relaxed);
    if (__builtin_expect(task != NULL, 0)) {
        profile_begin(c, seg, op, now_ms);
    }
}

SW__HOT void sw__context_ids_make(sw__context_t *c, sw__segment_t *seg)
{
    int64_t began_ms = seg->span_count != 0 ? seg->spans[0].start_ms : 0;
    sw__id_generate(&c->ids, began_ms, seg->segment_id);
    if (seg->trace_id[0] != '\0') {
        return; /* the trace continues an upstream one (sw8, traceparent, sw_continue) */
    }
    sw__id_generate(&c->ids, began_ms, seg->trace_id);
    if (sw__agent.config.propagation != SW_PROPAGATION_SW8) {
        /* W3C in use: the trace id takes the W3C form (32 hex digits, a hash of the unique id)
           so that both formats and both worlds' backends show the same id. */
        char w3c[33];
        sw__w3c_trace_id(seg->trace_id, w3c);
        memcpy(seg->trace_id, w3c, sizeof w3c);
    }
}

int sw__context_add_ref(sw__context_t *c, int type, const char *trace_id,
                        const char *parent_segment_id, int32_t parent_span_id,
                        const char *parent_service, const char *parent_instance,
                        const char *parent_endpoint, const char *address)
{
    sw__segment_t *seg = c->segment;
    if (seg->ref_count >= SW__REFS_MAX) {
        seg->truncations++;
        return SW_ELIMIT;
    }
    sw__ref_t *r = &seg->refs[seg->ref_count++];
    r->type = (uint8_t)type;
    r->span_id = (uint16_t)c->active;
    r->parent_span_id = parent_span_id;
    r->trace_id = sw__segment_strdup(seg, trace_id);
    r->parent_segment_id = sw__segment_strdup(seg, parent_segment_id);
    r->parent_service = sw__segment_strdup(seg, parent_service);
    r->parent_instance = sw__segment_strdup(seg, parent_instance);
    r->parent_endpoint = sw__segment_strdup(seg, parent_endpoint);
    r->address = sw__segment_strdup(seg, address);
    return 0;
}

SW__HOT void sw__context_finish(sw__context_t *c)
{
    sw__segment_t *seg = c->segment;
    c->segment = NULL;
    c->active = -1;
    if (seg->async_open != 0) {
        return; /* parked: the last asynchronous span's end, or the end of its request
                   context, reports it (span_async.c, request.c) */
    }
    sw__context_report(c, seg);
}

SW__HOT void sw__context_report(sw__context_t *c, sw__segment_t *seg)
{
    /* Trace profiling: one relaxed load while no task samples. */
    if (__builtin_expect(atomic_load_explicit(&sw__profile_task_now, memory_order_relaxed) != NULL,
                         0)) {
        sw__profile_end(seg);
    }
    sw__segment_prefetch_used(seg);
    sw__context_ids(c, seg);
    if (seg->truncations != 0) {
        sw__counter_add(&c->counters.arena_truncated, seg->truncations);
    }
    sw__counter_add(&c->counters.finished, 1);
    /* A big segment goes to the consumer as its block (encode/segment_item.h). On success the
       carrier owns it (its publication orders our writes before the consumer's reads); on
       failure we still own it and reuse it. */
    if (seg->span_count > SW__THREAD_ENCODE_MAX_SPANS) {
        if (!dc_produce(sw__agent.carrier, sw__item_of_block(seg))) {
            sw__counter_add(&c->counters.dropped, 1);
            sw__segment_cache_put(&c->cache, &sw__agent.pool, seg);
        }
        return;
    }
    /* Otherwise it is encoded here, while its block is in this core's cache, and the block is
       reused by this thread's next segment; the record goes to the consumer (encode/chunk.h),
       or is taken back when the carrier refuses it. */
    sw__encoded_t *rec = sw__chunk_encode(&sw__agent.chunks, &c->chunk, &sw__agent.encoder, seg);
    if (rec != NULL && !dc_produce(sw__agent.carrier, rec)) {
        sw__chunk_unencode(rec);
        rec = NULL;
    }
    if (rec == NULL) {
        sw__counter_add(&c->counters.dropped, 1);
    }
    sw__chunk_after_hand_off(&sw__agent.chunks, &c->chunk);
    sw__segment_cache_put(&c->cache, &sw__agent.pool, seg);
}

void sw__context_unrecorded_end(sw__context_t *c)
{
    c->unrecorded = false;
    /* relaxed: only compares with the run this thread joined (see context.h). */
    if (c->epoch != atomic_load_explicit(&sw__epoch, memory_order_relaxed)) {
        return; /* that run's counters were folded at its shutdown */
    }
    sw__counter_add(&c->counters.finished, 1);
    sw__counter_add(&c->counters.dropped, 1);
}

sw__span_t *sw__context_active_span(sw__context_t *c, int *rc)
{
    if (c->noop_depth != 0) {
        *rc = c->segment != NULL || c->epoch != 0 ? SW_ENOTRACED : SW_ENOSPAN;
        return NULL;
    }
    if (c->segment == NULL) {
        *rc = SW_ENOSPAN;
        return NULL;
    }
    if (c->epoch != atomic_load_explicit(&sw__epoch, memory_order_relaxed)) {
        sw__context_drop_stale(c);
        *rc = SW_ENOSPAN;
        return NULL;
    }
    *rc = 0;
    return &c->segment->spans[c->active];
}

void sw__registry_sum(sw_stats_t *out)
{
    pthread_mutex_lock(&sw__agent.registry_lock);
    *out = sw__agent.retired;
    for (sw__context_t *c = sw__agent.registry_head; c != NULL; c = c->reg_next) {
        counters_fold(&c->counters, out);
    }
    pthread_mutex_unlock(&sw__agent.registry_lock);
}

void sw__registry_close(sw_stats_t *out, bool release_idle)
{
    pthread_mutex_lock(&sw__agent.registry_lock);
    *out = sw__agent.retired;
    while (sw__agent.registry_head != NULL) {
        sw__context_t *c = sw__agent.registry_head;
        counters_fold(&c->counters, out);
        if (release_idle && c != &sw__tls_context) {
            /* What another thread keeps for its next segments goes back to the run's pools
               (freed with them next): that thread may outlive the library (dlclose), and then
               nothing of the library runs at its exit. No span call races sw_shutdown
               (skywalking.h), so the thread is not using them; its open segment, if any, is
               still its own and is discarded by its next span call. */
            sw__segment_cache_flush(&c->cache, &sw__agent.pool);
            if (c->chunk != NULL) {
                sw__chunk_seal(&sw__agent.chunks, c->chunk);
                c->chunk = NULL;
            }
        }
        registry_unlink(c);
    }
    sw__agent.run_epoch = 0;
    pthread_mutex_unlock(&sw__agent.registry_lock);
}
