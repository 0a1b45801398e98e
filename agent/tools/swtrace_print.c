/*
 * Text output: per trace a header line, then one line per span in tree order:
 *
 *   |bar on the trace's time axis| duration  <indent>service  operation  Type/Layer  peer  notes
 *        tags: k=v ...
 *        log +Nms: k=v ...
 *
 * and a summary line at the end. Strings from the file are printed with control bytes escaped
 * so that a hostile file cannot drive the terminal.
 */
#include "swtrace.h"

#include <string.h>
#include <time.h>

#define BAR_WIDTH     40
#define INDENT_MAX    24 /* deeper levels are shown as a number instead of more spaces */
#define DETAIL_COLUMN (BAR_WIDTH + 2 + 10) /* where the tree starts: after bar and duration */

typedef struct style {
    const char *bold, *dim, *red, *green, *cyan, *yellow, *reset;
} style_t;

static const style_t style_color = {"\033[1m",  "\033[2m",  "\033[31m", "\033[32m",
                                    "\033[36m", "\033[33m", "\033[0m"};
static const style_t style_plain = {"", "", "", "", "", "", ""};

/* Prints s with bytes below 0x20 and 0x7f escaped as \xNN; NULL prints as nothing. */
static void str_put(FILE *out, const char *s)
{
    if (s == NULL) {
        return;
    }
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            fprintf(out, "\\x%02x", *p);
        } else {
            fputc(*p, out);
        }
    }
}

static void time_put(FILE *out, int64_t ms)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    char buf[64];
    if (ms >= 0 && gmtime_r(&secs, &tm) != NULL &&
        strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm) > 0) {
        fprintf(out, "%s.%03dZ", buf, (int)(ms % 1000));
    } else {
        fprintf(out, "%lld ms", (long long)ms);
    }
}

/* Column of time t on an axis [start, start + total) that is BAR_WIDTH columns wide. */
static int bar_column(int64_t start, int64_t total, int64_t t)
{
    double x = (double)sw__trace_duration(start, t) * BAR_WIDTH / (double)total;
    if (x < 0) {
        return 0;
    }
    return x > BAR_WIDTH ? BAR_WIDTH : (int)x;
}

static void bar_put(FILE *out, const sw__trace_t *trace, const Skywalking__V3__SpanObject *span,
                    const style_t *st)
{
    int64_t total = sw__trace_duration(trace->start, trace->end);
    int a = 0, b = BAR_WIDTH;
    if (total > 0) {
        a = bar_column(trace->start, total, span->starttime);
        int64_t end = span->endtime > span->starttime ? span->endtime : span->starttime;
        b = bar_column(trace->start, total, end);
        if (b <= a) {
            a = a >= BAR_WIDTH ? BAR_WIDTH - 1 : a;
            b = a + 1;
        }
    }
    fputc('|', out);
    fprintf(out, "%*s", a, "");
    fputs(span->iserror ? st->red : st->green, out);
    for (int i = a; i < b; i++) {
        fputc('=', out);
    }
    fputs(st->reset, out);
    fprintf(out, "%*s|", BAR_WIDTH - b, "");
}

static void kv_list_put(FILE *out, Skywalking__V3__KeyStringValuePair **kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fputc(' ', out);
        str_put(out, kv[i]->key);
        fputc('=', out);
        str_put(out, kv[i]->value);
    }
}

