/*
 * evhttp_server.c - a libevent evhttp server traced with request contexts.
 *
 * One thread, one event loop, many requests at once: each request keeps its spans in its own
 * state (struct request), never on the thread, so its callbacks may interleave with every other
 * request's. For each request to any path but /leaf, the server
 *   1. begins a context with an entry span that continues the caller's sw8 or traceparent
 *      headers (sw_context_begin_entry),
 *   2. calls http://<downstream>/leaf asynchronously with libevent's evhttp client, as an exit
 *      span under the entry span with the sw8 header injected (sw_span_ref_begin_exit,
 *      sw_span_ref_inject),
 *   3. ends the exit span in the callback that completes the call, replies to the caller with
 *      what the call returned, and ends the entry span once the reply is sent: the context's
 *      last span, so its segment goes to the reporter.
 * /leaf answers at once with an entry span only. By default the downstream is the server
 * itself, so one request makes two segments of one trace.
 *
 * Usage: sw_evhttp_server [port [downstream host:port]]      (default 8080, itself)
 *     SW_AGENT_NAME=evhttp-demo ./build/agent/examples/sw_evhttp_server 8080 &
 *     curl http://127.0.0.1:8080/hello
 *     kill %1                      (SIGINT or SIGTERM: the agent flushes and stops)
 *     ./build/agent/tools/swtrace skywalking-segments.bin
 * SW_* environment variables configure the agent as usual (file reporter by default).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "skywalking.h"

/* Component ids of SkyWalking's component-libraries.yml (OAP 10.x). */
#define COMPONENT_HTTPCLIENT 2  /* "HttpClient": the outgoing call */
#define COMPONENT_HTTP       49 /* "http": the HTTP server the entry spans stand for */

static struct event_base *base;
static char down_host[256] = "127.0.0.1";
static int down_port;

/* A request between its callbacks: the caller's request and the two spans. */
typedef struct request {
    struct evhttp_request *req;
    sw_span_ref_t entry;
    sw_span_ref_t exit;
} request_t;

static const char *header(struct evhttp_request *req, const char *name)
{
    return evhttp_find_header(evhttp_request_get_input_headers(req), name);
}

/* A context whose entry span continues the caller's headers (NULL members are absent;
   SW_AGENT_PROPAGATION decides which count). An untraced request gets references on which
   every call is a harmless no-op, so nothing below needs a special case. */
static sw_span_ref_t begin_entry(struct evhttp_request *req)
{
    sw_headers_t in = {
        .sw8 = header(req, "sw8"),
        .sw8_correlation = header(req, "sw8-correlation"),
        .sw8_x = header(req, "sw8-x"),
        .traceparent = header(req, "traceparent"),
        .tracestate = header(req, "tracestate"),
    };
    sw_span_ref_t entry;
    (void)sw_context_begin_entry(evhttp_request_get_uri(req), &in, &entry);
    (void)sw_span_ref_set_component(entry, COMPONENT_HTTP);
    (void)sw_span_ref_set_layer(entry, SW_LAYER_HTTP);
    return entry;
}

/* Sends the reply, then ends the entry span (the tag goes on before the end). */
static void reply(struct evhttp_request *req, sw_span_ref_t entry, int status, const char *body)
{
    char code[16];
    snprintf(code, sizeof code, "%d", status);
    (void)sw_span_ref_tag(entry, "http.status_code", code);
    if (status >= 500) {
        (void)sw_span_ref_set_error(entry, true);
    }
    struct evbuffer *out = evbuffer_new();
    if (out != NULL) {
        (void)evbuffer_add_printf(out, "%s\n", body);
    }
    evhttp_send_reply(req, status, status < 400 ? "OK" : "Error", out);
    if (out != NULL) {
        evbuffer_free(out);
    }
    (void)sw_span_ref_end(entry);
}

/* The downstream call completed (req NULL or status 0: it failed). */
static void call_done(struct evhttp_request *req, void *arg)
{
    request_t *r = arg;
    int status = req != NULL ? evhttp_request_get_response_code(req) : 0;
    char code[16];
    snprintf(code, sizeof code, "%d", status);
    (void)sw_span_ref_tag(r->exit, "http.status_code", code);
    (void)sw_span_ref_set_error(r->exit, status != 200);
    (void)sw_span_ref_end(r->exit);
    reply(r->req, r->entry, status == 200 ? 200 : 502,
          status == 200 ? "hello from the leaf" : "the downstream call failed");
    free(r);
}

