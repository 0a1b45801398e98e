/*
 * app_log.c - sw_log and sw_log_kv: the program's log lines as SkyWalking LogData, encoded on
 * the calling thread and queued for the log sender (applog/log_report.h). Not the agent's own
 * diagnostics (log/log.h).
 *
 * LogData (logging/Logging.proto) is written with the reverse writer (encode/pb_reverse.h),
 * fields in descending order: tags (7), traceContext (6), body (5) {text (2) {text (1)}},
 * endpoint (4), serviceInstance (3), service (2), timestamp (1). layer (8) stays empty: the OAP
 * then files the service under GENERAL.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../encode/pb_reverse.h"
#include "../applog/log_report.h"
#include "../segment/clock.h"
#include "context.h"
#include "../util/utf8.h"

/* LogData and nested field numbers. */
enum {
    LD_TIMESTAMP = 1,
    LD_SERVICE = 2,
    LD_INSTANCE = 3,
    LD_ENDPOINT = 4,
    LD_BODY = 5,
    LD_TRACE_CONTEXT = 6,
    LD_TAGS = 7,
    BODY_TEXT = 2,
    TEXT_TEXT = 1,
    TC_TRACE_ID = 1,
    TC_SEGMENT_ID = 2,
    TC_SPAN_ID = 3,
    TAGS_DATA = 1,
    KV_KEY = 1,
    KV_VALUE = 2,
};

/* Bytes a formatted message is first tried in, on the stack; longer ones are formatted again
   into a heap buffer of the allowed size. */
#define FORMAT_STACK 1024

static const char *const severity_names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

const char *sw_log_severity_name(sw_log_severity_t severity)
{
    return (unsigned)severity < sizeof severity_names / sizeof severity_names[0]
               ? severity_names[severity]
               : "UNKNOWN";
}

/* A string field of `len` bytes (may be 0: not written), made valid UTF-8 where it is
   written (util/utf8.h). */
static void pbr_text(sw__pbr_t *w, unsigned field, const char *s, size_t len)
{
    if (len == 0 || !sw__pbr_room(w, len)) {
        return;
    }
    w->p -= len;
    memcpy(w->p, s, len);
    sw__utf8_fix((char *)w->p, len);
    sw__pbr_varint(w, len);
    sw__pbr_key(w, field, SW__PB_LEN);
}

/* A tag; key and value (from the program) are cut to SW_LOG_TAG_MAX bytes and cleaned. */
static void pbr_tag(sw__pbr_t *w, const char *key, const char *value)
{
    uint8_t *kv = sw__pbr_mark(w);
    pbr_text(w, KV_VALUE, value, sw__utf8_len_capped(value, SW_LOG_TAG_MAX));
    pbr_text(w, KV_KEY, key, sw__utf8_len_capped(key, SW_LOG_TAG_MAX));
    sw__pbr_close(w, TAGS_DATA, kv);
}

/* What one call hands to line_build. */
typedef struct line {
    sw_log_severity_t severity;
    const char *logger;
    const sw_kv_t *tags;
    size_t n_tags;
    /* The message: literal text, or a format and its arguments. */
    const char *text;
    size_t text_len;
    const char *fmt;
    va_list *ap;
} line_t;

static size_t tags_size(const line_t *l)
{
    size_t n = 64 + sw__utf8_len_capped(l->logger, SW_LOG_TAG_MAX);
    for (size_t i = 0; i < l->n_tags; i++) {
        n += 16 + sw__utf8_len_capped(l->tags[i].key, SW_LOG_TAG_MAX) +
             sw__utf8_len_capped(l->tags[i].value, SW_LOG_TAG_MAX);
    }
    return n;
}

/* Formats l->fmt into a buffer of at most max + 1 bytes: the stack one when it fits, else a
   heap one (*heap, to free). Returns the untruncated length, or -1. */
static int message_format(const line_t *l, size_t max, char *stack, char **heap, char **out)
{
    va_list ap;
    va_copy(ap, *l->ap);
    int n = vsnprintf(stack, FORMAT_STACK, l->fmt, ap);
    va_end(ap);
    *out = stack;
    if (n < FORMAT_STACK || max < FORMAT_STACK) {
        return n;
    }
    size_t want = (size_t)n < max ? (size_t)n : max;
    *heap = malloc(want + 4); /* + the bytes sw__utf8_clean looks at past the cut, + NUL */
    if (*heap == NULL) {
        return n; /* keep the first FORMAT_STACK - 1 bytes */
    }
    va_copy(ap, *l->ap);
    (void)vsnprintf(*heap, want + 4, l->fmt, ap);
    va_end(ap);
    *out = *heap;
    return n;
}

