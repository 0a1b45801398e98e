/*
 * Joining segments into traces. Every span of every segment is a node; a node's parent is
 *   - the span of its own segment named by parentSpanId, or else
 *   - for a segment's root span, the span (parentTraceSegmentId, parentSpanId) of its first ref
 *     that names a segment of the same trace in the input (CrossProcess and CrossThread alike).
 * Each node has at most one parent, so the nodes form a forest plus, for hostile inputs, cycles.
 * An iterative depth-first walk from the roots (children by start time) yields the rows; nodes
 * left unvisited sit on a cycle and are walked from their first member, marked as such.
 */
#include "swtrace.h"

#include <stdlib.h>
#include <string.h>

/* Everything one build needs; freed at the end of sw__trace_forest_build. */
typedef struct build {
    sw__trace_set_t *set;
    size_t n_nodes;
    size_t *seg_order; /* segment indices sorted by (traceId, start) */
    size_t *base;      /* base[s]: node id of span 0 of segment s */
    size_t *node_seg;  /* node -> segment */
    size_t *parent;    /* node -> parent node or SIZE_MAX */
    sw__trace_note_t *note;
    size_t *span_keys; /* per segment, its node ids sorted by spanId */
    size_t *child_start, *children;
    size_t *stack;
    size_t *depth; /* node -> depth in its trace, set when the node is pushed */
    size_t *roots; /* scratch: the roots of the trace being filled */
    unsigned char *visited;
} build_t;

static const Skywalking__V3__SpanObject *node_span(const build_t *b, size_t node)
{
    size_t s = b->node_seg[node];
    return b->set->segs[s].obj->spans[node - b->base[s]];
}

/* Last tie-break of every order: the index itself, so that sorting is deterministic. */
static int index_cmp(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    return (a > b) - (a < b);
}

static int cmp_seg_order(const void *pa, const void *pb, void *ctx)
{
    const sw__trace_set_t *set = ctx;
    const sw__trace_segment_t *a = &set->segs[*(const size_t *)pa];
    const sw__trace_segment_t *b = &set->segs[*(const size_t *)pb];
    int c = strcmp(a->obj->traceid, b->obj->traceid);
    if (c != 0) {
        return c;
    }
    if (a->start != b->start) {
        return a->start < b->start ? -1 : 1;
    }
    return index_cmp(pa, pb);
}

static int cmp_span_id(const void *pa, const void *pb, void *ctx)
{
    const build_t *b = ctx;
    int32_t x = node_span(b, *(const size_t *)pa)->spanid;
    int32_t y = node_span(b, *(const size_t *)pb)->spanid;
    if (x != y) {
        return x < y ? -1 : 1;
    }
    return index_cmp(pa, pb);
}

static int cmp_child(const void *pa, const void *pb, void *ctx)
{
    const build_t *b = ctx;
    size_t na = *(const size_t *)pa, nb = *(const size_t *)pb;
    int64_t x = node_span(b, na)->starttime, y = node_span(b, nb)->starttime;
    if (x != y) {
        return x < y ? -1 : 1;
    }
    return (na > nb) - (na < nb);
}

/* Returns the node of the first span of segment s with the given spanId, or SIZE_MAX. */
static size_t span_find(const build_t *b, size_t s, int32_t span_id)
{
    size_t lo = b->base[s], hi = b->base[s] + b->set->segs[s].obj->n_spans;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (node_span(b, b->span_keys[mid])->spanid < span_id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo < b->base[s] + b->set->segs[s].obj->n_spans &&
        node_span(b, b->span_keys[lo])->spanid == span_id) {
        return b->span_keys[lo];
    }
    return SIZE_MAX;
}

/* Returns the node a foreign child hangs under when its parent span is missing: the segment's
 * first span with parentSpanId -1, else its first span. */
static size_t segment_root_node(const build_t *b, size_t s)
{
    const Skywalking__V3__SegmentObject *obj = b->set->segs[s].obj;
    for (size_t i = 0; i < obj->n_spans; i++) {
        if (obj->spans[i]->parentspanid == -1) {
            return b->base[s] + i;
        }
    }
    return b->base[s];
}

/* Finds segment `id` among seg_order[lo, hi) (one trace); linear in the group size would be
 * quadratic overall, so the group is searched through a sorted copy. */
static size_t group_find(const build_t *b, const size_t *by_id, size_t n, const char *id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(b->set->segs[by_id[mid]].obj->tracesegmentid, id) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo < n && strcmp(b->set->segs[by_id[lo]].obj->tracesegmentid, id) == 0) {
        return by_id[lo];
    }
    return SIZE_MAX;
}

