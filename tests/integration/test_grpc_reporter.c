/*
 * test_grpc_reporter.c - the gRPC reporter against a real gRPC collector
 * (tests/support/grpc_collector.py, Debian's python3-grpcio, stubs built from the .proto files in
 * proto/), started and stopped by each test, through the public API only (sw_init with
 * SW_REPORTER=grpc, spans, sw_shutdown, sw_stats):
 *
 *   - every segment arrives exactly once; InstanceProperties and keep-alives arrive; a Command
 *     in the answers is parsed and logged once;
 *   - a wrong token is rejected (UNAUTHENTICATED), said once on stderr naming
 *     SW_AGENT_AUTHENTICATION, counted as failed, and the collector stores nothing;
 *   - the collector is stopped and restarted on the same port mid-run: the agent reconnects,
 *     and the collector holds exactly the segments counted as reported;
 *   - no collector at all: sw_shutdown returns promptly, everything is failed or dropped, and
 *     the segment blocks stay bounded.
 *
 * The collector gets SIGTERM (graceful: calls in flight finish) and runs with
 * PR_SET_PDEATHSIG, so a crashed test does not leave it behind; each test's .fini stops it too.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_internal.h"
#include "skywalking.h"
#include "test_agent_support.h"
#include "test_util.h"

#include "grpc_collector_proc.h"

/* What the collector recorded. */
typedef struct records {
    char **segment_ids; /* malloc'd, sorted */
    size_t segments;
    size_t properties;
    size_t pings;
    size_t rejected;
    bool properties_have_language; /* "language": "C" was among the properties */
    bool instance_seen;            /* a ping named the test's instance */
} records_t;

static int id_compare(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads the JSONL file (only whole lines). */
static records_t records_read(const collector_t *c, const char *instance)
{
    records_t r = {0};
    size_t cap = 0;
    FILE *f = fopen(c->out, "r");
    if (f == NULL) {
        return r;
    }
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t n;
    while ((n = getline(&line, &line_cap, f)) > 0) {
        if (line[n - 1] != '\n') {
            break; /* being written */
        }
        char kind[32], id[256];
        if (!json_string(line, "kind", kind, sizeof kind)) {
            continue;
        }
        if (strcmp(kind, "segment") == 0) {
            cr_assert(json_string(line, "traceSegmentId", id, sizeof id), "no id in %s", line);
            if (r.segments == cap) {
                cap = cap ? cap * 2 : 256;
                r.segment_ids = realloc(r.segment_ids, cap * sizeof *r.segment_ids);
            }
            r.segment_ids[r.segments++] = strdup(id);
        } else if (strcmp(kind, "properties") == 0) {
            r.properties++;
            if (strstr(line, "\"language\": \"C\"")) {
                r.properties_have_language = true;
            }
        } else if (strcmp(kind, "ping") == 0) {
            r.pings++;
            if (json_string(line, "serviceInstance", id, sizeof id) && strcmp(id, instance) == 0) {
                r.instance_seen = true;
            }
        } else if (strcmp(kind, "rejected") == 0) {
            r.rejected++;
        }
    }
    free(line);
    fclose(f);
    if (r.segments > 1) {
        qsort(r.segment_ids, r.segments, sizeof *r.segment_ids, id_compare);
    }
    return r;
}

static void records_free(records_t *r)
{
    for (size_t i = 0; i < r->segments; i++) {
        free(r->segment_ids[i]);
    }
    free(r->segment_ids);
}

/* The number of ids that occur more than once (the ids are sorted). */
static size_t records_duplicates(const records_t *r)
{
    size_t dup = 0;
    for (size_t i = 1; i < r->segments; i++) {
        dup += strcmp(r->segment_ids[i - 1], r->segment_ids[i]) == 0;
    }
    return dup;
}

/* ---------------------------------------------------------------------------------------- */
/* The agent side                                                                            */
/* ---------------------------------------------------------------------------------------- */

#define INSTANCE "grpc-test-instance"

/* When set, the agent uses TLS with this CA file. */
static const char *agent_ssl_ca;

static void agent_start_backend(const char *backend, const char *token, uint32_t timeout_ms,
                                uint32_t buffer_size)
{
    sw_config_t cfg;
    sw_config_init(&cfg);
    char err[256] = "";
    cr_assert_eq(sw_config_set(&cfg, "SW_REPORTER", "grpc", err, sizeof err), 0, "%s", err);
    cr_assert_eq(
        sw_config_set(&cfg, "SW_AGENT_COLLECTOR_BACKEND_SERVICES", backend, err, sizeof err), 0,
        "%s", err);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_HEARTBEAT_PERIOD", "1", err, sizeof err), 0, "%s",
                 err);
    char text[32];
    snprintf(text, sizeof text, "%u", timeout_ms);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_GRPC_TIMEOUT_MS", text, err, sizeof err), 0, "%s",
                 err);
    snprintf(text, sizeof text, "%u", buffer_size);
    cr_assert_eq(sw_config_set(&cfg, "SW_BUFFER_BUFFER_SIZE", text, err, sizeof err), 0, "%s", err);
    if (token != NULL) {
        cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_AUTHENTICATION", token, err, sizeof err), 0,
                     "%s", err);
    }
    if (agent_ssl_ca != NULL) {
        cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_SSL", "true", err, sizeof err), 0, "%s", err);
        cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_SSL_CA_FILE", agent_ssl_ca, err, sizeof err), 0,
                     "%s", err);
    }
    snprintf(cfg.service_name, sizeof cfg.service_name, "grpc-test-service");
    snprintf(cfg.instance_name, sizeof cfg.instance_name, INSTANCE);
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
}

