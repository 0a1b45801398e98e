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
#include <math.h>
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
/* Further settings for the next agent start: key, value, ..., NULL. */
static const char *const *agent_extra_settings;

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
    for (const char *const *kv = agent_extra_settings; kv != NULL && kv[0] != NULL; kv += 2) {
        cr_assert_eq(sw_config_set(&cfg, kv[0], kv[1], err, sizeof err), 0, "%s", err);
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
    cr_expect_eq(occurrences(err, "check SW_AGENT_AUTHENTICATION"), 1,
                 "the rejected token should be reported exactly once, naming "
                 "SW_AGENT_AUTHENTICATION");
    cr_expect_eq(occurrences(err, "SW_AGENT_AUTHENTICATION is sent without TLS"), 1,
                 "the token in clear text should be warned about exactly once");
    cr_expect_eq(occurrences(err, "with UNAUTHENTICATED ("), 1, "the token line, once");
    /* The lost segments are told once too (grpc_loss.h: the next warning comes 30 s later at
       the earliest, and names the status again). */
    cr_expect_eq(occurrences(err, "segments lost in"), 1);
    cr_expect_eq(occurrences(err, "UNAUTHENTICATED"), 2, "the token line and the loss warning");
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
    /* A long call deadline: a drain that made one call per batch to the dead address and waited
       it out would take 30 s or more, far from the bound below. */
    agent_start(down, NULL, 30000, buffer);
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
       Generous (a loaded CI machine), and half of one blocked call's deadline. */
    cr_expect_lt(shutdown_ms, 15000, "sw_shutdown took %llu ms with the backend down",
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

/* ---------------------------------------------------------------------------------------- */
/* Meters and configuration discovery (MeterReportService, ConfigurationDiscoveryService)    */
/* ---------------------------------------------------------------------------------------- */

/* The value after `"<key>": ` in a JSON line, or NAN. */
static double json_number(const char *line, const char *key)
{
    char pat[192];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(line, pat);
    if (p == NULL) {
        return NAN;
    }
    char *end;
    double v = strtod(p + strlen(pat), &end);
    return end == p + strlen(pat) ? NAN : v;
}

/* The whole lines of the collector's records holding `needle` and `also` (NULL: any), each
   malloc'd, in order; *n. */
static char **lines_matching(const collector_t *c, const char *needle, const char *also, size_t *n)
{
    char **out = NULL;
    *n = 0;
    FILE *f = fopen(c->out, "r");
    if (f == NULL) {
        return NULL;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n' && strstr(line, needle) != NULL &&
            (also == NULL || strstr(line, also) != NULL)) {
            out = realloc(out, (*n + 1) * sizeof *out);
            out[(*n)++] = strdup(line);
        }
    }
    free(line);
    fclose(f);
    return out;
}

static void lines_free(char **lines, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(lines[i]);
    }
    free(lines);
}

/* Waits (bounded) for a meters stream that arrived after `after` streams and whose timestamp
   is at least `since_ms` (CLOCK_REALTIME); returns it (malloc'd) and *index. */
static char *meters_wait(const collector_t *c, size_t after, int64_t since_ms, size_t *index)
{
    uint64_t deadline = now_ms() + WAIT_MS;
    for (;;) {
        size_t n;
        char **lines = lines_matching(c, "\"kind\": \"meters\"", NULL, &n);
        for (size_t i = after; i < n; i++) {
            if (json_number(lines[i], "timestamp") >= (double)since_ms) {
                char *hit = strdup(lines[i]);
                *index = i;
                lines_free(lines, n);
                return hit;
            }
        }
        lines_free(lines, n);
        cr_assert_lt(now_ms(), deadline, "no meters stream after #%zu within %d ms", after,
                     WAIT_MS);
        poll_pause();
    }
}

static int64_t wall_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static sw_meter_t *test_counter;
#define COUNTER_THREADS 4
#define COUNTER_ADDS    2500

static void *counter_adds(void *arg)
{
    (void)arg;
    for (int i = 0; i < COUNTER_ADDS; i++) {
        sw_meter_counter_add(test_counter, 1);
    }
    return NULL;
}

/* Threads that wait until released: a known number of extra threads. */
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static bool park_release;

static void *parked(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&park_lock);
    while (!park_release) {
        pthread_cond_wait(&park_cond, &park_lock);
    }
    pthread_mutex_unlock(&park_lock);
    return NULL;
}

