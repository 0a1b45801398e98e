/*
 * segment_pbc.c - the reference SegmentObject encoder for tests: the segment's spans, tags, logs
 * and references as protobuf-c message structs, packed by the generated code. The agent's own
 * writer (agent/src/encode/segment_encode.c) must produce the same bytes.
 */
#include "segment_pbc.h"

#include <stdlib.h>
#include <string.h>

#include "common.pb-c.h"
#include "tracing.pb-c.h"

typedef Skywalking__V3__SegmentObject segment_msg;
typedef Skywalking__V3__SpanObject span_msg;
typedef Skywalking__V3__SegmentReference ref_msg;
typedef Skywalking__V3__Log log_msg;
typedef Skywalking__V3__KeyStringValuePair kv_msg;

/* Per-span counts, then cursors: where the span's next tag/log/ref pointer goes. */
typedef struct span_slots {
    uint32_t tags, logs, refs;
} span_slots_t;

/* A bump allocator over the scratch block. */
typedef struct bump {
    char *p;
} bump_t;

static void *bump_take(bump_t *b, size_t n)
{
    void *r = b->p;
    b->p += (n + 7u) & ~(size_t)7u;
    return r;
}

static size_t scratch_need(uint32_t spans, uint32_t kvs, uint32_t logs, uint32_t refs)
{
    size_t n = 0;
    n += ((size_t)spans * (sizeof(span_msg) + sizeof(span_msg *) + sizeof(span_slots_t) * 2));
    n += (size_t)kvs * (sizeof(kv_msg) + 2 * sizeof(kv_msg *)); /* tag and log-field arrays */
    n += (size_t)logs * (sizeof(log_msg) + sizeof(log_msg *));
    n += (size_t)refs * (sizeof(ref_msg) + sizeof(ref_msg *));
    return n + 8 * (16 + 3 * (size_t)spans); /* alignment slack of every bump_take */
}

static char *s(const char *str)
{
    return (char *)(str != NULL ? str : "");
}

/* Fills the span messages and their pointer arrays. */
static void spans_fill(const sw__segment_t *seg, span_msg *spans, span_msg **span_ptrs,
                       span_slots_t *count, span_slots_t *cursor, bump_t *b)
{
    for (uint32_t i = 0; i < seg->span_count; i++) {
        const sw__span_t *in = &seg->spans[i];
        span_msg *m = &spans[i];
        skywalking__v3__span_object__init(m);
        m->spanid = (int32_t)i;
        m->parentspanid = in->parent_id;
        m->starttime = in->start_ms;
        m->endtime = in->end_ms;
        m->operationname = s(in->operation);
        m->peer = s(in->peer);
        m->spantype = (Skywalking__V3__SpanType)in->type;
        m->spanlayer = (Skywalking__V3__SpanLayer)in->layer;
        m->componentid = in->component_id;
        m->iserror = in->is_error;
        m->skipanalysis = in->reserved;
        m->n_tags = count[i].tags;
        m->tags = count[i].tags ? bump_take(b, count[i].tags * sizeof(kv_msg *)) : NULL;
        m->n_logs = count[i].logs;
        m->logs = count[i].logs ? bump_take(b, count[i].logs * sizeof(log_msg *)) : NULL;
        m->n_refs = count[i].refs;
        m->refs = count[i].refs ? bump_take(b, count[i].refs * sizeof(ref_msg *)) : NULL;
        cursor[i] = (span_slots_t){0, 0, 0};
        span_ptrs[i] = m;
    }
}

static void attrs_fill(const sw__segment_t *seg, span_msg *spans, span_slots_t *cursor, kv_msg *kvs,
                       log_msg *logs)
{
    uint32_t nkv = 0, nlog = 0;
    log_msg *current = NULL;
    for (uint32_t i = 0; i < seg->attr_count; i++) {
        const sw__attr_t *a = sw__segment_attr(seg, i);
        if (a->span_id >= seg->span_count) {
            continue;
        }
        span_msg *m = &spans[a->span_id];
        if (a->kind == SW__ATTR_LOG) {
            current = &logs[nlog++];
            skywalking__v3__log__init(current);
            current->time = a->time_ms;
            current->n_data = 0;
            current->data = (kv_msg **)(void *)(kvs + nkv); /* replaced below */
            m->logs[cursor[a->span_id].logs++] = current;
            continue;
        }
        if (a->kind == SW__ATTR_LOG_KV && current == NULL) {
            continue; /* cannot happen: a log's fields follow it */
        }
        kv_msg *kv = &kvs[nkv++];
        skywalking__v3__key_string_value_pair__init(kv);
        kv->key = s(a->key);
        kv->value = s(a->value);
        if (a->kind == SW__ATTR_TAG) {
            m->tags[cursor[a->span_id].tags++] = kv;
        } else {
            current->n_data++;
        }
    }
}