static void agent_start(int port, const char *token, uint32_t timeout_ms, uint32_t buffer_size)
{
    char backend[64];
    snprintf(backend, sizeof backend, "127.0.0.1:%d", port);
    agent_start_backend(backend, token, timeout_ms, buffer_size);
}

/* n segments of two spans each, named <prefix>-<i>. */
static void segments_emit(const char *prefix, int n)
{
    char op[64];
    for (int i = 0; i < n; i++) {
        snprintf(op, sizeof op, "%s-%d", prefix, i);
        sw_entry_span_begin(op, NULL);
        sw_local_span_begin("work");
        sw_span_tag("i", op);
        sw_span_end();
        sw_span_end();
    }
}

static sw_stats_t stats_now(void)
{
    sw_stats_t st;
    sw_stats(&st);
    return st;
}

/* Waits (bounded) until every finished segment has an outcome. */
static sw_stats_t stats_settled(void)
{
    uint64_t deadline = now_ms() + WAIT_MS;
    for (;;) {
        sw_stats_t st = stats_now();
        uint64_t done = st.segments_reported + st.segments_dropped + st.segments_failed;
        if (done == st.segments_finished) {
            return st;
        }
        cr_assert_lt(now_ms(), deadline, "only %llu of %llu segments accounted for in %d ms",
                     (unsigned long long)done, (unsigned long long)st.segments_finished, WAIT_MS);
        poll_pause();
    }
}

/* stderr into a file while the agent runs, to check what it tells the user. */

/* ---------------------------------------------------------------------------------------- */
/* Tests                                                                                     */
/* ---------------------------------------------------------------------------------------- */

TestSuite(grpc_reporter, .fini = collector_fini, .timeout = 240);

Test(grpc_reporter, every_segment_arrives_once_with_properties_and_pings)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, "s3cret", "TestCommand");
    stderr_capture_t cap;
    stderr_capture_begin(&cap, c);
    agent_start(c->port, "s3cret", 10000, 4096);
    const int n = 2000;
    segments_emit("seg", n);
    /* The management thread sends properties and a ping at start, then a ping every second. */
    uint64_t deadline = now_ms() + WAIT_MS;
    for (;;) {
        records_t r = records_read(c, INSTANCE);
        bool done = r.properties >= 1 && r.pings >= 2;
        records_free(&r);
        if (done) {
            break;
        }
        cr_assert_lt(now_ms(), deadline, "no properties and 2 pings within %d ms", WAIT_MS);
        poll_pause();
    }
    sw_stats_t st = agent_test_stop();
    char *err = stderr_capture_end(&cap);
    collector_stop(c);

    cr_expect_eq(st.segments_finished, (uint64_t)n);
    cr_expect_eq(st.segments_dropped, 0, "a 4096-slot buffer should not drop");
    cr_expect_eq(st.segments_failed, 0);
    cr_expect_eq(st.segments_reported, (uint64_t)n);
    records_t r = records_read(c, INSTANCE);
    cr_expect_eq(r.segments, st.segments_reported, "collector holds %zu, agent reported %llu",
                 r.segments, (unsigned long long)st.segments_reported);
    cr_expect_eq(records_duplicates(&r), 0, "segments arrived twice");
    cr_expect(r.properties_have_language, "InstanceProperties without language=C");
    cr_expect(r.instance_seen, "no ping named instance " INSTANCE);
    cr_expect_eq(r.rejected, 0, "the right token was rejected");
    cr_expect_eq(occurrences(err, "command 'TestCommand'"), 1,
                 "the collector's command should be logged exactly once");
    records_free(&r);
    free(err);
}

