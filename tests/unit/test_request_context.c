/*
 * test_request_context.c - request contexts (skywalking.h "Request contexts", core/request.c):
 * interleaved requests on one thread, spans ended in any order, headers in and out, attach and
 * detach with the stack API, contexts that hop between two threads, the span limit, sampling
 * and accounting, and hostile use refused with an error code.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "test_agent_support.h"

static const char *tag_of(const Skywalking__V3__SpanObject *sp, const char *key)
{
    for (size_t i = 0; i < sp->n_tags; i++) {
        if (strcmp(sp->tags[i]->key, key) == 0) {
            return sp->tags[i]->value;
        }
    }
    return NULL;
}

/* The segment whose first span has operation `op`. */
static const Skywalking__V3__SegmentObject *segment_named(const decoded_segments_t *d,
                                                          const char *op)
{
    for (size_t i = 0; i < d->count; i++) {
        if (d->items[i]->n_spans > 0 && strcmp(d->items[i]->spans[0]->operationname, op) == 0) {
            return d->items[i];
        }
    }
    cr_assert_fail("no segment begins with %s", op);
    return NULL;
}

Test(request_context, interleaved_requests_on_one_thread_end_in_any_order)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    enum { N = 50 };
    sw_span_ref_t entry[N], exit[N], local[N];
    for (int i = 0; i < N; i++) {
        char op[32];
        snprintf(op, sizeof op, "GET /r%d", i);
        cr_assert_eq(sw_context_begin_entry(op, NULL, &entry[i]), 0);
        cr_assert_eq(sw_span_ref_begin_exit(entry[i], "call", "down:80", &exit[i]), 0);
        char value[16];
        snprintf(value, sizeof value, "%d", i);
        cr_assert_eq(sw_span_ref_tag(exit[i], "req", value), 0);
    }
    /* Interleaved: locals under each entry while every exit is still open, then every span
       ends in another order than it began. */
    for (int i = N - 1; i >= 0; i--) {
        cr_assert_eq(sw_span_ref_begin_local(entry[i], "work", &local[i]), 0);
        cr_assert_eq(sw_span_ref_set_error(local[i], true), 0);
    }
    sw_stats_t st;
    sw_stats(&st);
    cr_assert_eq(st.contexts_open, N);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(sw_span_ref_end(entry[i]), 0, "an entry may end before its children");
        cr_assert_eq(sw_span_ref_end(local[i]), 0);
    }
    sw_stats(&st);
    cr_assert_eq(st.segments_finished, 0, "every context still has an open exit span");
    for (int i = 0; i < N; i++) {
        cr_assert_eq(sw_span_ref_end(exit[i]), 0);
    }
    st = agent_test_stop();
    cr_assert_eq(st.segments_reported, N);
    cr_assert_eq(st.contexts_open, 0);
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, N);
    for (int i = 0; i < N; i++) {
        char op[32], value[16];
        snprintf(op, sizeof op, "GET /r%d", i);
        snprintf(value, sizeof value, "%d", i);
        const Skywalking__V3__SegmentObject *seg = segment_named(&d, op);
        cr_assert_eq(seg->n_spans, 3, "no span of another request in %s", op);
        cr_assert_eq(seg->spans[0]->parentspanid, -1);
        cr_assert_eq(seg->spans[1]->parentspanid, 0);
        cr_assert_str_eq(seg->spans[1]->peer, "down:80");
        cr_assert_str_eq(tag_of(seg->spans[1], "req"), value);
        cr_assert_eq(seg->spans[2]->parentspanid, 0);
        cr_assert(seg->spans[2]->iserror);
        cr_assert_geq(seg->spans[1]->endtime, seg->spans[1]->starttime);
    }
    agent_test_free(&d);
}