static sw__log_item_t *line_build(const sw__log_settings_t *s, void *arg, bool *truncated)
{
    const line_t *l = arg;
    char stack[FORMAT_STACK];
    char *heap = NULL;
    const char *msg;
    size_t full, avail; /* the message's whole length; the bytes of it at msg */
    if (l->fmt != NULL) {
        char *out;
        int n = message_format(l, s->max_message_size, stack, &heap, &out);
        full = n > 0 ? (size_t)n : 0;
        size_t cap = out == stack ? FORMAT_STACK - 1
                                  : (full < s->max_message_size ? full : s->max_message_size) + 3;
        avail = full < cap ? full : cap;
        msg = out;
    } else {
        msg = l->text;
        full = avail = l->text_len;
    }
    /* At most max + 1 bytes are copied: the one past the cut tells sw__utf8_clean whether the cut
       splits a UTF-8 sequence. */
    size_t copy = avail < (size_t)s->max_message_size + 1 ? avail : (size_t)s->max_message_size + 1;

    int rc;
    sw__context_t *c = &sw__tls_context;
    const sw__segment_t *seg = NULL;
    if (sw__context_active_span(c, &rc) != NULL) {
        sw__context_ids(c, c->segment);
        seg = c->segment;
    }
    size_t bound = 128 + copy + tags_size(l) + strlen(s->service) + strlen(s->instance) +
                   (seg != NULL ? strlen(seg->trace_id) + strlen(seg->segment_id) +
                                      strlen(seg->spans[0].operation)
                                : 0);
    sw__log_item_t *it = malloc(sizeof *it + bound + copy);
    if (it == NULL) {
        free(heap);
        return NULL;
    }
    /* The message is cleaned in the item's scratch tail, after the writer's area. */
    char *scratch = (char *)(it + 1) + bound;
    memcpy(scratch, msg, copy);
    free(heap);
    bool cut = false;
    size_t text_len = sw__utf8_clean(scratch, copy, s->max_message_size, &cut);
    *truncated = cut || full > copy;

    uint8_t *buf = (uint8_t *)(it + 1);
    sw__pbr_t w = {.start = buf, .p = buf + bound, .overflow = false};
    uint8_t *tags = sw__pbr_mark(&w);
    for (size_t i = l->n_tags; i-- > 0;) {
        if (l->tags[i].key != NULL && l->tags[i].key[0] != '\0') {
            pbr_tag(&w, l->tags[i].key, l->tags[i].value);
        }
    }
    pbr_tag(&w, "logger", l->logger);
    pbr_tag(&w, "level", sw_log_severity_name(l->severity));
    sw__pbr_close(&w, LD_TAGS, tags);
    if (seg != NULL) {
        uint8_t *tc = sw__pbr_mark(&w);
        sw__pbr_int32(&w, TC_SPAN_ID, c->active);
        sw__pbr_string(&w, TC_SEGMENT_ID, seg->segment_id);
        sw__pbr_string(&w, TC_TRACE_ID, seg->trace_id);
        sw__pbr_close(&w, LD_TRACE_CONTEXT, tc);
    }
    uint8_t *body = sw__pbr_mark(&w);
    uint8_t *text = sw__pbr_mark(&w);
    pbr_text(&w, TEXT_TEXT, scratch, text_len);
    sw__pbr_close(&w, BODY_TEXT, text);
    sw__pbr_close(&w, LD_BODY, body);
    if (seg != NULL) {
        sw__pbr_string(&w, LD_ENDPOINT, seg->spans[0].operation);
    }
    sw__pbr_string(&w, LD_INSTANCE, s->instance);
    sw__pbr_string(&w, LD_SERVICE, s->service);
    sw__pbr_int64(&w, LD_TIMESTAMP, sw__now_ms());
    return sw__log_item_finish(it, &w, buf + bound, SW__LOG_ITEM_LOG);
}

int sw_log(sw_log_severity_t severity, const char *fmt, ...)
{
    if (fmt == NULL) {
        return SW_EINVAL;
    }
    va_list ap;
    va_start(ap, fmt);
    line_t l = {.severity = severity, .logger = "default", .fmt = fmt, .ap = &ap};
    int rc = sw__log_pipeline_produce(line_build, &l);
    va_end(ap);
    return rc;
}

int sw_log_kv(sw_log_severity_t severity, const char *logger, const char *message,
              const sw_kv_t *tags, size_t n)
{
    if (message == NULL || (tags == NULL && n > 0)) {
        return SW_EINVAL;
    }
    line_t l = {.severity = severity,
                .logger = logger != NULL && logger[0] != '\0' ? logger : "default",
                .tags = tags,
                .n_tags = n,
                .text = message,
                .text_len = strlen(message)};
    return sw__log_pipeline_produce(line_build, &l);
}