Test(grpc_reporter, wrong_token_is_rejected_and_reported_once)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, "right-token", NULL);
    stderr_capture_t cap;
    stderr_capture_begin(&cap, c);
    agent_start(c->port, "wrong-token", 10000, 1024);
    for (int round = 0; round < 5; round++) {
        segments_emit("denied", 20);
        (void)stats_settled(); /* several collect calls, all rejected */
    }
    sw_stats_t st = agent_test_stop();
    char *err = stderr_capture_end(&cap);
    collector_stop(c);

    cr_expect_eq(st.segments_finished, 100);
    cr_expect_eq(st.segments_reported, 0);
    cr_expect_eq(st.segments_failed + st.segments_dropped, 100);
    records_t r = records_read(c, INSTANCE);
    cr_expect_eq(r.segments, 0, "the collector stored %zu segments of a rejected token",
                 r.segments);
    cr_expect_geq(r.rejected, 1, "the collector never rejected anything");
    cr_expect_eq(occurrences(err, "SW_AGENT_AUTHENTICATION"), 1,
                 "the rejected token should be reported exactly once, naming "
                 "SW_AGENT_AUTHENTICATION");
    cr_expect_eq(occurrences(err, "UNAUTHENTICATED"), 1);
    records_free(&r);
    free(err);
}

Test(grpc_reporter, collector_restart_resumes_with_exact_accounting)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    int port = c->port;
    agent_start(port, NULL, 5000, 1024);

    segments_emit("before", 300);
    sw_stats_t st = stats_settled();
    cr_assert_eq(st.segments_reported, 300, "collector up: all 300 should be reported");

    collector_stop(c); /* graceful: calls in flight are answered */
    segments_emit("down", 300);
    st = stats_settled();
    uint64_t reported_before = st.segments_reported;
    cr_expect_eq(reported_before, 300, "nothing can be reported while the collector is down");
    cr_expect_gt(st.segments_failed + st.segments_dropped, 0);

    collector_start(c, port, NULL, NULL);
    /* Keep tracing until the agent's backoff ends and it delivers again (bounded). */
    uint64_t deadline = now_ms() + WAIT_MS;
    int waves = 0;
    while (stats_now().segments_reported == reported_before) {
        cr_assert_lt(now_ms(), deadline, "the agent did not reconnect within %d ms", WAIT_MS);
        segments_emit("retry", 1);
        waves++;
        poll_pause();
    }
    segments_emit("after", 300);
    (void)stats_settled();
    st = agent_test_stop();
    collector_stop(c);

    cr_expect_eq(st.segments_finished, 900 + (uint64_t)waves);
    cr_expect_geq(st.segments_reported, 300 + 300, "after reconnecting, 300 more are expected");
    records_t r = records_read(c, INSTANCE);
    cr_expect_eq(r.segments, st.segments_reported,
                 "collector holds %zu segments, agent counted %llu reported", r.segments,
                 (unsigned long long)st.segments_reported);
    cr_expect_eq(records_duplicates(&r), 0, "segments arrived twice");
    records_free(&r);
}

Test(grpc_reporter, backend_down_fails_fast_and_stays_bounded)
{
    const uint32_t buffer = 64, channels = 5;
    int down = loopback_refused_port(false);
    cr_assert_gt(down, 0, "no free loopback port: %s", strerror(errno));
    agent_start(down, NULL, 2000, buffer);
    const int n = 20000;
    segments_emit("nowhere", n);
    uint64_t blocks = sw__agent_blocks_allocated();
    uint64_t t0 = now_ms();
    sw_stats_t st = agent_test_stop();
    uint64_t shutdown_ms = now_ms() - t0;

    cr_expect_eq(st.segments_finished, (uint64_t)n);
    cr_expect_eq(st.segments_reported, 0);
    cr_expect_eq(st.segments_failed + st.segments_dropped, (uint64_t)n);
    /* Blocks are recycled: at most the rings plus one consumer batch plus a few in hand. */
    cr_expect_leq(blocks, 2 * (uint64_t)buffer * channels + 16,
                  "%llu segment blocks allocated for %d segments: memory is not bounded",
                  (unsigned long long)blocks, n);
    /* The bound of sw_shutdown here: draining fails fast, the management call is cancelled.
       Generous (a loaded CI machine), but far below a blocked call per batch. */
    cr_expect_lt(shutdown_ms, 10000, "sw_shutdown took %llu ms with the backend down",
                 (unsigned long long)shutdown_ms);
}