static void note_put(FILE *out, const sw__trace_set_t *set, const sw__trace_row_t *row,
                     const Skywalking__V3__SpanObject *span, const style_t *st)
{
    const sw__trace_segment_t *seg = &set->segs[row->seg];
    const Skywalking__V3__SegmentReference *ref = seg->joined;
    bool seg_root = false; /* this span carries the ref that joined its segment */
    for (size_t i = 0; ref != NULL && i < span->n_refs; i++) {
        seg_root = seg_root || span->refs[i] == ref;
    }
    if (seg_root && row->note == SW__TRACE_NOTE_NONE && seg->parent_seg != SIZE_MAX) {
        fprintf(out, "  %s<- %s from ", st->dim, sw__trace_ref_type_name(ref->reftype));
        bool named = ref->parentservice != NULL && ref->parentservice[0] != '\0';
        str_put(out, named ? ref->parentservice : set->segs[seg->parent_seg].obj->service);
        fputs(st->reset, out);
    }
    fputs(st->yellow, out);
    switch (row->note) {
    case SW__TRACE_NOTE_NONE:
        break;
    case SW__TRACE_NOTE_ORPHAN:
        fputs("  (orphan: parent segment ", out);
        str_put(out, span->n_refs ? span->refs[0]->parenttracesegmentid : "");
        fputs(" is not in the input)", out);
        break;
    case SW__TRACE_NOTE_NO_PARENT_SPAN:
        fprintf(out, "  (parent span %d not found in segment ", (int)seg->parent_span_id);
        if (seg->parent_seg != SIZE_MAX) {
            str_put(out, set->segs[seg->parent_seg].obj->tracesegmentid);
        }
        fputs(")", out);
        break;
    case SW__TRACE_NOTE_LOST_PARENT:
        fprintf(out, "  (parent span %d missing from its segment)", (int)span->parentspanid);
        break;
    case SW__TRACE_NOTE_CYCLE:
        fputs("  (cyclic parent references; shown as a root)", out);
        break;
    }
    fputs(st->reset, out);
}

static void row_put(FILE *out, const sw__trace_t *trace, const sw__trace_set_t *set,
                    const sw__trace_row_t *row, const style_t *st)
{
    const sw__trace_segment_t *seg = &set->segs[row->seg];
    const Skywalking__V3__SpanObject *span = seg->obj->spans[row->span];
    bar_put(out, trace, span, st);
    fprintf(out, " %6lld ms ", (long long)sw__trace_duration(span->starttime, span->endtime));
    size_t depth = row->depth;
    if (depth > INDENT_MAX) {
        fprintf(out, "%*s[%zu] ", INDENT_MAX * 2, "", depth);
    } else {
        fprintf(out, "%*s", (int)depth * 2, "");
    }
    fputs(st->cyan, out);
    str_put(out, seg->obj->service);
    fputs(st->reset, out);
    fputs("  ", out);
    fputs(st->bold, out);
    str_put(out, span->operationname);
    fputs(st->reset, out);
    fprintf(out, "  %s/%s", sw__trace_span_type_name(span->spantype),
            sw__trace_span_layer_name(span->spanlayer));
    if (span->peer != NULL && span->peer[0] != '\0') {
        fputs("  peer=", out);
        str_put(out, span->peer);
    }
    if (span->iserror) {
        fprintf(out, "  %s%sERROR%s", st->bold, st->red, st->reset);
    }
    note_put(out, set, row, span, st);
    fputc('\n', out);
    /* Details start under the operation name of their span. */
    int detail = DETAIL_COLUMN + (int)(depth > INDENT_MAX ? INDENT_MAX : depth) * 2 + 2;
    if (span->n_tags > 0) {
        fprintf(out, "%*s%stags:", detail, "", st->dim);
        kv_list_put(out, span->tags, span->n_tags);
        fprintf(out, "%s\n", st->reset);
    }
    for (size_t i = 0; i < span->n_logs; i++) {
        const Skywalking__V3__Log *log = span->logs[i];
        fprintf(out, "%*s%slog +%lld ms:", detail, "", span->iserror ? st->red : st->dim,
                (long long)sw__trace_duration(span->starttime, log->time));
        kv_list_put(out, log->data, log->n_data);
        fprintf(out, "%s\n", st->reset);
    }
}

void sw__trace_print_text(FILE *out, const sw__trace_forest_t *forest, const sw__trace_set_t *set,
                          bool color)
{
    const style_t *st = color ? &style_color : &style_plain;
    for (size_t t = 0; t < forest->n_traces; t++) {
        const sw__trace_t *trace = &forest->traces[t];
        fprintf(out, "%strace ", st->bold);
        str_put(out, trace->trace_id);
        fprintf(out, "%s  start ", st->reset);
        time_put(out, trace->start);
        fprintf(out, "  duration %lld ms  segments=%zu spans=%zu errors=%zu\n",
                (long long)sw__trace_duration(trace->start, trace->end), trace->n_segments,
                trace->n_spans, trace->n_errors);
        for (size_t r = 0; r < trace->n_spans; r++) {
            row_put(out, trace, set, &trace->rows[r], st);
        }
        fputc('\n', out);
    }
    fprintf(out, "summary: traces=%zu segments=%zu spans=%zu errors=%zu\n", forest->n_traces,
            forest->n_segments, forest->n_spans, forest->n_errors);
}
