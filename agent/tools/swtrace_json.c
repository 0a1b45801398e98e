/*
 * JSON output: one document, an array of traces in start order. Each trace lists its segments
 * in tree order (a parent segment before its children), each segment its spans in tree order
 * with their depth, every SegmentObject field, and how the segment was joined
 * (parentSegmentId / parentSpanId / refType, or a note such as "orphan"). Strings are escaped
 * per RFC 8259; bytes that are not valid UTF-8 become U+FFFD.
 */
#include "swtrace.h"

#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if p does not start one. */
static size_t utf8_valid(const unsigned char *p)
{
    unsigned char b = p[0];
    if (b < 0x80) {
        return 1;
    }
    unsigned char lo = 0x80, hi = 0xbf;
    size_t n;
    if (b >= 0xc2 && b <= 0xdf) {
        n = 2;
    } else if (b >= 0xe0 && b <= 0xef) {
        n = 3;
        lo = b == 0xe0 ? 0xa0 : 0x80;
        hi = b == 0xed ? 0x9f : 0xbf;
    } else if (b >= 0xf0 && b <= 0xf4) {
        n = 4;
        lo = b == 0xf0 ? 0x90 : 0x80;
        hi = b == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    /* The NUL terminator fails every range check, so this never reads past the string. */
    if (p[1] < lo || p[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < n; i++) {
        if (p[i] < 0x80 || p[i] > 0xbf) {
            return 0;
        }
    }
    return n;
}

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p != '\0') {
        size_t n = utf8_valid(p);
        if (n == 0) {
            fputs("\\ufffd", out);
            p++;
        } else if (*p == '"' || *p == '\\') {
            fputc('\\', out);
            fputc(*p++, out);
        } else if (*p < 0x20) {
            const char *esc = *p == '\n' ? "\\n" : *p == '\t' ? "\\t" : *p == '\r' ? "\\r" : NULL;
            if (esc != NULL) {
                fputs(esc, out);
            } else {
                fprintf(out, "\\u%04x", *p);
            }
            p++;
        } else {
            fwrite(p, 1, n, out);
            p += n;
        }
    }
    fputc('"', out);
}

static void json_kv_list(FILE *out, Skywalking__V3__KeyStringValuePair **kv, size_t n)
{
    fputc('[', out);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",{\"key\":" : "{\"key\":", out);
        json_str(out, kv[i]->key);
        fputs(",\"value\":", out);
        json_str(out, kv[i]->value);
        fputc('}', out);
    }
    fputc(']', out);
}

static const char *note_name(sw__trace_note_t note)
{
    switch (note) {
    case SW__TRACE_NOTE_NONE:
        return NULL;
    case SW__TRACE_NOTE_ORPHAN:
        return "orphan: parent segment not in input";
    case SW__TRACE_NOTE_NO_PARENT_SPAN:
        return "parent span not found in parent segment";
    case SW__TRACE_NOTE_LOST_PARENT:
        return "parent span missing from its segment";
    case SW__TRACE_NOTE_CYCLE:
        return "cyclic parent references";
    }
    return NULL;
}

static void json_note(FILE *out, sw__trace_note_t note)
{
    const char *name = note_name(note);
    if (name == NULL) {
        fputs("null", out);
    } else {
        json_str(out, name);
    }
}

static void json_refs(FILE *out, const Skywalking__V3__SpanObject *span)
{
    fputc('[', out);
    for (size_t i = 0; i < span->n_refs; i++) {
        const Skywalking__V3__SegmentReference *ref = span->refs[i];
        fputs(i ? ",{\"refType\":" : "{\"refType\":", out);
        json_str(out, sw__trace_ref_type_name(ref->reftype));
        fputs(",\"traceId\":", out);
        json_str(out, ref->traceid);
        fputs(",\"parentTraceSegmentId\":", out);
        json_str(out, ref->parenttracesegmentid);
        fprintf(out, ",\"parentSpanId\":%d,\"parentService\":", (int)ref->parentspanid);
        json_str(out, ref->parentservice);
        fputs(",\"parentServiceInstance\":", out);
        json_str(out, ref->parentserviceinstance);
        fputs(",\"parentEndpoint\":", out);
        json_str(out, ref->parentendpoint);
        fputs(",\"networkAddressUsedAtPeer\":", out);
        json_str(out, ref->networkaddressusedatpeer);
        fputc('}', out);
    }
    fputc(']', out);
}

static void json_span(FILE *out, const Skywalking__V3__SpanObject *span, const sw__trace_row_t *row)
{
    fprintf(out,
            "{\"spanId\":%d,\"parentSpanId\":%d,\"depth\":%zu,\"startTime\":%lld,"
            "\"endTime\":%lld,\"durationMs\":%lld,\"operationName\":",
            (int)span->spanid, (int)span->parentspanid, row->depth, (long long)span->starttime,
            (long long)span->endtime,
            (long long)sw__trace_duration(span->starttime, span->endtime));
    json_str(out, span->operationname);
    fputs(",\"peer\":", out);
    json_str(out, span->peer);
    fputs(",\"spanType\":", out);
    json_str(out, sw__trace_span_type_name(span->spantype));
    fputs(",\"spanLayer\":", out);
    json_str(out, sw__trace_span_layer_name(span->spanlayer));
    fprintf(out, ",\"componentId\":%d,\"isError\":%s,\"skipAnalysis\":%s,\"tags\":",
            (int)span->componentid, span->iserror ? "true" : "false",
            span->skipanalysis ? "true" : "false");
    json_kv_list(out, span->tags, span->n_tags);
    fputs(",\"logs\":[", out);
    for (size_t i = 0; i < span->n_logs; i++) {
        fprintf(out, "%s{\"time\":%lld,\"data\":", i ? "," : "", (long long)span->logs[i]->time);
        json_kv_list(out, span->logs[i]->data, span->logs[i]->n_data);
        fputc('}', out);
    }
    fputs("],\"refs\":", out);
    json_refs(out, span);
    fputs(",\"note\":", out);
    json_note(out, row->note);
    fputc('}', out);
}