#define EXTRA_FDS     40
#define EXTRA_THREADS 6

Test(grpc_reporter, meters_arrive_every_period_with_the_right_values)
{
    static const char *const settings[] = {"SW_METER_REPORT_INTERVAL", "1", "SW_AGENT_CDS_INTERVAL",
                                           "0", NULL};
    agent_extra_settings = settings;
    sw_kv_t route = {"route", "/orders"};
    cr_assert_eq(sw_meter_counter_new("test_requests", &route, 1, &test_counter), 0);
    const double steps[] = {0, 10, 100};
    sw_meter_t *h, *g;
    cr_assert_eq(sw_meter_histogram_new("test_latency_ms", NULL, 0, steps, 3, &h), 0);
    cr_assert_eq(sw_meter_gauge_new("test_gauge", NULL, 0, &g), 0);
    sw_meter_gauge_set(g, 12.5);
    sw_meter_histogram_add(h, 5);
    sw_meter_histogram_add(h, 10);
    sw_meter_histogram_add(h, 500);
    pthread_t t[COUNTER_THREADS];
    for (int i = 0; i < COUNTER_THREADS; i++) {
        cr_assert_eq(pthread_create(&t[i], NULL, counter_adds, NULL), 0);
    }
    for (int i = 0; i < COUNTER_THREADS; i++) {
        pthread_join(t[i], NULL);
    }

    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    int64_t started = wall_now_ms();
    agent_start(c->port, NULL, 10000, 4096);
    segments_emit("metered", 10);

    size_t idx;
    char *first = meters_wait(c, 0, started, &idx);
    char service[64], instance[64];
    cr_assert(json_string(first, "service", service, sizeof service), "%s", first);
    cr_assert_str_eq(service, "grpc-test-service");
    cr_assert(json_string(first, "serviceInstance", instance, sizeof instance));
    cr_assert_str_eq(instance, INSTANCE);
    double ts = json_number(first, "timestamp");
    cr_assert(ts >= (double)started - 1000 && ts <= (double)wall_now_ms() + 1000, "timestamp %f",
              ts);
    cr_assert_eq(json_number(first, "later_with_entity"), 0.0,
                 "service/instance/timestamp only on the first element: %s", first);
    cr_assert_eq(json_number(first, "test_requests{route=/orders}"),
                 (double)(COUNTER_THREADS * COUNTER_ADDS), "%s", first);
    cr_assert_eq(json_number(first, "test_gauge{}"), 12.5);
    cr_assert(strstr(first, "\"test_latency_ms{}\": [[0.0, 1], [10.0, 1], [100.0, 1]]") != NULL,
              "histogram: %s", first);
    double rss = json_number(first, "sw_c_process_rss_bytes{}");
    double threads = json_number(first, "sw_c_process_threads{}");
    double fds = json_number(first, "sw_c_process_open_fds{}");
    cr_assert_gt(rss, 0);
    cr_assert_geq(threads, 1);
    cr_assert_geq(fds, 3);
    cr_assert_geq(json_number(first, "sw_c_process_cpu_utilization{}"), 0);
    cr_assert_geq(json_number(first, "sw_c_segments_finished{}"), 0);
    cr_assert(!isnan(json_number(first, "sw_c_queue_fill_percent{}")));

    /* A known number of extra fds and threads shows in a later period. */
    int extra[EXTRA_FDS];
    for (int i = 0; i < EXTRA_FDS; i++) {
        extra[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        cr_assert_geq(extra[i], 0);
    }
    pthread_t p[EXTRA_THREADS];
    for (int i = 0; i < EXTRA_THREADS; i++) {
        cr_assert_eq(pthread_create(&p[i], NULL, parked, NULL), 0);
    }
    int64_t opened = wall_now_ms();
    size_t idx2;
    char *later = meters_wait(c, idx + 1, opened + 1, &idx2);
    double fds2 = json_number(later, "sw_c_process_open_fds{}");
    double threads2 = json_number(later, "sw_c_process_threads{}");
    fprintf(stderr, "meters: fds %.0f -> %.0f, threads %.0f -> %.0f, rss %.0f\n", fds, fds2,
            threads, threads2, rss);
    cr_expect(fds2 - fds >= EXTRA_FDS && fds2 - fds <= EXTRA_FDS + 6, "fds %.0f -> %.0f", fds,
              fds2);
    cr_expect(threads2 - threads >= EXTRA_THREADS && threads2 - threads <= EXTRA_THREADS + 4,
              "threads %.0f -> %.0f", threads, threads2);
    cr_expect_eq(json_number(later, "test_requests{route=/orders}"),
                 (double)(COUNTER_THREADS * COUNTER_ADDS));
    pthread_mutex_lock(&park_lock);
    park_release = true;
    pthread_cond_broadcast(&park_cond);
    pthread_mutex_unlock(&park_lock);
    for (int i = 0; i < EXTRA_THREADS; i++) {
        pthread_join(p[i], NULL);
    }
    for (int i = 0; i < EXTRA_FDS; i++) {
        close(extra[i]);
    }

    /* Every period: with a 1 s interval, 3 more streams within a bounded wait. */
    size_t idx3;
    char *third = meters_wait(c, idx2 + 3, 0, &idx3);
    free(third);
    agent_test_stop();
    collector_stop(c);
    agent_extra_settings = NULL;
    free(first);
    free(later);
}

/* Writes the collector's configuration discovery answer atomically (rename). */
static void cds_answer_write(const collector_t *c, const char *json)
{
    char tmp[256], path[256];
    snprintf(path, sizeof path, "%.200s/cds.json", c->dir);
    snprintf(tmp, sizeof tmp, "%.200s/cds.json.tmp", c->dir);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f);
    fputs(json, f);
    fclose(f);
    cr_assert_eq(rename(tmp, path), 0);
}

