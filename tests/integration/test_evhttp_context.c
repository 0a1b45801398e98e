/*
 * test_evhttp_context.c - request contexts in a real event loop: a libevent evhttp server
 * traced with the context API holds 200 slow requests open at once on its one thread; each
 * waits on a libevent timer, then calls a second evhttp server (its own thread and loop, traced
 * with the context API too) asynchronously with libevent's evhttp client, as an exit span with
 * sw8 injected that ends in the callback completing the call; the reply to the client ends the
 * entry span. The client (libevent, 200 connections at once) sends a W3C traceparent on every
 * other request. Every request must yield one correct trace, read back from the file reporter.
 */
#include <sys/resource.h>

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

#include "eventloop/evl.h"
#include "test_agent_support.h"

enum { N = 200 };

/* The downstream server's counters (its thread; read after evl_server_stop). */
typedef struct downstream {
    int served;
    int errors;
} downstream_t;

static uint16_t down_port; /* written before the upstream server's thread starts */

static void downstream_handle(struct evhttp_request *req, void *arg)
{
    downstream_t *d = arg;
    const char *uri = evhttp_request_get_uri(req);
    sw_headers_t in = {.sw8 = evl_header(req, "sw8")};
    sw_span_ref_t entry;
    if (sw_context_begin_entry(uri, &in, &entry) != SW_OK) {
        d->errors++;
    }
    (void)sw_span_ref_set_layer(entry, SW_LAYER_HTTP);
    struct evbuffer *out = evbuffer_new();
    evbuffer_add_printf(out, "down %s", uri);
    evhttp_send_reply(req, 200, "OK", out);
    evbuffer_free(out);
    if (sw_span_ref_end(entry) != SW_OK) {
        d->errors++;
    }
    d->served++;
}

/* The downstream call completed (or failed: req NULL or status 0): ends the exit span, then
   replies to the client, which ends the entry span. */
static void downstream_done(struct evhttp_request *req, void *arg)
{
    evl_request_t *r = arg;
    int code = req != NULL ? evhttp_request_get_response_code(req) : 0;
    if (code != 200) {
        (void)sw_span_ref_set_error(r->exit, true);
    }
    if (sw_span_ref_end(r->exit) != SW_OK) {
        r->upstream->end_errors++;
    }
    evl_upstream_reply(r, code == 200 ? 200 : 502, code == 200 ? "ok" : "downstream failed");
}

/* The work of a request once its wait is over: the asynchronous downstream call. */
static void call_downstream(evl_request_t *r)
{
    char op[64], peer[32], sw8[1024];
    snprintf(op, sizeof op, "/down/%d", r->index);
    snprintf(peer, sizeof peer, "127.0.0.1:%u", down_port);
    if (sw_span_ref_begin_exit(r->entry, op, peer, &r->exit) != SW_OK ||
        sw_span_ref_inject(r->exit, sw8, sizeof sw8, NULL, 0, NULL, 0) != SW_OK) {
        r->upstream->begin_errors++;
        sw8[0] = '\0';
    }
    (void)sw_span_ref_set_layer(r->exit, SW_LAYER_HTTP);
    (void)sw_span_ref_set_component(r->exit, 2); /* HttpClient */
    struct event_base *base = evhttp_connection_get_base(evhttp_request_get_connection(r->req));
    struct evhttp_connection *conn = evhttp_connection_base_new(base, NULL, "127.0.0.1", down_port);
    struct evhttp_request *req = evhttp_request_new(downstream_done, r);
    if (conn == NULL || req == NULL) {
        if (req != NULL) {
            evhttp_request_free(req);
        }
        downstream_done(NULL, r);
        return;
    }
    evhttp_connection_free_on_completion(conn);
    evhttp_connection_set_timeout(conn, 120);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    (void)evhttp_add_header(h, "Host", peer);
    (void)evhttp_add_header(h, "Connection", "close");
    (void)evhttp_add_header(h, "sw8", sw8);
    if (evhttp_make_request(conn, req, EVHTTP_REQ_GET, op) != 0) {
        downstream_done(NULL, r); /* libevent freed req */
    }
}