static void handle(struct evhttp_request *req, void *arg)
{
    (void)arg;
    if (strcmp(evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req)), "/leaf") == 0) {
        reply(req, begin_entry(req), 200, "leaf");
        return;
    }
    request_t *r = calloc(1, sizeof *r);
    if (r == NULL) {
        evhttp_send_error(req, 503, "out of memory");
        return;
    }
    r->req = req;
    r->entry = begin_entry(req);

    char peer[300], sw8[SW_SW8_MAX] = "";
    snprintf(peer, sizeof peer, "%s:%d", down_host, down_port);
    (void)sw_span_ref_begin_exit(r->entry, "/leaf", peer, &r->exit);
    (void)sw_span_ref_set_component(r->exit, COMPONENT_HTTPCLIENT);
    (void)sw_span_ref_set_layer(r->exit, SW_LAYER_HTTP);
    (void)sw_span_ref_inject(r->exit, sw8, sizeof sw8, NULL, 0, NULL, 0);

    struct evhttp_connection *conn =
        evhttp_connection_base_new(base, NULL, down_host, (ev_uint16_t)down_port);
    struct evhttp_request *call = evhttp_request_new(call_done, r);
    if (conn == NULL || call == NULL) {
        if (call != NULL) {
            evhttp_request_free(call);
        }
        call_done(NULL, r);
        return;
    }
    evhttp_connection_free_on_completion(conn);
    struct evkeyvalq *h = evhttp_request_get_output_headers(call);
    (void)evhttp_add_header(h, "Host", peer);
    (void)evhttp_add_header(h, "Connection", "close");
    if (sw8[0] != '\0') {
        (void)evhttp_add_header(h, "sw8", sw8);
    }
    if (evhttp_make_request(conn, call, EVHTTP_REQ_GET, "/leaf") != 0) {
        call_done(NULL, r); /* libevent freed `call` */
    }
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)sig, (void)what, (void)arg;
    (void)event_base_loopbreak(base);
}

int main(int argc, char **argv)
{
    int port = argc > 1 ? atoi(argv[1]) : 8080;
    down_port = port;
    if (argc > 2 && sscanf(argv[2], "%255[^:]:%d", down_host, &down_port) != 2) {
        down_port = 0;
    }
    if (port <= 0 || port > 65535 || down_port <= 0 || down_port > 65535 || argc > 3) {
        fprintf(stderr, "usage: %s [port [downstream host:port]]\n", argv[0]);
        return 2;
    }
    sw_config_t cfg;
    char err[512];
    sw_config_init(&cfg);
    if (sw_config_load(&cfg, err, sizeof err) != 0) {
        fprintf(stderr, "sw_evhttp_server: %s; tracing stays off\n", err);
    } else if (sw_init(&cfg) != 0) {
        fprintf(stderr, "sw_evhttp_server: the agent did not start; the server runs untraced\n");
    }

    base = event_base_new();
    struct evhttp *http = base != NULL ? evhttp_new(base) : NULL;
    if (http == NULL || evhttp_bind_socket(http, "127.0.0.1", (ev_uint16_t)port) != 0) {
        fprintf(stderr, "sw_evhttp_server: cannot listen on 127.0.0.1:%d\n", port);
        return 1;
    }
    evhttp_set_gencb(http, handle, NULL);
    struct event *sigint = evsignal_new(base, SIGINT, on_signal, NULL);
    struct event *sigterm = evsignal_new(base, SIGTERM, on_signal, NULL);
    if (sigint == NULL || sigterm == NULL || event_add(sigint, NULL) != 0 ||
        event_add(sigterm, NULL) != 0) {
        fprintf(stderr, "sw_evhttp_server: cannot watch SIGINT/SIGTERM\n");
        return 1;
    }
    printf("sw_evhttp_server: listening on 127.0.0.1:%d, downstream %s:%d\n", port, down_host,
           down_port);
    fflush(stdout);
    (void)event_base_dispatch(base);

    event_free(sigint);
    event_free(sigterm);
    evhttp_free(http);
    event_base_free(base);
    sw_shutdown(); /* reports every finished segment */
    sw_stats_t st;
    sw_stats(&st);
    printf("segments: finished=%llu reported=%llu dropped=%llu failed=%llu open=%llu\n",
           (unsigned long long)st.segments_finished, (unsigned long long)st.segments_reported,
           (unsigned long long)st.segments_dropped, (unsigned long long)st.segments_failed,
           (unsigned long long)st.contexts_open);
    return 0;
}