static int cmp_seg_id(const void *pa, const void *pb, void *ctx)
{
    const sw__trace_set_t *set = ctx;
    int c = strcmp(set->segs[*(const size_t *)pa].obj->tracesegmentid,
                   set->segs[*(const size_t *)pb].obj->tracesegmentid);
    if (c != 0) {
        return c;
    }
    return index_cmp(pa, pb);
}

/* Links the root span `node` of segment s through its refs into the group. */
static void root_link(build_t *b, size_t s, size_t node, const size_t *by_id, size_t n_group)
{
    sw__trace_segment_t *seg = &b->set->segs[s];
    const Skywalking__V3__SpanObject *span = node_span(b, node);
    /* The segment-level join is the one of its first span (parentSpanId -1). */
    bool first_root = node == segment_root_node(b, s);
    sw__trace_note_t note =
        span->parentspanid != -1 ? SW__TRACE_NOTE_LOST_PARENT : SW__TRACE_NOTE_NONE;
    bool self_ref = false; /* a segment naming itself as parent: a cycle of one */
    for (size_t r = 0; r < span->n_refs; r++) {
        Skywalking__V3__SegmentReference *ref = span->refs[r];
        size_t p = ref->parenttracesegmentid
                       ? group_find(b, by_id, n_group, ref->parenttracesegmentid)
                       : SIZE_MAX;
        if (p == s) {
            self_ref = true;
        }
        if (p == SIZE_MAX || p == s) {
            continue;
        }
        size_t parent = span_find(b, p, ref->parentspanid);
        note = SW__TRACE_NOTE_NONE;
        if (parent == SIZE_MAX) {
            parent = segment_root_node(b, p);
            note = SW__TRACE_NOTE_NO_PARENT_SPAN;
        }
        b->parent[node] = parent;
        b->note[node] = note;
        if (first_root) {
            seg->parent_seg = p;
            seg->parent_span_id = ref->parentspanid;
            seg->joined = ref;
            seg->note = note;
        }
        return;
    }
    if (span->n_refs > 0) {
        note = self_ref ? SW__TRACE_NOTE_CYCLE : SW__TRACE_NOTE_ORPHAN;
    }
    b->note[node] = note;
    if (first_root) {
        seg->joined = span->n_refs > 0 ? span->refs[0] : NULL;
        seg->note = note;
    }
}

/* Computes parent[] and note[] for the segments seg_order[lo, hi) of one trace. */
static int group_link(build_t *b, size_t lo, size_t hi)
{
    size_t n_group = hi - lo;
    size_t *by_id = malloc(n_group * sizeof(*by_id));
    if (by_id == NULL) {
        return SW__TRACE_ERR_NOMEM;
    }
    memcpy(by_id, b->seg_order + lo, n_group * sizeof(*by_id));
    qsort_r(by_id, n_group, sizeof(*by_id), cmp_seg_id, b->set);
    for (size_t g = lo; g < hi; g++) {
        size_t s = b->seg_order[g];
        const Skywalking__V3__SegmentObject *obj = b->set->segs[s].obj;
        for (size_t i = 0; i < obj->n_spans; i++) {
            size_t node = b->base[s] + i;
            size_t parent = span_find(b, s, obj->spans[i]->parentspanid);
            if (parent != SIZE_MAX && parent != node) {
                b->parent[node] = parent;
            } else {
                root_link(b, s, node, by_id, n_group);
            }
        }
    }
    free(by_id);
    return 0;
}

/* Fills child_start/children (children of node k are children[child_start[k] ..
 * child_start[k+1]), ordered by start time). */
static void children_index(build_t *b)
{
    memset(b->child_start, 0, (b->n_nodes + 1) * sizeof(size_t));
    for (size_t k = 0; k < b->n_nodes; k++) {
        if (b->parent[k] != SIZE_MAX) {
            b->child_start[b->parent[k] + 1]++;
        }
    }
    for (size_t k = 0; k < b->n_nodes; k++) {
        b->child_start[k + 1] += b->child_start[k];
    }
    /* stack doubles as the fill cursor here; it is reset before the walk. */
    memcpy(b->stack, b->child_start, b->n_nodes * sizeof(size_t));
    for (size_t k = 0; k < b->n_nodes; k++) {
        if (b->parent[k] != SIZE_MAX) {
            b->children[b->stack[b->parent[k]]++] = k;
        }
    }
    for (size_t k = 0; k < b->n_nodes; k++) {
        size_t n = b->child_start[k + 1] - b->child_start[k];
        if (n > 1) {
            qsort_r(b->children + b->child_start[k], n, sizeof(size_t), cmp_child, b);
        }
    }
}

