/*
 * demo.c - a small traced "orders" service.
 *
 * Two server threads handle N requests (default 40). Every third request arrives from a
 * pretend upstream gateway with an `sw8` header (created here with sw_inject, as a real
 * upstream agent would), so that its trace continues across the "process" boundary. Each
 * request records an entry span, a local span, a database exit span with db tags, work handed
 * to a worker thread (sw_capture / sw_continue), and an HTTP exit span to a downstream service
 * with the outgoing headers from sw_inject; some requests fail and carry an error log.
 *
 * Segments go to the default file reporter. Read them with:
 *     ./build/agent/tools/swtrace skywalking-segments.bin
 *
 * Usage: sw_demo [requests]     (SW_* environment variables configure the agent as usual)
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "skywalking.h"

#define SERVER_THREADS 2
/* Component ids of SkyWalking's component-libraries.yml (OAP 10.x). */
#define COMPONENT_HTTPCLIENT 2  /* "HttpClient": the outgoing HTTP calls */
#define COMPONENT_POSTGRESQL 22 /* "PostgreSQL": the database call */
#define COMPONENT_HTTP       49 /* "http": the HTTP server the entry spans stand for */

typedef struct request {
    int id;
    char sw8[SW_SW8_MAX];
    char correlation[SW_CORRELATION_HEADER_MAX];
    char sw8_x[SW_SW8_X_MAX];
    bool from_gateway;
} request_t;

static request_t *requests;
static int request_count;
static atomic_int next_request;