static void use_w3c_too(sw_config_t *cfg)
{
    cfg->propagation = SW_PROPAGATION_SW8_TRACECONTEXT;
}

/* The client's traceparent for request i (even i only): trace id and parent id name i. */
static void client_traceparent(int i, char *trace_id, char *out, size_t len)
{
    snprintf(trace_id, 33, "4bf92f3577b34da6a3ce929d0e0e%04x", (unsigned)i);
    snprintf(out, len, "00-%s-00f067aa0ba9%04x-01", trace_id, (unsigned)i);
}

static const Skywalking__V3__SegmentObject *find_once(const decoded_segments_t *d, const char *op)
{
    const Skywalking__V3__SegmentObject *found = NULL;
    for (size_t k = 0; k < d->count; k++) {
        if (d->items[k]->n_spans > 0 && strcmp(d->items[k]->spans[0]->operationname, op) == 0) {
            cr_assert_null(found, "two segments begin with %s", op);
            found = d->items[k];
        }
    }
    cr_assert_not_null(found, "no segment begins with %s", op);
    return found;
}

/* Checks the two segments of request i: the upstream's entry and exit, the downstream's entry
   whose ref names exactly the upstream's segment and exit span. */
static void check_request(const decoded_segments_t *d, int i, const char *down_peer)
{
    char up_op[32], down_op[32], trace_id[33], tp[64];
    snprintf(up_op, sizeof up_op, "/up/%d", i);
    snprintf(down_op, sizeof down_op, "/down/%d", i);
    const Skywalking__V3__SegmentObject *up = find_once(d, up_op);
    const Skywalking__V3__SegmentObject *down = find_once(d, down_op);

    cr_assert_eq(up->n_spans, 2, "%s: %zu spans, expected its entry and exit only", up_op,
                 up->n_spans);
    const Skywalking__V3__SpanObject *entry = up->spans[0], *exit = up->spans[1];
    if (exit->spantype == SKYWALKING__V3__SPAN_TYPE__Entry) { /* spans are in end order */
        entry = up->spans[1];
        exit = up->spans[0];
    }
    cr_assert_eq(entry->spantype, SKYWALKING__V3__SPAN_TYPE__Entry, "%s", up_op);
    cr_assert_str_eq(entry->operationname, up_op);
    cr_assert_eq(entry->spanid, 0, "%s", up_op);
    cr_assert_eq(entry->parentspanid, -1, "%s", up_op);
    cr_assert_eq(exit->spantype, SKYWALKING__V3__SPAN_TYPE__Exit, "%s", up_op);
    cr_assert_str_eq(exit->operationname, down_op, "a span of another request in %s", up_op);
    cr_assert_eq(exit->spanid, 1, "%s", up_op);
    cr_assert_eq(exit->parentspanid, 0, "%s: the exit's parent is the entry", up_op);
    cr_assert_str_eq(exit->peer, down_peer);
    cr_assert_not(exit->iserror, "%s: the downstream call failed", up_op);
    if (i % 2 == 0) {
        client_traceparent(i, trace_id, tp, sizeof tp);
        cr_assert_str_eq(up->traceid, trace_id, "%s continues the client's traceparent", up_op);
    }

    cr_assert_eq(down->n_spans, 1, "%s: %zu spans", down_op, down->n_spans);
    const Skywalking__V3__SpanObject *dentry = down->spans[0];
    cr_assert_eq(dentry->spantype, SKYWALKING__V3__SPAN_TYPE__Entry);
    cr_assert_eq(dentry->n_refs, 1, "%s: one ref to its caller", down_op);
    const Skywalking__V3__SegmentReference *ref = dentry->refs[0];
    cr_assert_eq(ref->reftype, SKYWALKING__V3__REF_TYPE__CrossProcess);
    cr_assert_str_eq(down->traceid, up->traceid, "%s: the caller's trace", down_op);
    cr_assert_str_eq(ref->traceid, up->traceid);
    cr_assert_str_eq(ref->parenttracesegmentid, up->tracesegmentid,
                     "%s: the ref names segment %s, the caller's is %s", down_op,
                     ref->parenttracesegmentid, up->tracesegmentid);
    cr_assert_eq(ref->parentspanid, exit->spanid, "%s: the ref names span %d, the exit is %d",
                 down_op, ref->parentspanid, exit->spanid);
    cr_assert_str_eq(ref->parentendpoint, up_op);
    cr_assert_str_eq(ref->networkaddressusedatpeer, down_peer);
}