/* Fetches the collector recorded that sent `uuid`. */
static size_t cds_fetches(const collector_t *c, const char *uuid)
{
    char needle[160];
    snprintf(needle, sizeof needle, "\"uuid\": \"%s\"", uuid);
    size_t n;
    char **lines = lines_matching(c, "\"kind\": \"cds_fetch\"", needle, &n);
    lines_free(lines, n);
    return n;
}

/* Waits until the collector has more than `than` fetches that sent `uuid`. */
static void cds_fetches_wait(const collector_t *c, const char *uuid, size_t than)
{
    uint64_t deadline = now_ms() + WAIT_MS;
    while (cds_fetches(c, uuid) <= than) {
        cr_assert_lt(now_ms(), deadline, "no fetch with uuid '%s' within %d ms", uuid, WAIT_MS);
        poll_pause();
    }
}

/* Starts `n` one-span traces as fast as possible; returns how many were sampled, and the
   number of 3-second sampler windows the burst touched in *windows. */
static uint64_t burst_sampled(int n, const char *op, int64_t *windows)
{
    sw_stats_t before = stats_now();
    int64_t t0 = wall_now_ms();
    for (int i = 0; i < n; i++) {
        sw_entry_span_begin(op, NULL);
        sw_span_end();
    }
    int64_t t1 = wall_now_ms();
    sw_stats_t after = stats_now();
    *windows = t1 / 3000 - t0 / 3000 + 1;
    return (uint64_t)n - (after.traces_sampled_out - before.traces_sampled_out) -
           (after.traces_ignored - before.traces_ignored);
}

static char cds_log[8192];
static pthread_mutex_t cds_log_lock = PTHREAD_MUTEX_INITIALIZER;

static void cds_log_capture(sw_log_level_t level, const char *message, void *opaque)
{
    (void)level;
    (void)opaque;
    pthread_mutex_lock(&cds_log_lock);
    size_t at = strlen(cds_log);
    snprintf(cds_log + at, sizeof cds_log - at, "%s\n", message);
    pthread_mutex_unlock(&cds_log_lock);
}

