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
#include "../propagation/tracestate.h"
#include "../segment/clock.h"
#include "context.h"
#include "agent_state.h"
#include "../util/locality.h"
#include "../util/utf8.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Start of a trace, or a begin after the agent changed state. */
SW__HOT static __attribute__((noinline)) void begin_slow(sw__context_t *c, sw_span_type_t type,
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

SW__HOT void sw_exit_span_begin(const char *operation, const char *peer)
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

/* Opens the entry span continuing `up` (NULL: none): a new segment, or a push into the open
   one. Returns whether the span is recorded. */
static bool entry_open(sw__context_t *c, const char *operation, const sw__sw8_t *up, int64_t now)
{
    if (c->segment == NULL) {
        sw__context_start(c, SW_SPAN_ENTRY, operation, NULL, up, now);
    } else {
        sw__context_push(c, SW_SPAN_ENTRY, operation, NULL, now);
    }
    if (c->segment == NULL || c->noop_depth != 0) {
        return false;
    }
    if (up != NULL) {
        /* Like SkyWalking's extract(): the segment joins the upstream trace. */
        memcpy(c->segment->trace_id, up->trace_id, strlen(up->trace_id) + 1);
    }
    return true;
}

/* The entry span records where a valid sw8 came from. */
static void entry_ref_sw8(sw__context_t *c, const sw__sw8_t *up)
{
    sw__context_add_ref(c, 0, up->trace_id, up->parent_segment_id, up->parent_span_id,
                        up->parent_service, up->parent_instance, up->parent_endpoint, up->address);
}

/* The entry when SW_AGENT_PROPAGATION names tracecontext: traceparent against the valid sw8
   (NULL: none). Out of line: its buffers are on the stack only while it runs. Returns whether
   the span is recorded. */
static __attribute__((noinline)) bool entry_w3c(sw__context_t *c, const char *operation,
                                                const sw__sw8_t *sw8_up, bool sw8_first,
                                                const char *traceparent, const char *tracestate,
                                                int64_t now)
{
    sw__w3c_in_t in;
    bool valid = sw__w3c_extract(traceparent, tracestate, &in, NULL) == 0;
    bool use = valid && (sw8_up == NULL || !sw8_first);
    sw__sw8_t up = {0};
    if (use) {
        up.sample = in.tp.flags & 1;
        up.trace_id = in.trace_id;
    }
    bool starts = c->segment == NULL;
    if (!entry_open(c, operation, use ? &up : sw8_up, now)) {
        if (use && starts && c->segment == NULL && up.sample == 0) {
            /* Not sampled upstream: remembered to be passed on (sw_inject_w3c). */
            c->w3c_unsampled = true;
            memcpy(c->w3c_trace_id, in.tp.trace_id, sizeof c->w3c_trace_id);
            memcpy(c->w3c_parent_id, in.tp.parent_id, sizeof c->w3c_parent_id);
        }
        return false;
    }
    if (use) {
        if (in.has_ref) {
            sw__context_add_ref(c, 0, in.trace_id, in.st.segment_id, in.st.span_id, in.st.service,
                                in.st.instance, in.st.endpoint, in.st.peer);
        }
        sw_span_tag("w3c.parent_id", in.tp.parent_id);
    } else if (sw8_up != NULL) {
        entry_ref_sw8(c, sw8_up);
    }
    /* The other vendors' members travel on with this trace: kept when traceparent belongs to
       the trace the segment continues, and only by the span that began the segment (a span
       removed again by span_mark.h must not leave a pointer into the arena behind). */
    if (!valid || !starts || in.others[0] == '\0') {
        return true;
    }
    sw__segment_t *seg = c->segment;
    sw__context_ids(c, seg);
    char mapped[33];
    sw__w3c_trace_id(seg->trace_id, mapped);
    if (memcmp(mapped, in.tp.trace_id, 33) == 0) {
        size_t n = sw__tracestate_trim(in.others, SW__TRACESTATE_MEMBERS_MAX - 1,
                                       SW_TRACESTATE_MAX - 2 - SW__TRACESTATE_ENTRY_MAX);
        if (n > 0) {
            const char *kept = sw__segment_strndup(seg, in.others, n);
            seg->tracestate = strlen(kept) == n ? kept : NULL; /* cut by a full arena: drop */
        }
    }
    return true;
}

void sw_entry_span_begin_w3c(const char *operation, const char *sw8, const char *sw8_correlation,
                             const char *sw8_x, const char *traceparent, const char *tracestate)
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
    uint32_t mode = sw__agent.config.propagation;
    if (mode == SW_PROPAGATION_TRACECONTEXT) {
        sw8 = sw8_correlation = sw8_x = NULL; /* SkyWalking's headers are not read */
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
    bool recorded;
    if (mode != SW_PROPAGATION_SW8 && traceparent != NULL) {
        recorded = entry_w3c(c, operation, valid ? &up : NULL,
                             mode == SW_PROPAGATION_SW8_TRACECONTEXT, traceparent, tracestate, now);
    } else {
        recorded = entry_open(c, operation, valid ? &up : NULL, now);
        if (recorded && valid) {
            entry_ref_sw8(c, &up);
        }
    }
    if (!recorded) {
        return;
    }
    if (sw8_correlation != NULL) {
        sw__correlation_decode(sw8_correlation, strnlen(sw8_correlation, 8192),
                               &c->segment->correlation);
    }
    if (sw8_x != NULL) {
        entry_apply_sw8x(c, sw8_x, now);
    }
}

void sw_entry_span_begin_headers(const char *operation, const char *sw8,
                                 const char *sw8_correlation, const char *sw8_x)
{
    sw_entry_span_begin_w3c(operation, sw8, sw8_correlation, sw8_x, NULL, NULL);
}

void sw_entry_span_begin(const char *operation, const char *sw8)
{
    if (sw8 == NULL) {
        span_begin(SW_SPAN_ENTRY, operation, NULL);
    } else {
        sw_entry_span_begin_headers(operation, sw8, NULL, NULL);
    }
}

SW__HOT void sw_span_end(void)
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

SW__HOT int sw_span_set_component(int32_t component_id)
{
    int rc;
    sw__context_t *c = sw__context_recording(&rc);
    if (c == NULL) {
        return rc;
    }
    sw__span_t *sp = &c->segment->spans[c->active];
    sp->component_id = component_id;
    return 0;
}

SW__HOT int sw_span_set_layer(sw_layer_t layer)
{
    if ((int)layer < SW_LAYER_UNKNOWN || (int)layer > SW_LAYER_FAAS) {
        return SW_EINVAL;
    }
    int rc;
    sw__context_t *c = sw__context_recording(&rc);
    if (c == NULL) {
        return rc;
    }
    sw__span_t *sp = &c->segment->spans[c->active];
    sp->layer = (uint8_t)layer;
    return 0;
}

SW__HOT void sw__span_set_layer_component(sw_layer_t layer, int32_t component_id)
{
    int rc;
    sw__context_t *c = sw__context_recording(&rc);
    if (c != NULL) {
        sw__span_t *sp = &c->segment->spans[c->active];
        sp->layer = (uint8_t)layer;
        sp->component_id = component_id;
    }
}

int sw_span_set_peer(const char *peer)
{
    int rc;
    sw__context_t *c = sw__context_recording(&rc);
    if (c == NULL) {
        return rc;
    }
    sw__span_t *sp = &c->segment->spans[c->active];
    sp->peer = sw__segment_strdup_len(c->segment, peer, &sp->peer_len);
    return 0;
}

int sw_span_set_error(bool is_error)
{
    int rc;
    sw__context_t *c = sw__context_recording(&rc);
    if (c == NULL) {
        return rc;
    }
    sw__span_t *sp = &c->segment->spans[c->active];
    sp->is_error = is_error ? 1 : 0;
    return 0;
}

/* Appends an attribute record of span `span` of `seg`; NULL when the arena is full (dropped
   and counted). */
SW__HOT static sw__attr_t *attr_add_at(sw__segment_t *seg, int32_t span, enum sw__attr_kind kind,
                                       int64_t time_ms)
{
    sw__attr_t *a = sw__segment_attr_add(seg);
    if (a != NULL) {
        *a = (sw__attr_t){.kind = (uint8_t)kind, .span_id = (uint16_t)span, .time_ms = time_ms};
    }
    return a;
}

/* attr_add_at for the active span (segment c->segment, span c->active). */
SW__HOT static sw__attr_t *attr_add(sw__context_t *c, enum sw__attr_kind kind, int64_t time_ms)
{
    return attr_add_at(c->segment, c->active, kind, time_ms);
}

/* A field of the log before it, with copies of key and value in the arena (NULL counts as
   ""), each cut to SW_LOG_TAG_MAX bytes; NULL when the arena is full. */
static sw__attr_t *attr_add_log_field(sw__context_t *c, const char *key, const char *value)
{
    sw__attr_t *a = attr_add(c, SW__ATTR_LOG_KV, 0);
    if (a != NULL) {
        a->key = sw__segment_strndup_len(c->segment, key, sw__utf8_len_capped(key, SW_LOG_TAG_MAX),
                                         &a->key_len);
        a->value = sw__segment_strndup_len(
            c->segment, value, sw__utf8_len_capped(value, SW_LOG_TAG_MAX), &a->value_len);
    }
    return a;
}

/* Adds a tag to the active span; copy_key / copy_value: the string goes into the arena, else
   it is kept as given (context.h). key_len: the length of a kept key, 0 when not known;
   value_len: the bytes of value to copy (or a kept value's length), SIZE_MAX for all. */
SW__HOT static void tag_write(sw__segment_t *seg, int32_t span, const char *key, uint32_t key_len,
                              const char *value, size_t value_len, bool copy_key, bool copy_value)
{
    sw__attr_t *a = attr_add_at(seg, span, SW__ATTR_TAG, 0);
    if (a == NULL) {
        return; /* arena full: dropped and counted */
    }
    if (copy_key) {
        a->key = sw__segment_strdup_len(seg, key, &a->key_len);
    } else {
        a->key = key;
        a->key_len = key_len;
    }
    if (!copy_value && value != NULL) {
        a->value = value;
        a->value_len = value_len == SIZE_MAX ? 0 : (uint32_t)value_len;
    } else if (value_len != SIZE_MAX && value != NULL) {
        a->value = sw__segment_strndup_len(seg, value, value_len, &a->value_len);
    } else {
        a->value = sw__segment_strdup_len(seg, value, &a->value_len);
    }
}

/* tag_write on the active span. */
SW__HOT static int tag_put(const char *key, uint32_t key_len, const char *value, size_t value_len,
                           bool copy_key, bool copy_value)
{
    if (key == NULL) {
        return SW_EINVAL;
    }
    int rc;
    sw__context_t *c = sw__context_recording(&rc);
    if (c == NULL) {
        return rc;
    }
    tag_write(c->segment, c->active, key, key_len, value, value_len, copy_key, copy_value);
    return 0;
}

SW__HOT int sw__span_tag_at(sw__segment_t *seg, int32_t span, const char *key, const char *value)
{
    if (key == NULL) {
        return SW_EINVAL;
    }
    tag_write(seg, span, key, 0, value, SIZE_MAX, true, true);
    return 0;
}

SW__HOT int sw_span_tag(const char *key, const char *value)
{
    return tag_put(key, 0, value, SIZE_MAX, true, true);
}

SW__HOT int sw__span_tag_static_(const char *key, size_t key_len, const char *value,
                                 size_t value_len)
{
    return tag_put(key, (uint32_t)key_len, value, value_len, false, true);
}

int sw__span_tag_kept_(const char *key, size_t key_len, const char *value, size_t value_len)
{
    return tag_put(key, (uint32_t)key_len, value, value_len, false, false);
}

const char *sw__span_operation(uint32_t *len)
{
    int rc;
    sw__context_t *c = sw__context_recording(&rc);
    if (c == NULL) {
        *len = 0;
        return NULL;
    }
    const sw__span_t *sp = &c->segment->spans[c->active];
    *len = sp->operation_len;
    return sp->operation;
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
        if (attr_add_log_field(c, kvs[i].key, kvs[i].value) == NULL) {
            break;
        }
        log->kv_count++;
    }
    if (log->kv_count == 0) {
        c->segment->attr_count = mark_attrs; /* a log without fields is not worth keeping */
    }
    return 0;
}