Test(request_context, headers_in_and_out_join_the_upstream_trace)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    /* Upstream: a context whose exit span injects sw8; downstream: a context continuing it. */
    sw_span_ref_t up, up_exit, down;
    cr_assert_eq(sw_context_begin_local("upstream", &up), 0);
    cr_assert_eq(sw_span_ref_begin_exit(up, "GET /down", "down:8080", &up_exit), 0);
    char sw8[SW_SW8_MAX], corr[SW_CORRELATION_HEADER_MAX], x[SW_SW8_X_MAX];
    cr_assert_eq(sw_span_ref_inject(up, sw8, sizeof sw8, NULL, 0, NULL, 0), SW_ENOTEXIT);
    cr_assert_eq(sw_span_ref_inject(up_exit, sw8, sizeof sw8, corr, sizeof corr, x, sizeof x), 0);
    sw_headers_t in = {.sw8 = sw8, .sw8_correlation = corr, .sw8_x = x};
    cr_assert_eq(sw_context_begin_entry("GET /down", &in, &down), 0);
    cr_assert_eq(sw_span_ref_end(down), 0);
    cr_assert_eq(sw_span_ref_end(up_exit), 0);
    cr_assert_eq(sw_span_ref_end(up), 0);
    agent_test_stop();
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 2);
    const Skywalking__V3__SegmentObject *u = segment_named(&d, "upstream");
    const Skywalking__V3__SegmentObject *s = segment_named(&d, "GET /down");
    cr_assert_str_eq(s->traceid, u->traceid);
    cr_assert_eq(s->spans[0]->n_refs, 1);
    const Skywalking__V3__SegmentReference *ref = s->spans[0]->refs[0];
    cr_assert_str_eq(ref->parenttracesegmentid, u->tracesegmentid);
    cr_assert_eq(ref->parentspanid, 1, "the ref names the exit span");
    cr_assert_str_eq(ref->networkaddressusedatpeer, "down:8080");
    agent_test_free(&d);
}

Test(request_context, attach_lets_the_stack_api_record_into_the_request)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    sw_local_span_begin("thread's own"); /* the thread has a trace of its own */
    sw_span_ref_t entry;
    cr_assert_eq(sw_context_begin_entry("GET /evented", NULL, &entry), 0);
    sw_attach_t saved;
    cr_assert_eq(sw_context_attach(entry, &saved), 0);
    sw_exit_span_begin("SELECT", "db:5432"); /* what a preload plugin does inside a callback */
    sw_span_tag("db.statement", "SELECT 1");
    char sw8[SW_SW8_MAX];
    cr_assert_eq(sw_inject(sw8, sizeof sw8, NULL, 0, NULL, 0), 0);
    sw_span_end();
    cr_assert_eq(sw_span_ref_end(entry), 0);
    sw_stats_t st;
    sw_stats(&st);
    cr_assert_eq(st.segments_finished, 0, "attached: not reported while attached");
    cr_assert_eq(sw_context_detach(&saved), 0);
    cr_assert_eq(sw_context_detach(&saved), SW_EINVAL, "detached twice");
    cr_assert_eq(sw_span_tag("own", "yes"), 0, "the thread's own span is active again");
    sw_span_end();
    st = agent_test_stop();
    cr_assert_eq(st.segments_reported, 2);
    decoded_segments_t d = agent_test_read(path);
    const Skywalking__V3__SegmentObject *req = segment_named(&d, "GET /evented");
    cr_assert_eq(req->n_spans, 2);
    cr_assert_str_eq(req->spans[1]->operationname, "SELECT");
    cr_assert_eq(req->spans[1]->parentspanid, 0);
    cr_assert_str_eq(tag_of(req->spans[1], "db.statement"), "SELECT 1");
    const Skywalking__V3__SegmentObject *own = segment_named(&d, "thread's own");
    cr_assert_eq(own->n_spans, 1);
    cr_assert_str_eq(tag_of(own->spans[0], "own"), "yes");
    cr_assert_str_neq(own->traceid, req->traceid);
    agent_test_free(&d);
}

/* Two workers pass contexts back and forth through a queue of one slot each way. */
typedef struct hop {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    sw_span_ref_t slot;
    int turn; /* 0: worker a, 1: worker b, 2: done */
    int hops;
} hop_t;

static void *hop_worker(void *arg)
{
    hop_t *h = arg;
    static _Atomic int ids;
    int me = atomic_fetch_add(&ids, 1) % 2;
    for (;;) {
        pthread_mutex_lock(&h->lock);
        while (h->turn != me && h->turn != 2) {
            pthread_cond_wait(&h->cond, &h->lock);
        }
        if (h->turn == 2) {
            pthread_mutex_unlock(&h->lock);
            return NULL;
        }
        sw_span_ref_t parent = h->slot;
        pthread_mutex_unlock(&h->lock);
        sw_span_ref_t child;
        cr_assert_eq(sw_span_ref_begin_local(parent, me == 0 ? "on a" : "on b", &child), 0);
        cr_assert_eq(sw_span_ref_end(child), 0);
        pthread_mutex_lock(&h->lock);
        h->turn = ++h->hops == 20 ? 2 : 1 - me;
        pthread_cond_broadcast(&h->cond);
        pthread_mutex_unlock(&h->lock);
    }
}