/* Walks the tree below `root` depth-first, appending one row per node reached. */
static void walk(build_t *b, sw__trace_t *trace, size_t root, sw__trace_note_t root_note)
{
    size_t top = 0;
    b->stack[top++] = root;
    b->depth[root] = 0;
    b->visited[root] = 1;
    while (top > 0) {
        size_t node = b->stack[--top];
        sw__trace_row_t *row = &trace->rows[trace->n_spans++];
        row->seg = b->node_seg[node];
        row->span = node - b->base[row->seg];
        row->depth = b->depth[node];
        row->note = node == root && root_note != SW__TRACE_NOTE_NONE ? root_note : b->note[node];
        /* Pushed in reverse so that the earliest child is printed first. A child already
         * visited is the way back round a cycle. */
        for (size_t c = b->child_start[node + 1]; c > b->child_start[node]; c--) {
            size_t child = b->children[c - 1];
            if (!b->visited[child]) {
                b->visited[child] = 1;
                b->depth[child] = b->depth[node] + 1;
                b->stack[top++] = child;
            }
        }
    }
}

/* Fills one trace from the segments seg_order[lo, hi). */
static int trace_fill(build_t *b, sw__trace_t *trace, size_t lo, size_t hi)
{
    memset(trace, 0, sizeof(*trace));
    size_t n_spans = 0;
    const sw__trace_segment_t *first = &b->set->segs[b->seg_order[lo]];
    trace->trace_id = first->obj->traceid;
    trace->start = first->start;
    trace->end = first->end;
    trace->n_segments = hi - lo;
    for (size_t g = lo; g < hi; g++) {
        const sw__trace_segment_t *seg = &b->set->segs[b->seg_order[g]];
        n_spans += seg->obj->n_spans;
        trace->start = seg->start < trace->start ? seg->start : trace->start;
        trace->end = seg->end > trace->end ? seg->end : trace->end;
        for (size_t i = 0; i < seg->obj->n_spans; i++) {
            trace->n_errors += seg->obj->spans[i]->iserror ? 1 : 0;
        }
    }
    trace->rows = calloc(n_spans, sizeof(*trace->rows));
    if (trace->rows == NULL) {
        return SW__TRACE_ERR_NOMEM;
    }
    /* Roots in start order: segments are sorted by start, and within a segment the roots are
     * taken by start time through cmp_child on a scratch list. */
    size_t n_roots = 0;
    for (size_t g = lo; g < hi; g++) {
        size_t s = b->seg_order[g];
        for (size_t i = 0; i < b->set->segs[s].obj->n_spans; i++) {
            if (b->parent[b->base[s] + i] == SIZE_MAX) {
                b->roots[n_roots++] = b->base[s] + i;
            }
        }
    }
    qsort_r(b->roots, n_roots, sizeof(size_t), cmp_child, b);
    for (size_t r = 0; r < n_roots; r++) {
        walk(b, trace, b->roots[r], SW__TRACE_NOTE_NONE);
    }
    /* What is left sits on a cycle: walk it from its first member. */
    for (size_t g = lo; g < hi && trace->n_spans < n_spans; g++) {
        size_t s = b->seg_order[g];
        for (size_t i = 0; i < b->set->segs[s].obj->n_spans; i++) {
            if (!b->visited[b->base[s] + i]) {
                walk(b, trace, b->base[s] + i, SW__TRACE_NOTE_CYCLE);
                if (b->set->segs[s].note == SW__TRACE_NOTE_NONE) {
                    b->set->segs[s].note = SW__TRACE_NOTE_CYCLE;
                }
            }
        }
    }
    return 0;
}

static int cmp_trace(const void *pa, const void *pb)
{
    const sw__trace_t *a = pa, *b = pb;
    if (a->start != b->start) {
        return a->start < b->start ? -1 : 1;
    }
    return strcmp(a->trace_id, b->trace_id);
}

static void build_free(build_t *b)
{
    free(b->seg_order);
    free(b->base);
    free(b->node_seg);
    free(b->parent);
    free(b->note);
    free(b->span_keys);
    free(b->child_start);
    free(b->children);
    free(b->stack);
    free(b->depth);
    free(b->roots);
    free(b->visited);
}