static void json_segment_head(FILE *out, const sw__trace_set_t *set, const sw__trace_segment_t *seg)
{
    fputs("{\"traceSegmentId\":", out);
    json_str(out, seg->obj->tracesegmentid);
    fputs(",\"service\":", out);
    json_str(out, seg->obj->service);
    fputs(",\"serviceInstance\":", out);
    json_str(out, seg->obj->serviceinstance);
    fprintf(out, ",\"isSizeLimited\":%s,\"file\":", seg->obj->issizelimited ? "true" : "false");
    json_str(out, seg->file);
    fprintf(out, ",\"offset\":%llu,\"parentSegmentId\":", (unsigned long long)seg->offset);
    if (seg->parent_seg != SIZE_MAX) {
        json_str(out, set->segs[seg->parent_seg].obj->tracesegmentid);
        fprintf(out, ",\"parentSpanId\":%d,\"refType\":", (int)seg->parent_span_id);
        json_str(out, sw__trace_ref_type_name(seg->joined ? seg->joined->reftype : 0));
    } else {
        fputs("null,\"parentSpanId\":null,\"refType\":null", out);
    }
    fputs(",\"note\":", out);
    json_note(out, seg->note);
    fputs(",\"spans\":[", out);
}

/* Prints one trace; rank (n_segs entries, all SIZE_MAX) and order are scratch space. */
static void json_trace(FILE *out, const sw__trace_t *trace, const sw__trace_set_t *set,
                       size_t *rank, size_t *first, size_t *order)
{
    fputs("{\"traceId\":", out);
    json_str(out, trace->trace_id);
    fprintf(out,
            ",\"startTime\":%lld,\"endTime\":%lld,\"durationMs\":%lld,\"segmentCount\":%zu,"
            "\"spanCount\":%zu,\"errorCount\":%zu,\"segments\":[\n",
            (long long)trace->start, (long long)trace->end,
            (long long)sw__trace_duration(trace->start, trace->end), trace->n_segments,
            trace->n_spans, trace->n_errors);
    /* Bucket the rows by segment, segments in order of first appearance (counting sort). */
    size_t n_ranks = 0;
    for (size_t r = 0; r < trace->n_spans; r++) {
        size_t s = trace->rows[r].seg;
        if (rank[s] == SIZE_MAX) {
            rank[s] = n_ranks++;
            first[rank[s] + 1] = 0;
        }
        first[rank[s] + 1]++;
    }
    first[0] = 0;
    for (size_t k = 0; k < n_ranks; k++) {
        first[k + 1] += first[k];
    }
    for (size_t r = 0; r < trace->n_spans; r++) {
        order[first[rank[trace->rows[r].seg]]++] = r;
    }
    /* first[k] now ends bucket k; buckets are contiguous in order[]. */
    size_t r = 0;
    for (size_t k = 0; k < n_ranks; k++) {
        const sw__trace_segment_t *seg = &set->segs[trace->rows[order[r]].seg];
        fputs(k ? ",\n" : "", out);
        json_segment_head(out, set, seg);
        for (size_t i = 0; r < first[k]; r++, i++) {
            const sw__trace_row_t *row = &trace->rows[order[r]];
            fputs(i ? ",\n  " : "\n  ", out);
            json_span(out, seg->obj->spans[row->span], row);
        }
        fputs("]}", out);
    }
    fputs("]}", out);
    for (size_t q = 0; q < trace->n_spans; q++) {
        rank[trace->rows[q].seg] = SIZE_MAX;
    }
}

int sw__trace_print_json(FILE *out, const sw__trace_forest_t *forest, const sw__trace_set_t *set)
{
    size_t max_spans = 0;
    for (size_t t = 0; t < forest->n_traces; t++) {
        max_spans = forest->traces[t].n_spans > max_spans ? forest->traces[t].n_spans : max_spans;
    }
    size_t *rank = malloc((set->n_segs + 1) * sizeof(size_t));
    size_t *first = malloc((max_spans + 2) * sizeof(size_t));
    size_t *order = malloc((max_spans + 1) * sizeof(size_t));
    if (rank == NULL || first == NULL || order == NULL) {
        free(rank);
        free(first);
        free(order);
        return SW__TRACE_ERR_NOMEM;
    }
    for (size_t s = 0; s < set->n_segs; s++) {
        rank[s] = SIZE_MAX;
    }
    fputs("[", out);
    for (size_t t = 0; t < forest->n_traces; t++) {
        fputs(t ? ",\n" : "\n", out);
        json_trace(out, &forest->traces[t], set, rank, first, order);
    }
    fputs("\n]\n", out);
    free(rank);
    free(first);
    free(order);
    return 0;
}