Test(request_context, a_context_hops_between_two_threads)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    hop_t h = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0};
    cr_assert_eq(sw_context_begin_entry("hopping", NULL, &h.slot), 0);
    pthread_t a, b;
    pthread_create(&a, NULL, hop_worker, &h);
    pthread_create(&b, NULL, hop_worker, &h);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    cr_assert_eq(sw_span_ref_end(h.slot), 0);
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_reported, 1);
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 1);
    cr_assert_eq(d.items[0]->n_spans, 21);
    for (size_t i = 1; i < 21; i++) {
        cr_assert_eq(d.items[0]->spans[i]->parentspanid, 0);
    }
    agent_test_free(&d);
}

/* Work handed to another thread continues the trace through a CrossThread reference. */
Test(request_context, capture_and_continue_across_contexts)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    sw_span_ref_t entry, work;
    cr_assert_eq(sw_context_begin_entry("GET /job", NULL, &entry), 0);
    sw_snapshot_t snap;
    cr_assert_eq(sw_span_ref_capture(entry, &snap), 0);
    cr_assert_eq(sw_context_begin_local("job", &work), 0);
    cr_assert_eq(sw_span_ref_continue(work, &snap), 0);
    cr_assert_eq(sw_span_ref_end(work), 0);
    cr_assert_eq(sw_span_ref_end(entry), 0);
    agent_test_stop();
    decoded_segments_t d = agent_test_read(path);
    const Skywalking__V3__SegmentObject *e = segment_named(&d, "GET /job");
    const Skywalking__V3__SegmentObject *j = segment_named(&d, "job");
    cr_assert_str_eq(j->traceid, e->traceid);
    cr_assert_eq(j->spans[0]->n_refs, 1);
    cr_assert_eq(j->spans[0]->refs[0]->reftype, SKYWALKING__V3__REF_TYPE__CrossThread);
    cr_assert_str_eq(j->spans[0]->refs[0]->parenttracesegmentid, e->tracesegmentid);
    agent_test_free(&d);
}

static void limit_3(sw_config_t *cfg)
{
    cfg->span_limit_per_segment = 3;
}

Test(request_context, the_span_limit_applies_to_handle_spans)
{
    const char *path = agent_test_path();
    agent_test_start(path, limit_3);
    sw_span_ref_t root, s[4];
    cr_assert_eq(sw_context_begin_local("root", &root), 0);
    cr_assert_eq(sw_span_ref_begin_local(root, "a", &s[0]), 0);
    cr_assert_eq(sw_span_ref_begin_local(root, "b", &s[1]), 0);
    cr_assert_eq(sw_span_ref_begin_local(root, "c", &s[2]), SW_ENOTRACED);
    cr_assert_eq(sw_span_ref_tag(s[2], "k", "v"), SW_ENOTRACED);
    cr_assert_eq(sw_span_ref_end(s[2]), 0, "a span past the limit ends as a no-op");
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(sw_span_ref_end(s[i]), 0);
    }
    cr_assert_eq(sw_span_ref_end(root), 0);
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.spans_limited, 1);
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 1);
    cr_assert_eq(d.items[0]->n_spans, 3);
    cr_assert(d.items[0]->issizelimited);
    agent_test_free(&d);
}

static void sample_none(sw_config_t *cfg)
{
    cfg->sample_n_per_3_secs = 1;
}

Test(request_context, unsampled_and_ignored_contexts_record_nothing_and_count)
{
    const char *path = agent_test_path();
    agent_test_start(path, sample_none);
    sw_span_ref_t first, second, child;
    cr_assert_eq(sw_context_begin_entry("first", NULL, &first), 0, "one per 3 s is sampled");
    cr_assert_eq(sw_context_begin_entry("second", NULL, &second), SW_ENOTRACED);
    cr_assert_eq(sw_span_ref_begin_exit(second, "x", "y:1", &child), SW_ENOTRACED);
    cr_assert_eq(sw_span_ref_tag(child, "k", "v"), SW_ENOTRACED);
    char sw8[SW_SW8_MAX];
    cr_assert_eq(sw_span_ref_inject(child, sw8, sizeof sw8, NULL, 0, NULL, 0), SW_ENOTRACED);
    sw_attach_t saved;
    cr_assert_eq(sw_context_attach(second, &saved), SW_ENOTRACED);
    sw_exit_span_begin("inside", "z:1"); /* no-op while attached to an unsampled context */
    cr_assert_eq(sw_span_tag("k", "v"), SW_ENOTRACED);
    sw_span_end();
    cr_assert_eq(sw_context_detach(&saved), 0);
    cr_assert_eq(sw_span_ref_end(child), 0);
    cr_assert_eq(sw_span_ref_end(second), 0);
    cr_assert_eq(sw_span_ref_end(first), 0);
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.traces_sampled_out, 1);
    cr_assert_eq(st.segments_reported, 1);
    cr_assert_eq(st.contexts_open, 0);
}