/* Allocates the per-node arrays and numbers the spans. */
static int build_init(build_t *b, sw__trace_set_t *set)
{
    memset(b, 0, sizeof(*b));
    b->set = set;
    size_t n = set->n_segs, nodes = 0;
    for (size_t s = 0; s < n; s++) {
        nodes += set->segs[s].obj->n_spans;
    }
    b->n_nodes = nodes;
    b->seg_order = malloc((n + 1) * sizeof(size_t));
    b->base = malloc((n + 1) * sizeof(size_t));
    b->node_seg = malloc((nodes + 1) * sizeof(size_t));
    b->parent = malloc((nodes + 1) * sizeof(size_t));
    b->note = calloc(nodes + 1, sizeof(sw__trace_note_t));
    b->span_keys = malloc((nodes + 1) * sizeof(size_t));
    b->child_start = calloc(nodes + 1, sizeof(size_t));
    b->children = malloc((nodes + 1) * sizeof(size_t));
    b->stack = malloc((nodes + 1) * sizeof(size_t));
    b->depth = malloc((nodes + 1) * sizeof(size_t));
    b->roots = malloc((nodes + 1) * sizeof(size_t));
    b->visited = calloc(nodes + 1, 1);
    if (!b->seg_order || !b->base || !b->node_seg || !b->parent || !b->note || !b->span_keys ||
        !b->child_start || !b->children || !b->stack || !b->depth || !b->roots || !b->visited) {
        build_free(b);
        return SW__TRACE_ERR_NOMEM;
    }
    size_t node = 0;
    for (size_t s = 0; s < n; s++) {
        sw__trace_segment_t *seg = &set->segs[s];
        seg->parent_seg = SIZE_MAX;
        seg->parent_span_id = 0;
        seg->joined = NULL;
        seg->note = SW__TRACE_NOTE_NONE;
        b->seg_order[s] = s;
        b->base[s] = node;
        for (size_t i = 0; i < seg->obj->n_spans; i++, node++) {
            b->node_seg[node] = s;
            b->parent[node] = SIZE_MAX;
            b->span_keys[node] = node;
        }
        qsort_r(b->span_keys + b->base[s], seg->obj->n_spans, sizeof(size_t), cmp_span_id, b);
    }
    qsort_r(b->seg_order, n, sizeof(size_t), cmp_seg_order, set);
    return 0;
}

int sw__trace_forest_build(sw__trace_forest_t *forest, sw__trace_set_t *set)
{
    memset(forest, 0, sizeof(*forest));
    build_t b;
    int rc = build_init(&b, set);
    if (rc != 0) {
        return rc;
    }
    size_t n = set->n_segs;
    forest->traces = calloc(n + 1, sizeof(*forest->traces));
    if (forest->traces == NULL) {
        build_free(&b);
        return SW__TRACE_ERR_NOMEM;
    }
    for (size_t lo = 0; lo < n && rc == 0;) {
        size_t hi = lo + 1;
        while (hi < n && strcmp(set->segs[b.seg_order[hi]].obj->traceid,
                                set->segs[b.seg_order[lo]].obj->traceid) == 0) {
            hi++;
        }
        rc = group_link(&b, lo, hi);
        lo = hi;
    }
    if (rc == 0) {
        children_index(&b);
    }
    for (size_t lo = 0; lo < n && rc == 0;) {
        size_t hi = lo + 1;
        while (hi < n && strcmp(set->segs[b.seg_order[hi]].obj->traceid,
                                set->segs[b.seg_order[lo]].obj->traceid) == 0) {
            hi++;
        }
        sw__trace_t *trace = &forest->traces[forest->n_traces++];
        rc = trace_fill(&b, trace, lo, hi);
        forest->n_segments += trace->n_segments;
        forest->n_spans += trace->n_spans;
        forest->n_errors += trace->n_errors;
        lo = hi;
    }
    build_free(&b);
    if (rc != 0) {
        sw__trace_forest_destroy(forest);
        return rc;
    }
    qsort(forest->traces, forest->n_traces, sizeof(*forest->traces), cmp_trace);
    return 0;
}

void sw__trace_forest_destroy(sw__trace_forest_t *forest)
{
    for (size_t t = 0; t < forest->n_traces; t++) {
        free(forest->traces[t].rows);
    }
    free(forest->traces);
    memset(forest, 0, sizeof(*forest));
}

const char *sw__trace_span_type_name(int type)
{
    switch (type) {
    case SKYWALKING__V3__SPAN_TYPE__Entry:
        return "Entry";
    case SKYWALKING__V3__SPAN_TYPE__Exit:
        return "Exit";
    case SKYWALKING__V3__SPAN_TYPE__Local:
        return "Local";
    }
    return "?";
}

const char *sw__trace_span_layer_name(int layer)
{
    static const char *const names[] = {"Unknown", "Database", "RPCFramework", "Http",
                                        "MQ",      "Cache",    "FAAS"};
    if (layer >= 0 && (size_t)layer < sizeof(names) / sizeof(names[0])) {
        return names[layer];
    }
    return "?";
}

const char *sw__trace_ref_type_name(int type)
{
    switch (type) {
    case SKYWALKING__V3__REF_TYPE__CrossProcess:
        return "CrossProcess";
    case SKYWALKING__V3__REF_TYPE__CrossThread:
        return "CrossThread";
    }
    return "?";
}

int64_t sw__trace_duration(int64_t a, int64_t b)
{
    int64_t d;
    if (b <= a) {
        return 0;
    }
    if (__builtin_sub_overflow(b, a, &d)) {
        return INT64_MAX;
    }
    return d;
}
