/*
 * evl.c - see evl.h.
 */
#include "evl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

struct evl_server {
    struct event_base *base;
    struct evhttp *http;
    struct event *stop_event;
    int stop_pipe[2];
    uint16_t port;
    pthread_t thread;
};

static void *server_main(void *arg)
{
    evl_server_t *s = arg;
    (void)event_base_dispatch(s->base);
    return NULL;
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    (void)event_base_loopbreak(arg);
}

/* A listening socket on 127.0.0.1 with room for every test connection in its backlog (evhttp's
   own bind listens with 128, and a test opens hundreds at once). */
static int listen_loopback(uint16_t *port, char *err, size_t errlen)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 1024) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        snprintf(err, errlen, "listening on 127.0.0.1: %s", strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

evl_server_t *evl_server_start(evl_handler_fn handler, void *arg, char *err, size_t errlen)
{
    evl_server_t *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->stop_pipe[0] = s->stop_pipe[1] = -1;
    int fd = -1;
    s->base = event_base_new();
    s->http = s->base != NULL ? evhttp_new(s->base) : NULL;
    if (s->http == NULL) {
        snprintf(err, errlen, "event_base_new / evhttp_new failed");
        goto fail;
    }
    fd = listen_loopback(&s->port, err, errlen);
    if (fd < 0) {
        goto fail;
    }
    if (evhttp_accept_socket_with_handle(s->http, fd) == NULL) {
        snprintf(err, errlen, "evhttp_accept_socket_with_handle failed");
        close(fd);
        goto fail;
    }
    evhttp_set_timeout(s->http, 120);
    evhttp_set_gencb(s->http, handler, arg);
    if (pipe(s->stop_pipe) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    s->stop_event = event_new(s->base, s->stop_pipe[0], EV_READ, on_stop, s->base);
    if (s->stop_event == NULL || event_add(s->stop_event, NULL) != 0) {
        snprintf(err, errlen, "event_new for the stop pipe failed");
        goto fail;
    }
    int rc = pthread_create(&s->thread, NULL, server_main, s);
    if (rc != 0) {
        snprintf(err, errlen, "pthread_create: %s", strerror(rc));
        goto fail;
    }
    return s;
fail:
    if (s->stop_event != NULL) {
        event_free(s->stop_event);
    }
    for (int i = 0; i < 2; i++) {
        if (s->stop_pipe[i] >= 0) {
            close(s->stop_pipe[i]);
        }
    }
    if (s->http != NULL) {
        evhttp_free(s->http);
    }
    if (s->base != NULL) {
        event_base_free(s->base);
    }
    free(s);
    return NULL;
}

uint16_t evl_server_port(const evl_server_t *s)
{
    return s->port;
}

void evl_server_stop(evl_server_t *s)
{
    if (s == NULL) {
        return;
    }
    if (write(s->stop_pipe[1], "x", 1) != 1) {
        fprintf(stderr, "evl_server_stop: write to the stop pipe: %s\n", strerror(errno));
        abort();
    }
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 30;
    int rc = pthread_timedjoin_np(s->thread, NULL, &deadline);
    if (rc != 0) {
        fprintf(stderr, "evl_server_stop: the server's loop did not stop within 30 s (%s)\n",
                strerror(rc));
        abort();
    }
    event_free(s->stop_event);
    close(s->stop_pipe[0]);
    close(s->stop_pipe[1]);
    evhttp_free(s->http);
    event_base_free(s->base);
    free(s);
}

const char *evl_header(struct evhttp_request *req, const char *name)
{
    return evhttp_find_header(evhttp_request_get_input_headers(req), name);
}

/* ------------------------------------------------------------------------------------------ */
/* The upstream handler                                                                        */
/* ------------------------------------------------------------------------------------------ */

bool evl_upstream_init(evl_upstream_t *u, int expected, void (*work)(evl_request_t *),
                       void *work_arg)
{
    *u = (evl_upstream_t){.expected = expected, .work = work, .work_arg = work_arg};
    u->held = calloc((size_t)expected, sizeof *u->held);
    return u->held != NULL;
}

void evl_upstream_free(evl_upstream_t *u)
{
    for (int i = 0; i < u->expected; i++) {
        free(u->held[i]);
    }
    free(u->held);
    u->held = NULL;
}

static void on_wait_over(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    evl_request_t *r = arg;
    r->upstream->work(r);
}

/* Every request arrived: each waits on its own timer, 0..19 ms in scattered order, so that
   their callbacks interleave on this thread in another order than they arrived. */
static void release_all(evl_upstream_t *u, struct event_base *base)
{
    for (int i = 0; i < u->expected; i++) {
        evl_request_t *r = u->held[i];
        r->timer = evtimer_new(base, on_wait_over, r);
        struct timeval tv = {0, (long)((i * 7) % 20) * 1000};
        if (r->timer == NULL || evtimer_add(r->timer, &tv) != 0) {
            u->begin_errors++;
            evl_upstream_reply(r, 500, "no timer");
        }
    }
}

void evl_upstream_handle(struct evhttp_request *req, void *arg)
{
    evl_upstream_t *u = arg;
    int i = -1;
    char tail;
    if (sscanf(evhttp_request_get_uri(req), "/up/%d%c", &i, &tail) != 1 || i < 0 ||
        i >= u->expected || u->held[i] != NULL) {
        u->bad_requests++;
        evhttp_send_error(req, 400, "expected /up/<index>, once each");
        return;
    }
    evl_request_t *r = calloc(1, sizeof *r);
    if (r == NULL) {
        u->bad_requests++;
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    r->req = req;
    r->upstream = u;
    r->index = i;
    snprintf(r->operation, sizeof r->operation, "/up/%d", i);
    sw_headers_t in = {
        .sw8 = evl_header(req, "sw8"),
        .sw8_correlation = evl_header(req, "sw8-correlation"),
        .sw8_x = evl_header(req, "sw8-x"),
        .traceparent = evl_header(req, "traceparent"),
        .tracestate = evl_header(req, "tracestate"),
    };
    if (sw_context_begin_entry(r->operation, &in, &r->entry) != SW_OK) {
        u->begin_errors++;
    }
    (void)sw_span_ref_set_layer(r->entry, SW_LAYER_HTTP);
    (void)sw_span_ref_set_component(r->entry, 49); /* http */
    u->held[i] = r;
    u->arrived++;
    if (++u->in_flight > u->max_in_flight) {
        u->max_in_flight = u->in_flight;
    }
    if (u->arrived == u->expected) {
        release_all(u, evhttp_connection_get_base(evhttp_request_get_connection(req)));
    }
}

void evl_upstream_reply(evl_request_t *r, int status, const char *body)
{
    evl_upstream_t *u = r->upstream;
    char code[16];
    snprintf(code, sizeof code, "%d", status);
    (void)sw_span_ref_tag(r->entry, "http.status_code", code);
    if (status >= 500) {
        (void)sw_span_ref_set_error(r->entry, true);
    }
    struct evbuffer *out = evbuffer_new();
    if (out != NULL) {
        (void)evbuffer_add(out, body, strlen(body));
    }
    evhttp_send_reply(r->req, status, status == 200 ? "OK" : "Error", out);
    if (out != NULL) {
        evbuffer_free(out);
    }
    if (sw_span_ref_end(r->entry) != SW_OK) {
        u->end_errors++;
    }
    r->req = NULL;
    if (r->timer != NULL) {
        event_free(r->timer); /* fired (not persistent): freeing it in its callback is allowed */
        r->timer = NULL;
    }
    u->in_flight--;
    u->replied++;
}

/* ------------------------------------------------------------------------------------------ */
/* The client                                                                                  */
/* ------------------------------------------------------------------------------------------ */

typedef struct client_run {
    struct event_base *base;
    int n;
    int answered;
} client_run_t;

typedef struct client_call {
    evl_client_req_t *req;
    client_run_t *run;
    struct evhttp_connection *conn;
} client_call_t;

static void on_answer(struct evhttp_request *req, void *arg)
{
    client_call_t *c = arg;
    if (req != NULL) {
        c->req->status = evhttp_request_get_response_code(req);
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        ev_ssize_t got = evbuffer_copyout(in, c->req->body, sizeof c->req->body - 1);
        c->req->body[got > 0 ? got : 0] = '\0';
    }
    if (++c->run->answered == c->run->n) {
        (void)event_base_loopbreak(c->run->base);
    }
}

int evl_client_run(uint16_t port, evl_client_req_t *reqs, int n, int timeout_ms)
{
    client_run_t run = {.base = event_base_new(), .n = n};
    client_call_t *calls = calloc((size_t)n, sizeof *calls);
    if (run.base == NULL || calls == NULL) {
        fprintf(stderr, "evl_client_run: out of memory\n");
        free(calls);
        if (run.base != NULL) {
            event_base_free(run.base);
        }
        return 0;
    }
    for (int i = 0; i < n; i++) {
        client_call_t *c = &calls[i];
        c->req = &reqs[i];
        c->run = &run;
        reqs[i].status = 0;
        reqs[i].body[0] = '\0';
        c->conn = evhttp_connection_base_new(run.base, NULL, "127.0.0.1", port);
        struct evhttp_request *req = evhttp_request_new(on_answer, c);
        if (c->conn == NULL || req == NULL) {
            fprintf(stderr, "evl_client_run: request %d: out of memory\n", i);
            if (req != NULL) {
                evhttp_request_free(req);
            }
            continue;
        }
        evhttp_connection_set_timeout(c->conn, 120);
        struct evkeyvalq *h = evhttp_request_get_output_headers(req);
        (void)evhttp_add_header(h, "Host", "127.0.0.1");
        (void)evhttp_add_header(h, "Connection", "close");
        if (reqs[i].header_name != NULL) {
            (void)evhttp_add_header(h, reqs[i].header_name, reqs[i].header_value);
        }
        if (evhttp_make_request(c->conn, req, EVHTTP_REQ_GET, reqs[i].path) != 0) {
            fprintf(stderr, "evl_client_run: request %d could not be sent\n", i);
        }
    }
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    (void)event_base_loopexit(run.base, &tv);
    (void)event_base_dispatch(run.base);
    for (int i = 0; i < n; i++) {
        if (calls[i].conn != NULL) {
            evhttp_connection_free(calls[i].conn);
        }
    }
    event_base_free(run.base);
    free(calls);
    return run.answered;
}