/* Log data pointer arrays: a log's fields are consecutive in kvs; build pointers for them. */
static void logs_link(uint32_t nlogs, log_msg *logs, kv_msg *kvs, kv_msg **ptrs)
{
    for (uint32_t i = 0; i < nlogs; i++) {
        kv_msg *first = (kv_msg *)(void *)logs[i].data;
        size_t at = (size_t)(first - kvs);
        for (size_t k = 0; k < logs[i].n_data; k++) {
            ptrs[at + k] = &kvs[at + k];
        }
        logs[i].data = logs[i].n_data ? &ptrs[at] : NULL;
    }
}

static void refs_fill(const sw__segment_t *seg, span_msg *spans, span_slots_t *cursor,
                      ref_msg *refs)
{
    for (uint32_t i = 0; i < seg->ref_count; i++) {
        const sw__ref_t *r = &seg->refs[i];
        if (r->span_id >= seg->span_count) {
            continue;
        }
        ref_msg *m = &refs[i];
        skywalking__v3__segment_reference__init(m);
        m->reftype = (Skywalking__V3__RefType)r->type;
        m->traceid = s(r->trace_id);
        m->parenttracesegmentid = s(r->parent_segment_id);
        m->parentspanid = r->parent_span_id;
        m->parentservice = s(r->parent_service);
        m->parentserviceinstance = s(r->parent_instance);
        m->parentendpoint = s(r->parent_endpoint);
        m->networkaddressusedatpeer = s(r->address);
        spans[r->span_id].refs[cursor[r->span_id].refs++] = m;
    }
}

size_t pbc_encode_segment(const sw__segment_t *seg, const char *service, const char *instance,
                          uint8_t **out)
{
    uint32_t n = seg->span_count, nkv = 0, nlogs = 0, nrefs = 0;
    for (uint32_t i = 0; i < seg->attr_count; i++) {
        nlogs += sw__segment_attr(seg, i)->kind == SW__ATTR_LOG;
    }
    nkv = seg->attr_count - nlogs;
    nrefs = seg->ref_count;
    size_t need = scratch_need(n, nkv, nlogs, nrefs);
    void *scratch = malloc(need);
    if (scratch == NULL) {
        abort();
    }
    bump_t b = {scratch};
    span_msg *spans = bump_take(&b, n * sizeof(span_msg));
    span_msg **span_ptrs = bump_take(&b, n * sizeof(span_msg *));
    span_slots_t *count = bump_take(&b, n * sizeof(span_slots_t));
    span_slots_t *cursor = bump_take(&b, n * sizeof(span_slots_t));
    kv_msg *kvs = bump_take(&b, nkv * sizeof(kv_msg));
    kv_msg **kv_ptrs = bump_take(&b, nkv * sizeof(kv_msg *));
    log_msg *logs = bump_take(&b, nlogs * sizeof(log_msg));
    ref_msg *refs = bump_take(&b, nrefs * sizeof(ref_msg));
    memset(count, 0, n * sizeof(span_slots_t));
    for (uint32_t i = 0; i < seg->attr_count; i++) {
        const sw__attr_t *a = sw__segment_attr(seg, i);
        if (a->span_id < n && a->kind == SW__ATTR_TAG) {
            count[a->span_id].tags++;
        } else if (a->span_id < n && a->kind == SW__ATTR_LOG) {
            count[a->span_id].logs++;
        }
    }
    for (uint32_t i = 0; i < nrefs; i++) {
        if (seg->refs[i].span_id < n) {
            count[seg->refs[i].span_id].refs++;
        }
    }
    spans_fill(seg, spans, span_ptrs, count, cursor, &b);
    attrs_fill(seg, spans, cursor, kvs, logs);
    logs_link(nlogs, logs, kvs, kv_ptrs);
    refs_fill(seg, spans, cursor, refs);

    segment_msg msg = SKYWALKING__V3__SEGMENT_OBJECT__INIT;
    msg.traceid = s(seg->trace_id);
    msg.tracesegmentid = s(seg->segment_id);
    msg.n_spans = n;
    msg.spans = n ? span_ptrs : NULL;
    msg.service = s(service);
    msg.serviceinstance = s(instance);
    msg.issizelimited = seg->size_limited;
    size_t size = skywalking__v3__segment_object__get_packed_size(&msg);
    *out = malloc(size ? size : 1);
    if (*out == NULL) {
        abort();
    }
    size_t packed = skywalking__v3__segment_object__pack(&msg, *out);
    free(scratch);
    return packed;
}
