/*
 * propagate.c - the trace crossing process and thread boundaries: sw_inject on exit spans,
 * correlation data, and sw_capture / sw_continue (CrossThread references).
 */
#include <string.h>

#include "propagate.h"

#include "../propagation/correlation.h"
#include "../propagation/sw8.h"
#include "../propagation/tracestate.h"
#include "../segment/clock.h"
#include "context.h"
#include "agent_state.h"
#include "../util/utf8.h"

static const char *nonempty(const char *s)
{
    return s != NULL && s[0] != '\0' ? s : "unknown";
}

static void clear(char *buf, size_t len)
{
    if (buf != NULL && len > 0) {
        buf[0] = '\0';
    }
}

bool sw__propagation_sw8(void)
{
    return sw__agent.config.propagation != SW_PROPAGATION_TRACECONTEXT;
}

bool sw__propagation_w3c(void)
{
    return sw__agent.config.propagation != SW_PROPAGATION_SW8;
}

/* The thread's active span when it is a recorded exit span, else NULL with *rc saying why. */
static sw__span_t *exit_span(sw__context_t *c, int *rc)
{
    sw__span_t *sp = sw__context_active_span(c, rc);
    if (sp != NULL && sp->type != SW_SPAN_EXIT) {
        *rc = SW_ENOTEXIT;
        return NULL;
    }
    return sp;
}

int sw_inject(char *sw8, size_t sw8_len, char *correlation, size_t correlation_len, char *sw8_x,
              size_t sw8_x_len)
{
    clear(sw8, sw8_len);
    clear(correlation, correlation_len);
    clear(sw8_x, sw8_x_len);
    int rc;
    sw__context_t *c = &sw__tls_context;
    sw__span_t *sp = exit_span(c, &rc);
    if (sp == NULL) {
        return rc;
    }
    sw__context_ids(c, c->segment);
    const sw__segment_t *seg = c->segment;
    sw__sw8_t out = {
        .sample = 1,
        .parent_span_id = c->active,
        .trace_id = seg->trace_id,
        .parent_segment_id = seg->segment_id,
        .parent_service = sw__agent.config.service_name,
        .parent_instance = sw__agent.config.instance_name,
        .parent_endpoint = nonempty(seg->spans[0].operation),
        .address = nonempty(sp->peer),
    };
    rc = 0;
    if (sw8 != NULL && sw__sw8_encode(&out, sw8, sw8_len) < 0) {
        rc = SW_ENOSPACE;
    }
    if (correlation != NULL &&
        sw__correlation_encode(&seg->correlation, correlation, correlation_len) < 0) {
        rc = SW_ENOSPACE;
    }
    if (sw8_x != NULL && sw__sw8x_encode(sw__now_ms(), sw8_x, sw8_x_len) < 0) {
        rc = SW_ENOSPACE;
    }
    if (rc != 0) {
        clear(sw8, sw8_len);
        clear(correlation, correlation_len);
        clear(sw8_x, sw8_x_len);
    }
    return rc;
}

int sw_inject_w3c(char *traceparent, size_t traceparent_len, char *tracestate,
                  size_t tracestate_len)
{
    clear(traceparent, traceparent_len);
    clear(tracestate, tracestate_len);
    int rc;
    sw__context_t *c = &sw__tls_context;
    sw__span_t *sp = exit_span(c, &rc);
    if (sp == NULL && rc == SW_ENOTRACED && c->segment == NULL && c->w3c_unsampled) {
        /* A W3C upstream decided against sampling: its context goes on unchanged (we have no
           span of our own to name), flags 00, without tracestate (not kept for no-op traces). */
        if (traceparent != NULL && sw__traceparent_encode(c->w3c_trace_id, c->w3c_parent_id, false,
                                                          traceparent, traceparent_len) < 0) {
            return SW_ENOSPACE;
        }
        return 0;
    }
    if (sp == NULL) {
        return rc;
    }
    sw__context_ids(c, c->segment);
    const sw__segment_t *seg = c->segment;
    char trace_id[33], span_id[17];
    sw__w3c_trace_id(seg->trace_id, trace_id);
    sw__w3c_span_id(seg->segment_id, c->active, span_id);
    if (traceparent != NULL &&
        sw__traceparent_encode(trace_id, span_id, true, traceparent, traceparent_len) < 0) {
        rc = SW_ENOSPACE;
    }
    if (tracestate != NULL) {
        /* The trace id travels in our member only when traceparent cannot carry it. */
        sw__swstate_t st = {
            .trace_id = strcmp(trace_id, seg->trace_id) == 0 ? "" : seg->trace_id,
            .segment_id = seg->segment_id,
            .span_id = c->active,
            .service = sw__agent.config.service_name,
            .instance = sw__agent.config.instance_name,
            .endpoint = nonempty(seg->spans[0].operation),
            .peer = nonempty(sp->peer),
        };
        char ours[SW__TRACESTATE_ENTRY_MAX];
        if (sw__swstate_encode(&st, ours, sizeof ours) < 0) {
            ours[0] = '\0'; /* the fields do not fit: forward the others only */
        }
        if (sw__tracestate_build(ours, seg->tracestate, tracestate, tracestate_len) < 0) {
            rc = SW_ENOSPACE;
        }
    }
    if (rc != 0) {
        clear(traceparent, traceparent_len);
        clear(tracestate, tracestate_len);
    }
    return rc;
}