Test(grpc_reporter, fails_over_to_the_next_address)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    char backend[96];
    int down = loopback_refused_port(false);
    cr_assert_gt(down, 0, "no free loopback port: %s", strerror(errno));
    snprintf(backend, sizeof backend, "127.0.0.1:%d, 127.0.0.1:%d", down, c->port);
    agent_start_backend(backend, NULL, 5000, 1024);
    /* The first batch goes to the closed port and fails; the next ones go to the collector. */
    uint64_t deadline = now_ms() + WAIT_MS;
    while (stats_now().segments_reported == 0) {
        cr_assert_lt(now_ms(), deadline, "nothing reached the second address in %d ms", WAIT_MS);
        segments_emit("probe", 1);
        (void)stats_settled();
    }
    segments_emit("second", 200);
    (void)stats_settled();
    sw_stats_t st = agent_test_stop();
    collector_stop(c);
    cr_expect_geq(st.segments_reported, 201);
    records_t r = records_read(c, INSTANCE);
    cr_expect_eq(r.segments, st.segments_reported, "collector holds %zu, agent reported %llu",
                 r.segments, (unsigned long long)st.segments_reported);
    records_free(&r);
}

/* sw_init with one bad setting: SW_ECONFIG, the agent stays off. */
static int init_with(const char *key, const char *value, const char *key2, const char *value2)
{
    sw_config_t cfg;
    sw_config_init(&cfg);
    char err[256] = "";
    cr_assert_eq(sw_config_set(&cfg, "SW_REPORTER", "grpc", err, sizeof err), 0, "%s", err);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_COLLECTOR_BACKEND_SERVICES", "127.0.0.1:11800", err,
                               sizeof err),
                 0, "%s", err);
    cr_assert_eq(sw_config_set(&cfg, key, value, err, sizeof err), 0, "%s", err);
    if (key2 != NULL) {
        cr_assert_eq(sw_config_set(&cfg, key2, value2, err, sizeof err), 0, "%s", err);
    }
    int rc = sw_init(&cfg);
    if (rc == 0) {
        sw_shutdown();
    }
    return rc;
}

Test(grpc_reporter, bad_settings_are_clear_errors)
{
    sw_config_t cfg;
    sw_config_init(&cfg);
    cr_expect_eq(cfg.grpc_timeout_ms, 10000);
    cr_expect(!cfg.grpc_ssl);
    char err[256] = "";
    cr_expect_eq(sw_config_set(&cfg, "SW_AGENT_SSL", "maybe", err, sizeof err), SW_ECONFIG);
    cr_expect(strstr(err, "SW_AGENT_SSL") != NULL, "message does not name the key: %s", err);
    cr_expect_eq(sw_config_set(&cfg, "SW_AGENT_SSL", "TRUE", err, sizeof err), 0);
    cr_expect(cfg.grpc_ssl);
    cr_expect_eq(sw_config_set(&cfg, "SW_AGENT_GRPC_TIMEOUT_MS", "5", err, sizeof err), SW_ECONFIG);
    cr_expect(strstr(err, "SW_AGENT_GRPC_TIMEOUT_MS") != NULL, "%s", err);

    cr_expect_eq(init_with("SW_AGENT_COLLECTOR_BACKEND_SERVICES", "localhost", NULL, NULL),
                 SW_ECONFIG, "an address without a port must be rejected");
    cr_expect_eq(init_with("SW_AGENT_COLLECTOR_BACKEND_SERVICES", "a:1,,b:2", NULL, NULL),
                 SW_ECONFIG, "an empty address must be rejected");
    cr_expect_eq(init_with("SW_AGENT_SSL", "true", "SW_AGENT_SSL_CA_FILE", "/nonexistent/ca.pem"),
                 SW_ECONFIG, "an unreadable CA file must be rejected");
    cr_expect_eq(init_with("SW_AGENT_COLLECTOR_BACKEND_SERVICES", "", NULL, NULL), SW_ECONFIG,
                 "SW_REPORTER=grpc without an address must be rejected");
    cr_expect(!sw_enabled());
}

Test(grpc_reporter, tls_with_a_ca_file)
{
    collector_t *c = &the_collector;
    char dir[] = "/tmp/sw-grpc-tls-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    static char cert[96], key[96];
    snprintf(cert, sizeof cert, "%s/cert.pem", dir);
    snprintf(key, sizeof key, "%s/key.pem", dir);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
             "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout %s -out %s "
             ">/dev/null 2>&1",
             key, cert);
    cr_assert_eq(system(cmd), 0, "openssl could not make a self-signed certificate");
    collector_tls_cert = cert;
    collector_tls_key = key;
    collector_start(c, 0, NULL, NULL);
    agent_ssl_ca = cert;
    agent_start(c->port, NULL, 10000, 1024);
    segments_emit("tls", 100);
    (void)stats_settled();
    sw_stats_t st = agent_test_stop();
    collector_stop(c);
    cr_expect_eq(st.segments_reported, 100, "over TLS: %llu reported, %llu failed",
                 (unsigned long long)st.segments_reported, (unsigned long long)st.segments_failed);
    records_t r = records_read(c, INSTANCE);
    cr_expect_eq(r.segments, 100);
    records_free(&r);
}
