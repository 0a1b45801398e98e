/*
 * span.c - the span API: begin/end and the setters on the active span.
 *
 * The hot path is kept short: an unsampled begin or end touches only the thread's noop_depth;
 * a recorded begin reads the clock, copies the operation name into the segment's arena and links
 * the span to its parent; a recorded end reads the clock and pops. Everything else (joining a
 * run, starting a trace, sampling, parsing headers) is out of line.
 */
#include <string.h>

#include "../propagation/correlation.h"
#include "../propagation/sw8.h"
#include "clock.h"
#include "context.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Start of a trace, or a begin after the agent changed state. */
static __attribute__((noinline)) void begin_slow(sw__context_t *c, sw_span_type_t type,
                                                 const char *op, const char *peer)
{
    if (c->segment != NULL || c->noop_depth != 0) {
        sw__context_drop_stale(c); /* held from a finished run */
    }
    if (!sw__context_join(c)) {
        return;
    }
    sw__context_start(c, type, op, peer, NULL, sw__now_ms());
}

static inline void span_begin(sw_span_type_t type, const char *op, const char *peer)
{
    sw__context_t *c = &sw__tls_context;
    if (c->segment == NULL) {
        if (likely(c->noop_depth != 0)) {
            c->noop_depth++; /* inside an unsampled trace: count depth only */
            return;
        }
        begin_slow(c, type, op, peer);
        return;
    }
    /* relaxed: only compares with the run this thread already joined (see context.h). */
    if (unlikely(c->epoch != atomic_load_explicit(&sw__epoch, memory_order_relaxed))) {
        begin_slow(c, type, op, peer);
        return;
    }
    sw__context_push(c, type, op, peer, sw__now_ms());
}

void sw_local_span_begin(const char *operation)
{
    span_begin(SW_SPAN_LOCAL, operation, NULL);
}

void sw_exit_span_begin(const char *operation, const char *peer)
{
    span_begin(SW_SPAN_EXIT, operation, peer);
}

/* Applies a valid sw8-x to the new entry span (SkyWalking's ExtensionContext.handle). */
static void entry_apply_sw8x(sw__context_t *c, const char *sw8_x, int64_t now_ms)
{
    sw__sw8x_t x;
    if (sw__sw8x_decode(sw8_x, strlen(sw8_x), &x, NULL) != 0) {
        return;
    }
    sw__span_t *sp = &c->segment->spans[c->active];
    sp->reserved = x.skip_analysis ? 1 : 0; /* reserved carries skipAnalysis */
    if (x.has_timestamp) {
        char digits[24];
        int64_t latency = now_ms - x.send_ms;
        if (latency < 0) {
            latency = 0;
        }
        sw__u64_to_dec((uint64_t)latency, digits);
        sw_span_tag("transmission.latency", digits);
    }
}

void sw_entry_span_begin_headers(const char *operation, const char *sw8,
                                 const char *sw8_correlation, const char *sw8_x)
{
    sw__context_t *c = &sw__tls_context;
    if (c->segment == NULL && c->noop_depth != 0) {
        c->noop_depth++; /* inside an unsampled trace */
        return;
    }
    if (c->segment != NULL && c->epoch != atomic_load_explicit(&sw__epoch, memory_order_relaxed)) {
        sw__context_drop_stale(c);
    }
    if (c->segment == NULL && !sw__context_join(c)) {
        return; /* agent off */
    }
    int64_t now = sw__now_ms();
    if (c->segment != NULL && c->noop_depth != 0) {
        sw__context_push(c, SW_SPAN_ENTRY, operation, NULL, now); /* over the limit: no-op */
        return;
    }
    /* Parse on the stack: the header length bounds the scratch it needs. */
    char scratch[SW__SW8_HEADER_MAX + 16];
    sw__sw8_t up;
    bool valid = false;
    if (sw8 != NULL) {
        valid = sw__sw8_decode(sw8, strnlen(sw8, SW__SW8_HEADER_MAX + 1), &up, scratch,
                               sizeof scratch, NULL) == 0;
        if (!valid) {
            sw__counter_add(&c->counters.sw8_invalid, 1);
        }
    }
    if (c->segment == NULL) {
        sw__context_start(c, SW_SPAN_ENTRY, operation, NULL, valid ? &up : NULL, now);
    } else {
        sw__context_push(c, SW_SPAN_ENTRY, operation, NULL, now);
    }
    if (c->segment == NULL || c->noop_depth != 0) {
        return; /* not recorded */
    }
    if (valid) {
        /* Like SkyWalking's extract(): the segment joins the upstream trace, the entry span
           records where it came from. */
        memcpy(c->segment->trace_id, up.trace_id, strlen(up.trace_id) + 1);
        sw__context_add_ref(c, 0, up.trace_id, up.parent_segment_id, up.parent_span_id,
                            up.parent_service, up.parent_instance, up.parent_endpoint, up.address);
    }
    if (sw8_correlation != NULL) {
        sw__correlation_decode(sw8_correlation, strnlen(sw8_correlation, 8192),
                               &c->segment->correlation);
    }
    if (sw8_x != NULL) {
        entry_apply_sw8x(c, sw8_x, now);
    }
}