int sw_correlation_set(const char *key, const char *value)
{
    int rc;
    sw__context_t *c = sw__context_recording(&rc);
    if (c == NULL) {
        return rc;
    }
    return sw__correlation_put(&c->segment->correlation, key, value);
}

int sw_correlation_get(const char *key, char *buf, size_t len)
{
    if (key == NULL) {
        return SW_EINVAL;
    }
    int rc;
    sw__context_t *c = sw__context_recording(&rc);
    if (c == NULL) {
        return rc;
    }
    const sw_correlation_t *corr = &c->segment->correlation;
    int at = sw__correlation_find(corr, key);
    if (at < 0) {
        return SW_ENOTFOUND;
    }
    size_t n = strlen(corr->items[at].value);
    if (buf == NULL || len < n + 1) {
        return SW_ENOSPACE;
    }
    memcpy(buf, corr->items[at].value, n + 1);
    return (int)n;
}

/* Copies s into dst[cap] NUL-terminated, cutting on a UTF-8 boundary. */
static void copy_bounded(char *dst, size_t cap, const char *s)
{
    size_t n = strnlen(s, cap);
    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xC0u) == 0x80u) {
            n--;
        }
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
}

int sw_capture(sw_snapshot_t *snap)
{
    if (snap == NULL) {
        return SW_EINVAL;
    }
    snap->span_id = -1;
    snap->trace_id[0] = snap->segment_id[0] = snap->endpoint[0] = '\0';
    snap->correlation.count = 0;
    int rc;
    sw__context_t *c = sw__context_recording(&rc);
    if (c == NULL) {
        return rc;
    }
    sw__context_ids(c, c->segment);
    const sw__segment_t *seg = c->segment;
    copy_bounded(snap->trace_id, sizeof snap->trace_id, seg->trace_id);
    copy_bounded(snap->segment_id, sizeof snap->segment_id, seg->segment_id);
    copy_bounded(snap->endpoint, sizeof snap->endpoint, seg->spans[0].operation);
    snap->correlation = seg->correlation;
    snap->span_id = c->active;
    return 0;
}

static bool snapshot_valid(const sw_snapshot_t *snap)
{
    return snap != NULL && snap->span_id >= 0 && snap->trace_id[0] != '\0' &&
           snap->segment_id[0] != '\0' &&
           memchr(snap->trace_id, '\0', sizeof snap->trace_id) != NULL &&
           memchr(snap->segment_id, '\0', sizeof snap->segment_id) != NULL &&
           memchr(snap->endpoint, '\0', sizeof snap->endpoint) != NULL &&
           snap->correlation.count <= SW_CORRELATION_MAX_ELEMENTS;
}

int sw_continue(const sw_snapshot_t *snap)
{
    if (!snapshot_valid(snap)) {
        return SW_EINVAL;
    }
    int rc;
    sw__context_t *c = sw__context_recording(&rc);
    if (c == NULL) {
        return rc;
    }
    sw__segment_t *seg = c->segment;
    rc = sw__context_add_ref(c, 1, snap->trace_id, snap->segment_id, snap->span_id,
                             sw__agent.config.service_name, sw__agent.config.instance_name,
                             snap->endpoint, "");
    if (rc != 0) {
        return rc;
    }
    size_t trace_len = strlen(snap->trace_id);
    memcpy(seg->trace_id, snap->trace_id, trace_len + 1);
    sw__utf8_fix(seg->trace_id, trace_len); /* caller memory: cleaned like the arena's strings */
    for (uint32_t i = 0; i < snap->correlation.count; i++) {
        /* Bounded copies: a snapshot is caller memory. */
        char key[SW_CORRELATION_VALUE_MAX + 1], value[SW_CORRELATION_VALUE_MAX + 1];
        copy_bounded(key, sizeof key, snap->correlation.items[i].key);
        copy_bounded(value, sizeof value, snap->correlation.items[i].value);
        (void)sw__correlation_put(&seg->correlation, key, value);
    }
    return 0;
}