/* At the peak every request holds four sockets (client and server ends upstream and
   downstream): raise the soft descriptor limit towards the hard one when it is below that. */
static void descriptors_for_peak(void)
{
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rlim_t need = 4 * N + 64;
    if (rl.rlim_cur < need) {
        rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
        cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    }
    cr_assert_geq(rl.rlim_cur, need, "%d requests need %llu descriptors; the hard limit is %llu", N,
                  (unsigned long long)need, (unsigned long long)rl.rlim_max);
}

Test(evhttp_context, interleaved_slow_requests_yield_one_trace_each, .timeout = 300)
{
    descriptors_for_peak();
    const char *path = agent_test_path();
    agent_test_start(path, use_w3c_too);
    char err[256] = "";

    downstream_t down = {0};
    evl_server_t *down_server = evl_server_start(downstream_handle, &down, err, sizeof err);
    cr_assert_not_null(down_server, "downstream server: %s", err);
    down_port = evl_server_port(down_server);

    evl_upstream_t up;
    cr_assert(evl_upstream_init(&up, N, call_downstream, NULL));
    evl_server_t *up_server = evl_server_start(evl_upstream_handle, &up, err, sizeof err);
    cr_assert_not_null(up_server, "upstream server: %s", err);

    static evl_client_req_t reqs[N];
    char trace_id[33];
    for (int i = 0; i < N; i++) {
        snprintf(reqs[i].path, sizeof reqs[i].path, "/up/%d", i);
        reqs[i].header_name = NULL;
        if (i % 2 == 0) {
            reqs[i].header_name = "traceparent";
            client_traceparent(i, trace_id, reqs[i].header_value, sizeof reqs[i].header_value);
        }
    }
    int answered = evl_client_run(evl_server_port(up_server), reqs, N, 120000);
    evl_server_stop(up_server);
    evl_server_stop(down_server);
    cr_assert_eq(answered, N,
                 "only %d of %d requests answered within 120 s (upstream: %d arrived, %d "
                 "replied; downstream served %d)",
                 answered, N, up.arrived, up.replied, down.served);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(reqs[i].status, 200, "%s: status %d, body '%s'", reqs[i].path, reqs[i].status,
                     reqs[i].body);
    }
    cr_assert_eq(up.max_in_flight, N, "all %d requests open at once on the loop's thread", N);
    cr_assert_eq(up.bad_requests + up.begin_errors + up.end_errors + down.errors, 0,
                 "bad %d, begin errors %d, end errors %d, downstream errors %d", up.bad_requests,
                 up.begin_errors, up.end_errors, down.errors);
    evl_upstream_free(&up);

    sw_stats_t st = agent_test_stop(); /* asserts finished = reported + dropped + failed */
    cr_assert_eq(st.segments_dropped, 0);
    cr_assert_eq(st.segments_failed, 0);
    cr_assert_eq(st.segments_reported, 2 * N, "reported %llu segments, expected %d",
                 (unsigned long long)st.segments_reported, 2 * N);
    cr_assert_eq(st.contexts_open, 0);

    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 2 * N);
    char down_peer[32];
    snprintf(down_peer, sizeof down_peer, "127.0.0.1:%u", down_port);
    for (int i = 0; i < N; i++) {
        check_request(&d, i, down_peer);
    }
    /* Traces are distinct: each request's trace id once upstream (and once downstream). */
    for (size_t a = 0; a < d.count; a++) {
        int same = 0;
        for (size_t b = 0; b < d.count; b++) {
            same += strcmp(d.items[a]->traceid, d.items[b]->traceid) == 0;
        }
        cr_assert_eq(same, 2, "trace %s has %d segments, expected 2", d.items[a]->traceid, same);
    }
    agent_test_free(&d);
}