void sw_entry_span_begin(const char *operation, const char *sw8)
{
    if (sw8 == NULL) {
        span_begin(SW_SPAN_ENTRY, operation, NULL);
    } else {
        sw_entry_span_begin_headers(operation, sw8, NULL, NULL);
    }
}

void sw_span_end(void)
{
    sw__context_t *c = &sw__tls_context;
    if (likely(c->noop_depth != 0)) {
        if (--c->noop_depth == 0 && unlikely(c->unrecorded)) {
            sw__context_unrecorded_end(c); /* a sampled trace that got no block ended */
        }
        return;
    }
    sw__segment_t *seg = c->segment;
    if (seg == NULL) {
        return; /* unbalanced, or begun while the agent was off */
    }
    if (unlikely(c->epoch != atomic_load_explicit(&sw__epoch, memory_order_relaxed))) {
        sw__context_drop_stale(c);
        return;
    }
    sw__span_t *sp = &seg->spans[c->active];
    sp->end_ms = sw__now_ms();
    c->active = sp->parent_id;
    if (c->active < 0) {
        sw__context_finish(c);
    }
}

int sw_span_set_component(int32_t component_id)
{
    int rc;
    sw__span_t *sp = sw__context_active_span(&sw__tls_context, &rc);
    if (sp != NULL) {
        sp->component_id = component_id;
    }
    return rc;
}

int sw_span_set_layer(sw_layer_t layer)
{
    if ((int)layer < SW_LAYER_UNKNOWN || (int)layer > SW_LAYER_FAAS) {
        return SW_EINVAL;
    }
    int rc;
    sw__span_t *sp = sw__context_active_span(&sw__tls_context, &rc);
    if (sp != NULL) {
        sp->layer = (uint8_t)layer;
    }
    return rc;
}

int sw_span_set_peer(const char *peer)
{
    int rc;
    sw__span_t *sp = sw__context_active_span(&sw__tls_context, &rc);
    if (sp != NULL) {
        sp->peer = sw__segment_strdup(sw__tls_context.segment, peer);
    }
    return rc;
}

int sw_span_set_error(bool is_error)
{
    int rc;
    sw__span_t *sp = sw__context_active_span(&sw__tls_context, &rc);
    if (sp != NULL) {
        sp->is_error = is_error ? 1 : 0;
    }
    return rc;
}

/* Appends an attribute record of the active span (segment c->segment, span c->active);
   NULL when the arena is full (dropped and counted). */
static sw__attr_t *attr_add(sw__context_t *c, enum sw__attr_kind kind, int64_t time_ms)
{
    sw__attr_t *a = sw__segment_attr_add(c->segment);
    if (a != NULL) {
        *a =
            (sw__attr_t){.kind = (uint8_t)kind, .span_id = (uint16_t)c->active, .time_ms = time_ms};
    }
    return a;
}

/* A key/value record (a tag, or a field of the log before it) with copies of key and value
   in the arena (NULL counts as ""); NULL when the arena is full. */
static sw__attr_t *attr_add_pair(sw__context_t *c, enum sw__attr_kind kind, const char *key,
                                 const char *value)
{
    sw__attr_t *a = attr_add(c, kind, 0);
    if (a != NULL) {
        a->key = sw__segment_strdup(c->segment, key);
        a->value = sw__segment_strdup(c->segment, value);
    }
    return a;
}

int sw_span_tag(const char *key, const char *value)
{
    if (key == NULL) {
        return SW_EINVAL;
    }
    int rc;
    sw__context_t *c = sw__context_recording(&rc);
    if (c != NULL) {
        (void)attr_add_pair(c, SW__ATTR_TAG, key, value); /* arena full: dropped and counted */
    }
    return rc;
}

int sw_span_log(const sw_kv_t *kvs, size_t n)
{
    if (kvs == NULL || n == 0 || n > UINT16_MAX) {
        return SW_EINVAL;
    }
    int rc;
    sw__context_t *c = sw__context_recording(&rc);
    if (c == NULL) {
        return rc;
    }
    uint32_t mark_attrs = c->segment->attr_count;
    sw__attr_t *log = attr_add(c, SW__ATTR_LOG, sw__now_ms());
    if (log == NULL) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (attr_add_pair(c, SW__ATTR_LOG_KV, kvs[i].key, kvs[i].value) == NULL) {
            break;
        }
        log->kv_count++;
    }
    if (log->kv_count == 0) {
        c->segment->attr_count = mark_attrs; /* a log without fields is not worth keeping */
    }
    return 0;
}