static void work_ms(int ms)
{
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* The pretend upstream: a gateway's entry span calling us through an exit span. */
static void gateway_call(request_t *req)
{
    char op[64];
    snprintf(op, sizeof op, "GET /orders/%d", req->id);
    sw_entry_span_begin("gateway: POST /checkout", NULL);
    sw_span_set_layer(SW_LAYER_HTTP);
    sw_span_set_component(COMPONENT_HTTP);
    sw_correlation_set("tenant", req->id % 2 ? "acme" : "globex");
    sw_exit_span_begin(op, "orders.demo:8080");
    sw_span_set_layer(SW_LAYER_HTTP);
    sw_span_set_component(COMPONENT_HTTPCLIENT);
    if (sw_inject(req->sw8, sizeof req->sw8, req->correlation, sizeof req->correlation, req->sw8_x,
                  sizeof req->sw8_x) == 0) {
        req->from_gateway = true;
    }
    sw_span_end();
    sw_span_end();
}

/* The worker side of a request: continues the captured trace on another thread. */
static void *render_worker(void *arg)
{
    const sw_snapshot_t *snap = arg;
    sw_local_span_begin("orders.render");
    sw_continue(snap);
    sw_span_tag("template", "order.html");
    work_ms(1);
    sw_span_end();
    return NULL;
}

static void handle(request_t *req)
{
    char op[64], url[96], statement[96];
    snprintf(op, sizeof op, "GET /orders/%d", req->id);
    snprintf(url, sizeof url, "http://orders.demo:8080/orders/%d", req->id);
    sw_entry_span_begin_headers(op, req->from_gateway ? req->sw8 : NULL,
                                req->from_gateway ? req->correlation : NULL,
                                req->from_gateway ? req->sw8_x : NULL);
    sw_span_set_layer(SW_LAYER_HTTP);
    sw_span_set_component(COMPONENT_HTTP);
    sw_span_tag("http.method", "GET");
    sw_span_tag("url", url);

    sw_local_span_begin("orders.validate");
    work_ms(1);
    sw_span_end();

    sw_exit_span_begin("PostgreSQL/SELECT", "postgres.demo:5432");
    sw_span_set_layer(SW_LAYER_DATABASE);
    sw_span_set_component(COMPONENT_POSTGRESQL);
    snprintf(statement, sizeof statement, "SELECT * FROM orders WHERE id = %d", req->id);
    sw_span_tag("db.type", "sql");
    sw_span_tag("db.instance", "orders");
    sw_span_tag("db.statement", statement);
    work_ms(2);
    sw_span_end();

    sw_snapshot_t snap;
    sw_capture(&snap);
    pthread_t worker;
    if (pthread_create(&worker, NULL, render_worker, &snap) == 0) {
        pthread_join(worker, NULL);
    }

    char sw8[SW_SW8_MAX], corr[SW_CORRELATION_HEADER_MAX], x[SW_SW8_X_MAX];
    sw_exit_span_begin("POST /inventory/reserve", "inventory.demo:8080");
    sw_span_set_layer(SW_LAYER_HTTP);
    sw_span_set_component(COMPONENT_HTTPCLIENT);
    sw_span_tag("http.method", "POST");
    if (sw_inject(sw8, sizeof sw8, corr, sizeof corr, x, sizeof x) == 0) {
        sw_span_tag("demo.sent_sw8_bytes", strlen(sw8) > 0 ? "yes" : "no");
    }
    work_ms(1);
    if (req->id % 7 == 3) {
        sw_span_set_error(true);
        sw_span_tag("http.status_code", "504");
        sw_kv_t log[] = {{"event", "error"}, {"message", "inventory timed out"}};
        sw_span_log(log, 2);
    }
    sw_span_end();
    sw_span_end(); /* the entry span: the segment is finished and queued */
}

static void *server(void *arg)
{
    (void)arg;
    for (;;) {
        int i = atomic_fetch_add_explicit(&next_request, 1, memory_order_relaxed);
        if (i >= request_count) {
            return NULL;
        }
        handle(&requests[i]);
    }
}

int main(int argc, char **argv)
{
    request_count = argc > 1 ? atoi(argv[1]) : 40;
    if (request_count <= 0 || request_count > 1000000) {
        fprintf(stderr, "usage: %s [requests (1..1000000)]\n", argv[0]);
        return 2;
    }
    sw_config_t cfg;
    char err[512];
    sw_config_init(&cfg);
    if (sw_config_load(&cfg, err, sizeof err) != 0) {
        fprintf(stderr, "sw_demo: %s; tracing stays off\n", err);
    } else if (sw_init(&cfg) != 0) {
        fprintf(stderr, "sw_demo: the agent did not start; the service runs untraced\n");
    }

    requests = calloc((size_t)request_count, sizeof *requests);
    if (requests == NULL) {
        return 1;
    }
    for (int i = 0; i < request_count; i++) {
        requests[i].id = 1000 + i;
        if (i % 3 == 0) {
            gateway_call(&requests[i]);
        }
    }
    pthread_t threads[SERVER_THREADS];
    for (int t = 0; t < SERVER_THREADS; t++) {
        pthread_create(&threads[t], NULL, server, NULL);
    }
    for (int t = 0; t < SERVER_THREADS; t++) {
        pthread_join(threads[t], NULL);
    }

    bool traced = sw_enabled();
    /* The reporter sw_init chose: SW_REPORTER, else the backend that is configured, else file. */
    const char *reporter = cfg.reporter[0]                  ? cfg.reporter
                           : cfg.kafka_bootstrap_servers[0] ? "kafka"
                           : cfg.backend_services[0]        ? "grpc"
                                                            : "file";
    sw_shutdown();
    sw_stats_t st;
    sw_stats(&st);
    char path[PATH_MAX];
    if (realpath(cfg.file_path, path) == NULL) {
        snprintf(path, sizeof path, "%s", cfg.file_path);
    }
    printf("sw_demo: handled %d requests (%s, reporter %s)\n", request_count,
           traced ? "traced" : "not traced", reporter);
    if (traced && strcmp(reporter, "file") == 0) {
        printf("segments written to %s (appended)\n  read them: ./build/agent/tools/swtrace %s\n",
               path, cfg.file_path);
    }
    printf("segments: finished=%llu reported=%llu dropped=%llu failed=%llu "
           "sampled_out=%llu spans_limited=%llu\n",
           (unsigned long long)st.segments_finished, (unsigned long long)st.segments_reported,
           (unsigned long long)st.segments_dropped, (unsigned long long)st.segments_failed,
           (unsigned long long)st.traces_sampled_out, (unsigned long long)st.spans_limited);
    free(requests);
    return 0;
}
