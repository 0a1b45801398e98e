/*
 * evl.h - libevent helpers of the event-loop tests (tests/eventloop.cmake): an evhttp server on
 * its own thread and event loop, an upstream request handler traced with request contexts that
 * holds many requests open on that one thread, and a client that sends many concurrent requests
 * from one event loop.
 *
 * Threads: an evl_server_t's loop, its handler and everything the handler keeps run on the
 * server's thread only; evl_server_start and evl_server_stop (which joins the thread) order
 * them with the caller's thread, which may read the handler's state after the stop.
 */
#ifndef EVL_H
#define EVL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/http.h>

#include "skywalking.h"

typedef struct evl_server evl_server_t;

/* Called on the server's thread for every request. */
typedef void (*evl_handler_fn)(struct evhttp_request *req, void *arg);

/*
 * Starts an evhttp server on 127.0.0.1 (a free port) with a new event_base, and a thread that
 * runs its loop. Returns the server, or NULL with a message in err.
 */
evl_server_t *evl_server_start(evl_handler_fn handler, void *arg, char *err, size_t errlen);

uint16_t evl_server_port(const evl_server_t *s);

/* Stops the loop (through a pipe the loop watches, so from any thread) and joins the thread,
   within 30 s or the process aborts with a message; then frees the server. */
void evl_server_stop(evl_server_t *s);

/*
 * One request of an evl_upstream_t: the client's evhttp request and the request's context,
 * kept by the upstream between the callbacks that serve it.
 */
typedef struct evl_request {
    struct evhttp_request *req;
    struct evl_upstream *upstream;
    int index;           /* the number in the path /up/<index> */
    sw_span_ref_t entry; /* the request's entry span (sw_context_begin_entry) */
    sw_span_ref_t exit;  /* for the work hook */
    struct event *timer; /* the request's wait */
    char operation[64];  /* the path */
} evl_request_t;

/*
 * The upstream server's handler: each request /up/<i> becomes a context with an entry span
 * from its sw8 / traceparent headers, and is held until `expected` requests arrived (so that
 * all of them are open at once on the loop's thread); then each waits on its own timer
 * (0..19 ms, in scattered order) and runs `work`, which must call evl_upstream_reply, now or
 * in a later callback. The reply ends the entry span after sending.
 */
typedef struct evl_upstream {
    int expected;
    void (*work)(evl_request_t *r);
    void *work_arg;
    /* Kept by the handler (server thread). */
    evl_request_t **held;
    int arrived;
    int in_flight;
    int max_in_flight; /* the most requests open at once */
    int replied;
    int bad_requests; /* requests with another path, or past `expected` */
    int begin_errors; /* sw_context_begin_entry != SW_OK */
    int end_errors;   /* sw_span_ref_end != SW_OK on an entry span */
} evl_upstream_t;

/* Initialises *u for `expected` requests; returns false when out of memory. */
bool evl_upstream_init(evl_upstream_t *u, int expected, void (*work)(evl_request_t *),
                       void *work_arg);
void evl_upstream_free(evl_upstream_t *u);

/* The evl_handler_fn of an upstream (arg: the evl_upstream_t). */
void evl_upstream_handle(struct evhttp_request *req, void *arg);

/* Sends the reply (status, body) to the client, ends the request's entry span, frees r. */
void evl_upstream_reply(evl_request_t *r, int status, const char *body);

/* The value of an incoming request header, or NULL. */
const char *evl_header(struct evhttp_request *req, const char *name);

/* One request of evl_client_run: the path, an optional header, and the answer. */
typedef struct evl_client_req {
    char path[64];
    const char *header_name; /* NULL: none */
    char header_value[128];
    int status;    /* HTTP status of the answer, 0 for none */
    char body[64]; /* the answer's body (cut) */
} evl_client_req_t;

/*
 * Sends every request at once, each on its own connection, to 127.0.0.1:port from an event
 * loop on the calling thread, and waits at most timeout_ms for all answers. Returns the number
 * of requests answered (any status).
 */
int evl_client_run(uint16_t port, evl_client_req_t *reqs, int n, int timeout_ms);

#endif /* EVL_H */