Test(grpc_reporter, configuration_discovery_changes_sampling_without_restart)
{
    static const char *const settings[] = {"SW_METER_REPORT_INTERVAL", "0", "SW_AGENT_CDS_INTERVAL",
                                           "1", NULL};
    agent_extra_settings = settings;
    collector_t *c = &the_collector;
    char cds_path[256];
    snprintf(cds_path, sizeof cds_path, "/tmp/sw-grpc-cds-%d", (int)getpid());
    /* The collector's directory is made by collector_start: point at a file in it after. */
    collector_start(c, 0, NULL, NULL);
    collector_stop(c);
    snprintf(cds_path, sizeof cds_path, "%.200s/cds.json", c->dir);
    collector_cds_file = cds_path;
    collector_start(c, 0, NULL, NULL);
    collector_cds_file = NULL;
    sw_set_log_handler(cds_log_capture, NULL);
    agent_start(c->port, NULL, 10000, 4096);
    int64_t windows;

    /* Before any answer: everything is sampled; the first fetch sends an empty uuid. */
    cds_fetches_wait(c, "", 0);
    size_t named;
    char **fetches =
        lines_matching(c, "\"kind\": \"cds_fetch\"", "\"service\": \"grpc-test-service\"", &named);
    lines_free(fetches, named);
    cr_assert_geq(named, 1, "fetchConfigurations must name the service");
    cr_assert_eq(burst_sampled(30, "GET /a", &windows), 30);

    /* agent.sample_n_per_3_secs=1: at most one sampled trace per 3 s window. */
    cds_answer_write(c, "{\"uuid\": \"u1\", \"config\": {\"agent.sample_n_per_3_secs\": \"1\"}}");
    cds_fetches_wait(c, "u1", 0); /* the next fetch sends the UUID it applied */
    uint64_t sampled = burst_sampled(30, "GET /b", &windows);
    cr_assert_leq((int64_t)sampled, windows, "%llu sampled in %lld windows",
                  (unsigned long long)sampled, (long long)windows);

    /* The same UUID with another value changes nothing. */
    cds_answer_write(c, "{\"uuid\": \"u1\", \"config\": {\"agent.sample_n_per_3_secs\": \"-1\"}}");
    size_t seen = cds_fetches(c, "u1");
    cds_fetches_wait(c, "u1", seen + 1); /* two more fetches: one surely read the new file */
    sampled = burst_sampled(30, "GET /c", &windows);
    cr_assert_leq((int64_t)sampled, windows, "unchanged UUID applied: %llu sampled",
                  (unsigned long long)sampled);

    /* A bad value is logged (escaped) and ignored; an unknown key is ignored. */
    cds_answer_write(c, "{\"uuid\": \"u2\", \"config\": {\"agent.sample_n_per_3_secs\": "
                        "\"lots\\u0007\", \"agent.not_a_setting\": \"1\"}}");
    cds_fetches_wait(c, "u2", 0);
    sampled = burst_sampled(30, "GET /d", &windows);
    cr_assert_leq((int64_t)sampled, windows, "the bad value changed sampling: %llu sampled",
                  (unsigned long long)sampled);
    pthread_mutex_lock(&cds_log_lock);
    bool bad_logged = strstr(cds_log, "agent.sample_n_per_3_secs='lots\\x07'") != NULL;
    bool unknown_logged = strstr(cds_log, "not_a_setting") != NULL;
    pthread_mutex_unlock(&cds_log_lock);
    cr_assert(bad_logged, "the bad value was not logged escaped: %s", cds_log);
    cr_assert_not(unknown_logged, "an unknown key is not worth a warning");

    /* A new UUID without the sampling key restores the startup value (all); span limit and
       ignore list apply too. */
    cds_answer_write(c, "{\"uuid\": \"u3\", \"config\": {\"agent.span_limit_per_segment\": "
                        "\"4\", \"agent.ignore_suffix\": \".health\"}}");
    cds_fetches_wait(c, "u3", 0);
    cr_assert_eq(burst_sampled(30, "GET /e", &windows), 30);
    sw_stats_t before = stats_now();
    sw_entry_span_begin("GET /ping.health", NULL);
    sw_span_end();
    sw_entry_span_begin("GET /limited", NULL);
    for (int i = 0; i < 9; i++) {
        sw_local_span_begin("step");
        sw_span_end();
    }
    sw_span_end();
    sw_stats_t after = stats_settled();
    cr_assert_eq(after.traces_ignored - before.traces_ignored, 1);
    cr_assert_eq(after.spans_limited - before.spans_limited, 6, "10 spans, limit 4");

    agent_test_stop();
    sw_set_log_handler(NULL, NULL);
    collector_stop(c);
    agent_extra_settings = NULL;
    /* The limited segment reached the collector with 4 spans. */
    size_t n;
    char **limited = lines_matching(c, "\"kind\": \"segment\"", "\"GET /limited\"", &n);
    bool found = n == 1 && json_number(limited[0], "spans") == 4.0;
    lines_free(limited, n);
    cr_assert(found, "no 4-span segment 'GET /limited' at the collector");
}