Test(request_context, hostile_use_is_refused_with_an_error_code)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    sw_span_ref_t none = {0}, entry, child, forged;
    cr_assert_eq(sw_span_ref_end(none), SW_EINVAL, "a reference no begin wrote");
    cr_assert_eq(sw_span_ref_tag(none, "k", "v"), SW_EINVAL);
    cr_assert_eq(sw_context_begin_entry("op", NULL, NULL), SW_EINVAL);
    cr_assert_eq(sw_context_attach(none, NULL), SW_EINVAL);
    cr_assert_eq(sw_context_detach(NULL), SW_EINVAL);
    cr_assert_eq(sw_context_begin_entry("hostile", NULL, &entry), 0);
    forged = entry;
    forged.id = 7; /* no such span */
    cr_assert_eq(sw_span_ref_end(forged), SW_EINVAL);
    cr_assert_eq(sw_span_ref_begin_exit(entry, "x", "y:1", &child), 0);
    cr_assert_eq(sw_span_ref_end(child), 0);
    cr_assert_eq(sw_span_ref_end(child), SW_ENOSPAN, "ended twice");
    cr_assert_eq(sw_span_ref_tag(child, "after", "end"), 0,
                 "an ended span of a live context may still be tagged, as in the Java agent");
    cr_assert_eq(sw_span_ref_end(entry), 0); /* the context ends */
    cr_assert_eq(sw_span_ref_end(entry), SW_ENOSPAN, "a span of an ended context");
    cr_assert_eq(sw_span_ref_tag(child, "k", "v"), SW_ENOSPAN);
    cr_assert_eq(sw_span_ref_begin_local(entry, "late", &child), SW_ENOSPAN);
    sw_attach_t saved;
    cr_assert_eq(sw_context_attach(entry, &saved), SW_ENOSPAN);
    /* The ended context's block is reused by the next trace: old references stay refused. */
    sw_span_ref_t next;
    cr_assert_eq(sw_context_begin_entry("next", NULL, &next), 0);
    cr_assert_eq(sw_span_ref_end(entry), SW_ENOSPAN);
    cr_assert_eq(sw_span_ref_end(next), 0);
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_reported, 2);
}

typedef struct busy_arg {
    sw_span_ref_t span;
    int rc;
} busy_arg_t;

static void *tag_from_other_thread(void *arg)
{
    busy_arg_t *b = arg;
    b->rc = sw_span_ref_tag(b->span, "from", "other");
    return NULL;
}

Test(request_context, a_context_attached_on_one_thread_is_busy_on_another)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    busy_arg_t b;
    cr_assert_eq(sw_context_begin_entry("attached", NULL, &b.span), 0);
    sw_attach_t saved;
    cr_assert_eq(sw_context_attach(b.span, &saved), 0);
    pthread_t t;
    pthread_create(&t, NULL, tag_from_other_thread, &b);
    pthread_join(t, NULL);
    cr_assert_eq(b.rc, SW_EBUSY);
    cr_assert_eq(sw_context_detach(&saved), 0);
    pthread_create(&t, NULL, tag_from_other_thread, &b);
    pthread_join(t, NULL);
    cr_assert_eq(b.rc, 0, "detached: another thread may use it");
    cr_assert_eq(sw_span_ref_end(b.span), 0);
    agent_test_stop();
}

Test(request_context, a_context_open_at_shutdown_is_counted_and_its_end_frees_it)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    sw_span_ref_t kept, done;
    cr_assert_eq(sw_context_begin_entry("kept open", NULL, &kept), 0);
    cr_assert_eq(sw_context_begin_entry("done", NULL, &done), 0);
    cr_assert_eq(sw_span_ref_end(done), 0);
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.contexts_open, 1, "the open context is counted, not lost silently");
    cr_assert_eq(st.segments_reported, 1);
    cr_assert_eq(sw_span_ref_tag(kept, "k", "v"), SW_ENOSPAN, "its run is over");
    cr_assert_eq(sw_span_ref_end(kept), SW_ENOSPAN, "ends, frees the block, reports nothing");
    sw_stats(&st);
    cr_assert_eq(st.segments_reported, 1);
}

Test(request_context, off_agent_hands_out_no_op_references)
{
    sw_span_ref_t s, c;
    cr_assert_eq(sw_context_begin_entry("off", NULL, &s), SW_ENOTRACED);
    cr_assert_eq(sw_span_ref_begin_local(s, "child", &c), SW_ENOTRACED);
    cr_assert_eq(sw_span_ref_end(c), 0);
    cr_assert_eq(sw_span_ref_end(s), 0);
}
