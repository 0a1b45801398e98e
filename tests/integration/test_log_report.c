/*
 * test_log_report.c - application logs (sw_log, sw_log_kv), the Start and Shutdown events and
 * gRPC mutual TLS against the real gRPC collector (tests/support/grpc_collector.py, which
 * records every LogData and Event it receives), through the public API only:
 *
 *   - a line logged inside a span carries that span's traceId / traceSegmentId / spanId (the
 *     ids of the segment the collector receives), the endpoint, tags level and logger, the
 *     caller's tags; a line outside a span has no trace context;
 *   - Start at sw_init and Shutdown at sw_shutdown, shaped as the Java agent's;
 *   - messages longer than SW_LOG_MAX_MESSAGE_SIZE are cut (at a UTF-8 boundary) and counted;
 *   - with the collector stopped (SIGSTOP) a flood never blocks the caller, drops are counted
 *     and the accounting is exact: recorded == reported + dropped + failed, and the collector
 *     holds exactly the reported lines;
 *   - mutual TLS: with SW_AGENT_SSL_KEY_PATH / SW_AGENT_SSL_CERT_CHAIN_PATH the agent is let
 *     in; without them the collector refuses it, and the agent says so once;
 *   - the file reporter has no log path (SW_ENOTSUP); the agent off says SW_ESTATE.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_collector_proc.h"
#include "skywalking.h"
#include "test_agent_support.h"
#include "test_util.h"

#define INSTANCE "log-test-instance"
#define SERVICE  "log-test-service"

/* ---- the agent ---------------------------------------------------------------------------- */

/* When set, the next agent_start's service name. */
static const char *service_override;

/* Extra settings for the next agent_start (NULL-terminated key/value pairs). */
static const char *agent_extra[16];

static void agent_start(int port, uint32_t timeout_ms)
{
    sw_config_t cfg;
    sw_config_init(&cfg);
    char err[256] = "", text[64];
    snprintf(text, sizeof text, "127.0.0.1:%d", port);
    cr_assert_eq(sw_config_set(&cfg, "SW_REPORTER", "grpc", err, sizeof err), 0, "%s", err);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_COLLECTOR_BACKEND_SERVICES", text, err, sizeof err),
                 0, "%s", err);
    snprintf(text, sizeof text, "%u", timeout_ms);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_GRPC_TIMEOUT_MS", text, err, sizeof err), 0, "%s",
                 err);
    for (size_t i = 0; agent_extra[i] != NULL; i += 2) {
        cr_assert_eq(sw_config_set(&cfg, agent_extra[i], agent_extra[i + 1], err, sizeof err), 0,
                     "%s", err);
    }
    snprintf(cfg.service_name, sizeof cfg.service_name, "%s",
             service_override != NULL ? service_override : SERVICE);
    snprintf(cfg.instance_name, sizeof cfg.instance_name, INSTANCE);
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
}

/* CLOCK_MONOTONIC in ns, signed: differences of two readings are exact. */
static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* agent_start with one extra setting. */
static void agent_start_with(int port, uint32_t timeout_ms, const char *key, const char *value)
{
    agent_extra[0] = key;
    agent_extra[1] = value;
    agent_extra[2] = NULL;
    agent_start(port, timeout_ms);
    agent_extra[0] = NULL;
}

/* Stops the agent; asserts the exact accounting of segments and of logs. */
static sw_stats_t agent_stop(void)
{
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.logs_recorded, st.logs_reported + st.logs_dropped + st.logs_failed,
                 "log accounting: recorded %llu != reported %llu + dropped %llu + failed %llu",
                 (unsigned long long)st.logs_recorded, (unsigned long long)st.logs_reported,
                 (unsigned long long)st.logs_dropped, (unsigned long long)st.logs_failed);
    return st;
}

/* ---- the collector's records -------------------------------------------------------------- */

/* Whole lines of the collector's JSONL file whose "kind" is `kind` (malloc'd, NULL-ended). */
static char **records_of(const collector_t *c, const char *kind, size_t *count)
{
    size_t n = 0, cap = 16;
    char **out = calloc(cap + 1, sizeof *out);
    FILE *f = fopen(c->out, "r");
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t len;
    char k[32];
    while (f != NULL && (len = getline(&line, &line_cap, f)) > 0) {
        if (line[len - 1] != '\n') {
            break;
        }
        if (!json_string(line, "kind", k, sizeof k) || strcmp(k, kind) != 0) {
            continue;
        }
        if (n == cap) {
            cap *= 2;
            out = realloc(out, (cap + 1) * sizeof *out);
        }
        out[n++] = strdup(line);
        out[n] = NULL;
    }
    free(line);
    if (f != NULL) {
        fclose(f);
    }
    *count = n;
    return out;
}

static void records_free(char **r)
{
    for (size_t i = 0; r[i] != NULL; i++) {
        free(r[i]);
    }
    free(r);
}

/* The record of `kind` whose string field `key` equals `value`, or NULL. */
static const char *record_find(char **r, const char *key, const char *value)
{
    char buf[20000];
    for (size_t i = 0; r[i] != NULL; i++) {
        if (json_string(r[i], key, buf, sizeof buf) && strcmp(buf, value) == 0) {
            return r[i];
        }
    }
    return NULL;
}

/* The integer after `"key": ` in line, or -1. */
static long long json_int(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(line, pat);
    return p != NULL ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* Waits (bounded) until the collector holds `want` records of `kind`. */
static void records_wait(const collector_t *c, const char *kind, size_t want)
{
    uint64_t deadline = now_ms() + WAIT_MS;
    for (;;) {
        size_t n;
        records_free(records_of(c, kind, &n));
        if (n >= want) {
            return;
        }
        cr_assert_lt(now_ms(), deadline, "the collector holds %zu %s records, %zu expected", n,
                     kind, want);
        poll_pause();
    }
}

/* ---- tests ------------------------------------------------------------------------------- */

TestSuite(log_report, .fini = collector_fini, .timeout = 240);

Test(log_report, a_line_carries_the_active_span_ids_and_tags)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    agent_start(c->port, 10000);

    sw_snapshot_t snap;
    sw_entry_span_begin("GET /orders", NULL);
    sw_local_span_begin("load");
    cr_assert_eq(sw_capture(&snap), 0);
    cr_expect_eq(sw_log(SW_SEVERITY_WARN, "order %d is late", 42), 0);
    sw_kv_t tags[] = {{"order", "42"}, {"region", "eu"}};
    cr_expect_eq(sw_log_kv(SW_SEVERITY_ERROR, "orders.db", "lookup failed", tags, 2), 0);
    sw_span_end();
    sw_span_end();
    cr_expect_eq(sw_log(SW_SEVERITY_INFO, "outside any span"), 0);
    sw_stats_t st = agent_stop();
    collector_stop(c);

    cr_expect_eq(st.logs_recorded, 3);
    cr_expect_eq(st.logs_reported, 3, "reported %llu, failed %llu, dropped %llu",
                 (unsigned long long)st.logs_reported, (unsigned long long)st.logs_failed,
                 (unsigned long long)st.logs_dropped);
    size_t n;
    char **logs = records_of(c, "log", &n);
    cr_assert_eq(n, 3, "the collector holds %zu log lines", n);
    const char *late = record_find(logs, "text", "order 42 is late");
    cr_assert_not_null(late, "no line 'order 42 is late' in the collector");
    char buf[256];
    cr_expect(json_string(late, "traceId", buf, sizeof buf) && strcmp(buf, snap.trace_id) == 0,
              "traceId %s, the span's is %s", buf, snap.trace_id);
    cr_expect(json_string(late, "traceSegmentId", buf, sizeof buf) &&
                  strcmp(buf, snap.segment_id) == 0,
              "traceSegmentId %s, the span's is %s", buf, snap.segment_id);
    cr_expect_eq(json_int(late, "spanId"), 1, "the local span (id 1) was active");
    cr_expect(json_string(late, "endpoint", buf, sizeof buf) && strcmp(buf, "GET /orders") == 0,
              "endpoint %s", buf);
    cr_expect(json_string(late, "level", buf, sizeof buf) && strcmp(buf, "WARN") == 0);
    cr_expect(json_string(late, "logger", buf, sizeof buf) && strcmp(buf, "default") == 0);
    cr_expect(json_string(late, "service", buf, sizeof buf) && strcmp(buf, SERVICE) == 0);
    cr_expect(json_string(late, "serviceInstance", buf, sizeof buf) && strcmp(buf, INSTANCE) == 0);
    cr_expect_gt(json_int(late, "timestamp"), 1600000000000LL, "timestamp in ms since 1970");

    const char *failed = record_find(logs, "text", "lookup failed");
    cr_assert_not_null(failed);
    cr_expect(json_string(failed, "level", buf, sizeof buf) && strcmp(buf, "ERROR") == 0);
    cr_expect(json_string(failed, "logger", buf, sizeof buf) && strcmp(buf, "orders.db") == 0);
    cr_expect(json_string(failed, "order", buf, sizeof buf) && strcmp(buf, "42") == 0);
    cr_expect(json_string(failed, "region", buf, sizeof buf) && strcmp(buf, "eu") == 0);
    cr_expect(json_string(failed, "traceSegmentId", buf, sizeof buf) &&
              strcmp(buf, snap.segment_id) == 0);

    const char *outside = record_find(logs, "text", "outside any span");
    cr_assert_not_null(outside);
    cr_expect(json_string(outside, "traceId", buf, sizeof buf) && buf[0] == '\0',
              "a line outside a span has no trace context, got traceId '%s'", buf);

    /* The segment the collector received is the one the lines point at. */
    char **segments = records_of(c, "segment", &n);
    cr_expect_not_null(record_find(segments, "traceSegmentId", snap.segment_id),
                       "the collector has no segment %s", snap.segment_id);
    records_free(segments);
    records_free(logs);
}

/* skywalking.hpp's skywalking::log (log_report_hpp.cpp): exact texts from string_views, the
   logger, the tags and the span's trace context; a view without data is SW_EINVAL. */
int log_report_hpp_lines(void);

Test(log_report, the_cxx_api_sends_lines_with_logger_and_tags)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    agent_start(c->port, 10000);
    sw_snapshot_t snap;
    sw_entry_span_begin("GET /pay", NULL);
    cr_assert_eq(sw_capture(&snap), 0);
    cr_expect_eq(log_report_hpp_lines(), 0, "skywalking::log returned an error");
    sw_span_end();
    sw_stats_t st = agent_stop();
    collector_stop(c);

    cr_expect_eq(st.logs_reported, 2, "reported %llu", (unsigned long long)st.logs_reported);
    size_t n;
    char **logs = records_of(c, "log", &n);
    cr_assert_eq(n, 2, "the collector holds %zu log lines", n);
    char buf[256];
    const char *one = record_find(logs, "text", "cxx line one");
    cr_assert_not_null(one, "no line 'cxx line one' (cut exactly at the view's end)");
    cr_expect(json_string(one, "logger", buf, sizeof buf) && strcmp(buf, "payments") == 0,
              "logger %s", buf);
    cr_expect(json_string(one, "level", buf, sizeof buf) && strcmp(buf, "WARN") == 0);
    cr_expect(json_string(one, "attempt", buf, sizeof buf) && strcmp(buf, "2") == 0, "%s", buf);
    cr_expect(json_string(one, "zone", buf, sizeof buf) && strcmp(buf, "eu-west") == 0, "%s", buf);
    cr_expect(json_string(one, "traceSegmentId", buf, sizeof buf) &&
                  strcmp(buf, snap.segment_id) == 0,
              "traceSegmentId %s, the span's is %s", buf, snap.segment_id);
    const char *two = record_find(logs, "text", "cxx line two");
    cr_assert_not_null(two);
    cr_expect(json_string(two, "logger", buf, sizeof buf) && strcmp(buf, "default") == 0);
    records_free(logs);
}

Test(log_report, start_and_shutdown_events)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    uint64_t before = (uint64_t)time(NULL) * 1000;
    agent_start(c->port, 10000);
    records_wait(c, "event", 1); /* Start is sent at sw_init, not at shutdown */
    (void)agent_stop();
    collector_stop(c);
    uint64_t after = (uint64_t)time(NULL) * 1000 + 1000;

    size_t n;
    char **events = records_of(c, "event", &n);
    cr_assert_eq(n, 2, "%zu events, expected Start and Shutdown", n);
    const char *start = record_find(events, "name", "Start");
    const char *stop = record_find(events, "name", "Shutdown");
    cr_assert_not_null(start);
    cr_assert_not_null(stop);
    char buf[4096], uuid[64];
    for (int i = 0; i < 2; i++) {
        const char *e = i == 0 ? start : stop;
        cr_expect(json_string(e, "type", buf, sizeof buf) && strcmp(buf, "Normal") == 0);
        cr_expect(json_string(e, "service", buf, sizeof buf) && strcmp(buf, SERVICE) == 0);
        cr_expect(json_string(e, "serviceInstance", buf, sizeof buf) && strcmp(buf, INSTANCE) == 0);
        cr_expect(json_string(e, "layer", buf, sizeof buf) && strcmp(buf, "GENERAL") == 0);
        cr_expect(json_string(e, "uuid", buf, sizeof buf) && strlen(buf) == 36, "uuid %s", buf);
        long long t0 = json_int(e, "startTime"), t1 = json_int(e, "endTime");
        cr_expect(t0 > 0 && t0 <= t1, "startTime %lld endTime %lld", t0, t1);
        cr_expect_leq((uint64_t)t1, after);
    }
    /* Start: from the process start (this test started before sw_init) to the end of init. */
    cr_expect_leq((uint64_t)json_int(start, "startTime"), before + 1000);
    cr_expect_geq((uint64_t)json_int(stop, "startTime"), before - 1000);
    cr_assert(json_string(start, "uuid", uuid, sizeof uuid));
    cr_expect(json_string(stop, "uuid", buf, sizeof buf) && strcmp(buf, uuid) != 0,
              "Start and Shutdown share uuid %s", uuid);
    cr_expect(json_string(start, "message", buf, sizeof buf) && strstr(buf, "Start") != NULL);
    cr_expect(json_string(start, "OPTS", buf, sizeof buf) && strstr(buf, "SW_REPORTER=grpc"),
              "OPTS '%s' should list the settings that differ from the defaults", buf);
    records_free(events);
}

Test(log_report, start_is_sent_again_once_the_collector_is_up)
{
    collector_t *c = &the_collector;
    int port = loopback_refused_port(false);
    cr_assert_gt(port, 0);
    agent_start(port, 2000); /* nothing listens: the Start event fails */
    cr_expect_eq(sw_log(SW_SEVERITY_INFO, "while down"), 0);
    collector_start(c, port, NULL, NULL);
    /* Keep logging until a line gets through (the connection's backoff ends). */
    uint64_t deadline = now_ms() + WAIT_MS;
    sw_stats_t st;
    for (sw_stats(&st); st.logs_reported == 0; sw_stats(&st)) {
        cr_assert_lt(now_ms(), deadline, "no log line reached the collector in %d ms", WAIT_MS);
        (void)sw_log(SW_SEVERITY_INFO, "probe");
        poll_pause();
    }
    (void)agent_stop();
    collector_stop(c);
    size_t n;
    char **events = records_of(c, "event", &n);
    cr_expect_not_null(record_find(events, "name", "Start"),
                       "the Start event must be sent once the collector is reachable");
    cr_expect_not_null(record_find(events, "name", "Shutdown"));
    cr_expect_eq(n, 2, "%zu events", n);
    records_free(events);
}

Test(log_report, long_messages_are_cut_at_a_utf8_boundary_and_counted)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    agent_start_with(c->port, 10000, "SW_LOG_MAX_MESSAGE_SIZE", "100");
    char big[5001];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    big[0] = 'L';
    cr_expect_eq(sw_log_kv(SW_SEVERITY_INFO, NULL, big, NULL, 0), 0);
    cr_expect_eq(sw_log(SW_SEVERITY_INFO, "F%s", big + 1), 0); /* the formatted path */
    /* 99 ASCII bytes then a 2-byte character: a cut at 100 would split it. */
    char split[128];
    memset(split, 'u', 99);
    split[0] = 'U';
    memcpy(split + 99, "\xc3\xa9tail", 7);
    cr_expect_eq(sw_log_kv(SW_SEVERITY_INFO, NULL, split, NULL, 0), 0);
    /* Invalid UTF-8 becomes '?' (the collector, like the OAP, rejects invalid strings). */
    cr_expect_eq(sw_log_kv(SW_SEVERITY_INFO, NULL, "bad \xff byte", NULL, 0), 0);
    cr_expect_eq(sw_log_kv(SW_SEVERITY_INFO, NULL, "short", NULL, 0), 0);
    sw_stats_t st = agent_stop();
    collector_stop(c);

    cr_expect_eq(st.logs_truncated, 3, "3 of 5 lines are longer than 100 bytes");
    cr_expect_eq(st.logs_reported, 5);
    size_t n;
    char **logs = records_of(c, "log", &n);
    cr_assert_eq(n, 5);
    char buf[8192];
    size_t lens[3] = {0, 0, 0};
    for (size_t i = 0; logs[i] != NULL; i++) {
        cr_assert(json_string(logs[i], "text", buf, sizeof buf));
        if (buf[0] == 'L') {
            lens[0] = strlen(buf);
        } else if (buf[0] == 'F') {
            lens[1] = strlen(buf);
        } else if (buf[0] == 'U') {
            lens[2] = strlen(buf);
        }
    }
    cr_expect_eq(lens[0], 100, "a 5000-byte text kept %zu bytes", lens[0]);
    cr_expect_eq(lens[1], 100, "a 5000-byte formatted line kept %zu bytes", lens[1]);
    cr_expect_eq(lens[2], 99, "the cut must not split the 2-byte character (%zu bytes)", lens[2]);
    cr_expect_not_null(record_find(logs, "text", "bad ? byte"), "invalid byte not replaced");
    cr_expect_not_null(record_find(logs, "text", "short"));
    records_free(logs);
}

/* Tag keys and values and the logger name come from the program: each is cut to
   SW_LOG_TAG_MAX bytes at a UTF-8 boundary and cleaned (else the collector, like the OAP,
   rejects the whole call, and the line with every other one in it is lost). */
Test(log_report, tags_and_logger_are_capped_and_cleaned)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    agent_start(c->port, 10000);
    char *big = malloc(5001), *split = malloc(SW_LOG_TAG_MAX + 8);
    cr_assert(big != NULL && split != NULL);
    memset(big, 'b', 5000);
    big[5000] = '\0';
    /* SW_LOG_TAG_MAX - 1 ASCII bytes then a 2-byte character: a cut at the limit splits it. */
    memset(split, 'x', SW_LOG_TAG_MAX - 1);
    memcpy(split + SW_LOG_TAG_MAX - 1, "\xc3\xa9tail", 7);
    sw_kv_t tags[] = {{"big", big}, {"split", split}, {"bad", "\xff\xfe"}, {"k\xc3\x28", "v"}};
    cr_expect_eq(sw_log_kv(SW_SEVERITY_INFO, "log\xc0\xaf", "tagged", tags, 4), 0);
    free(big);
    free(split);
    sw_stats_t st = agent_stop();
    collector_stop(c);

    cr_expect_eq(st.logs_reported, 1);
    size_t n;
    char **logs = records_of(c, "log", &n);
    const char *line = record_find(logs, "text", "tagged");
    cr_assert_not_null(line, "the line with hostile tags was lost");
    char *buf = malloc(20000);
    cr_assert_not_null(buf);
    cr_assert(json_string(line, "big", buf, 20000));
    cr_expect_eq(strlen(buf), SW_LOG_TAG_MAX, "a 5000-byte tag value kept %zu bytes", strlen(buf));
    cr_assert(json_string(line, "split", buf, 20000));
    cr_expect_eq(strlen(buf), SW_LOG_TAG_MAX - 1, "the cut split the 2-byte character (%zu)",
                 strlen(buf));
    cr_expect(json_string(line, "bad", buf, 20000) && strcmp(buf, "??") == 0, "bad: %s", buf);
    cr_expect(json_string(line, "k?(", buf, 20000) && strcmp(buf, "v") == 0, "the key is cleaned");
    cr_expect(json_string(line, "logger", buf, 20000) && strcmp(buf, "log??") == 0, "logger: %s",
              buf);
    free(buf);
    records_free(logs);
}

/* A service name that is not valid UTF-8 (set by the program or the environment) is cleaned
   once, so the Start event, the log line and the segment that carry it all arrive. */
Test(log_report, a_service_name_with_invalid_utf8_is_cleaned_in_every_message)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    service_override = "svc-\xc3\x28";
    agent_start(c->port, 10000);
    service_override = NULL;
    cr_expect_eq(sw_log_kv(SW_SEVERITY_INFO, NULL, "named", NULL, 0), 0);
    sw_entry_span_begin("/named", NULL);
    sw_span_end();
    sw_stats_t st = agent_stop();
    collector_stop(c);
    cr_expect_eq(st.segments_reported, 1);
    const char *kinds[] = {"event", "log", "segment"};
    for (size_t k = 0; k < 3; k++) {
        size_t n;
        char **r = records_of(c, kinds[k], &n);
        cr_expect_not_null(record_find(r, "service", "svc-?("), "no %s with the cleaned service",
                           kinds[k]);
        records_free(r);
    }
}

Test(log_report, default_limit_is_10240_bytes)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    agent_start(c->port, 10000);
    static char big[20001];
    memset(big, 'x', sizeof big - 1);
    cr_expect_eq(sw_log(SW_SEVERITY_DEBUG, "%s", big), 0);
    sw_stats_t st = agent_stop();
    collector_stop(c);
    cr_expect_eq(st.logs_truncated, 1);
    size_t n;
    char **logs = records_of(c, "log", &n);
    cr_assert_eq(n, 1);
    static char text[20001];
    cr_assert(json_string(logs[0], "text", text, sizeof text));
    cr_expect_eq(strlen(text), 10240, "kept %zu bytes", strlen(text));
    records_free(logs);
}

/* The gRPC deadline of the flood test: long, so that a caller that waited on the sender is told
   from a slow caller by a wide margin (the bounds are half of it). */
#define FLOOD_CALL_DEADLINE_MS 30000

Test(log_report, a_flood_with_the_collector_stopped_never_blocks_and_counts_drops)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    /* The sender's call to the stopped collector is stuck for up to FLOOD_CALL_DEADLINE_MS: a
       caller that waited on the sender would wait that long, whatever the load. */
    agent_start_with(c->port, FLOOD_CALL_DEADLINE_MS, "SW_LOG_QUEUE_SIZE", "64");
    records_wait(c, "event", 1); /* the sender has delivered once: it is up */
    cr_assert_eq(kill(c->pid, SIGSTOP), 0);

    const int n = 20000;
    int64_t worst_ns = 0;
    int64_t t0 = mono_ns();
    int refused = 0;
    for (int i = 0; i < n; i++) {
        int64_t a = mono_ns();
        refused += sw_log(SW_SEVERITY_INFO, "flood line %d", i) == SW_ELIMIT;
        int64_t d = mono_ns() - a;
        worst_ns = d > worst_ns ? d : worst_ns;
    }
    uint64_t total_ms = (uint64_t)((mono_ns() - t0) / 1000000);
    uint64_t worst_us = (uint64_t)(worst_ns / 1000);
    sw_stats_t mid;
    sw_stats(&mid);
    cr_assert_eq(kill(c->pid, SIGCONT), 0);
    sw_stats_t st = agent_stop();
    collector_stop(c);
    fprintf(stderr,
            "flood: %d lines in %llu ms, worst call %llu us; recorded %llu reported %llu "
            "dropped %llu failed %llu\n",
            n, (unsigned long long)total_ms, (unsigned long long)worst_us,
            (unsigned long long)st.logs_recorded, (unsigned long long)st.logs_reported,
            (unsigned long long)st.logs_dropped, (unsigned long long)st.logs_failed);

    cr_expect_eq(st.logs_recorded, (uint64_t)n);
    cr_expect_gt(mid.logs_dropped, 0, "a 64-slot queue with a stopped collector must drop");
    cr_expect_eq(st.logs_dropped, (uint64_t)refused, "every SW_ELIMIT is a counted drop");
    /* A caller that waited on the stuck sender would wait its whole deadline (30 s); the flood
       itself takes a few seconds at most, even under TSan on a loaded machine. */
    cr_expect_lt(total_ms, FLOOD_CALL_DEADLINE_MS / 2, "the flood took %llu ms: sw_log waited",
                 (unsigned long long)total_ms);
    cr_expect_lt(worst_us, FLOOD_CALL_DEADLINE_MS / 2 * 1000ULL,
                 "one sw_log took %llu us: it waited on the sender", (unsigned long long)worst_us);
    size_t held;
    records_free(records_of(c, "log", &held));
    cr_expect_eq(held, st.logs_reported, "the collector holds %zu lines, the agent reported %llu",
                 held, (unsigned long long)st.logs_reported);
}

Test(log_report, file_reporter_has_no_log_path_and_off_is_estate)
{
    cr_expect_eq(sw_log(SW_SEVERITY_INFO, "agent off"), SW_ESTATE);
    agent_test_start(agent_test_path(), NULL);
    cr_expect_eq(sw_log(SW_SEVERITY_INFO, "file reporter"), SW_ENOTSUP);
    cr_expect_eq(sw_log_kv(SW_SEVERITY_INFO, NULL, NULL, NULL, 0), SW_EINVAL);
    sw_stats_t st = agent_stop();
    cr_expect_eq(st.logs_recorded, 0);
    cr_expect_eq(sw_log(SW_SEVERITY_INFO, "after shutdown"), SW_ESTATE);
    cr_expect_str_eq(sw_log_severity_name(SW_SEVERITY_TRACE), "TRACE");
    cr_expect_str_eq(sw_log_severity_name((sw_log_severity_t)99), "UNKNOWN");
}

Test(log_report, a_forked_child_does_not_queue_into_the_parents_sender)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    agent_start(c->port, 10000);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        _exit(sw_log(SW_SEVERITY_INFO, "from the child") == SW_ESTATE ? 0 : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "sw_log in a forked child must say SW_ESTATE (status %d)", status);
    cr_expect_eq(sw_log(SW_SEVERITY_INFO, "from the parent"), 0);
    sw_stats_t st = agent_stop();
    collector_stop(c);
    cr_expect_eq(st.logs_reported, 1);
}

Test(log_report, log_settings_are_checked)
{
    sw_config_t cfg;
    sw_config_init(&cfg);
    cr_expect_eq(cfg.log_max_message_size, 10240);
    cr_expect_eq(cfg.log_queue_size, 1024);
    char err[256] = "";
    cr_expect_eq(sw_config_set(&cfg, "SW_LOG_MAX_MESSAGE_SIZE", "8", err, sizeof err), SW_ECONFIG);
    cr_expect(strstr(err, "SW_LOG_MAX_MESSAGE_SIZE") != NULL, "%s", err);
    cr_expect_eq(sw_config_set(&cfg, "SW_LOG_QUEUE_SIZE", "0", err, sizeof err), SW_ECONFIG);
    cr_expect(strstr(err, "SW_LOG_QUEUE_SIZE") != NULL, "%s", err);
    cr_expect_eq(sw_config_set(&cfg, "SW_LOG_MAX_MESSAGE_SIZE", "4096", err, sizeof err), 0);
    cr_expect_eq(cfg.log_max_message_size, 4096);
    cr_assert_eq(sw_config_set(&cfg, "SW_KAFKA_TOPIC_LOGGING", "bad topic!", err, sizeof err), 0);
    cr_expect_eq(sw_init(&cfg), SW_ECONFIG, "an invalid Kafka topic name must be refused");
    cr_expect(!sw_enabled());
}

/* ---- gRPC mutual TLS ---------------------------------------------------------------------- */

typedef struct pki {
    char dir[64];
    char ca[96], server_cert[96], server_key[96], client_cert[96], client_key[96];
} pki_t;

static void sh(const char *cmd)
{
    int rc = system(cmd);
    cr_assert_eq(rc, 0, "failed (%d): %s", rc, cmd);
}

/* A CA, a server certificate for 127.0.0.1 and a client certificate, all made by openssl. */
static void pki_make(pki_t *p)
{
    snprintf(p->dir, sizeof p->dir, "/tmp/sw-mtls-XXXXXX");
    cr_assert_not_null(mkdtemp(p->dir));
    snprintf(p->ca, sizeof p->ca, "%s/ca.pem", p->dir);
    snprintf(p->server_cert, sizeof p->server_cert, "%s/server.pem", p->dir);
    snprintf(p->server_key, sizeof p->server_key, "%s/server.key", p->dir);
    snprintf(p->client_cert, sizeof p->client_cert, "%s/client.pem", p->dir);
    snprintf(p->client_key, sizeof p->client_key, "%s/client.key", p->dir);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "cd %s && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca "
             "-keyout ca.key -out ca.pem >/dev/null 2>&1 && "
             "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key "
             "-out server.csr >/dev/null 2>&1 && "
             "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > server.ext && "
             "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 "
             "-extfile server.ext -out server.pem >/dev/null 2>&1 && "
             "openssl req -newkey rsa:2048 -nodes -subj /CN=sw-agent -keyout client.key "
             "-out client.csr >/dev/null 2>&1 && "
             "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 "
             "-out client.pem >/dev/null 2>&1",
             p->dir);
    sh(cmd);
}

static void pki_remove(const pki_t *p)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", p->dir);
    int rc = system(cmd);
    (void)rc;
}

/* The base64 body line of a PEM key: a piece of key material that must never be printed. */
static void key_line(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char line[256];
    out[0] = '\0';
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "-----", 5) != 0) {
            snprintf(out, len, "%.40s", line);
            break;
        }
    }
    fclose(f);
    cr_assert_gt(strlen(out), 20);
}

static void mtls_run(const pki_t *p, bool with_client_cert, sw_stats_t *st, char **err)
{
    collector_t *c = &the_collector;
    collector_tls_cert = p->server_cert;
    collector_tls_key = p->server_key;
    collector_tls_client_ca = p->ca;
    collector_start(c, 0, NULL, NULL);
    collector_tls_cert = collector_tls_key = collector_tls_client_ca = NULL;
    stderr_capture_t cap;
    stderr_capture_begin(&cap, c);
    size_t k = 0;
    agent_extra[k++] = "SW_AGENT_SSL";
    agent_extra[k++] = "true";
    agent_extra[k++] = "SW_AGENT_SSL_CA_FILE";
    agent_extra[k++] = p->ca;
    if (with_client_cert) {
        agent_extra[k++] = "SW_AGENT_SSL_KEY_PATH";
        agent_extra[k++] = p->client_key;
        agent_extra[k++] = "SW_AGENT_SSL_CERT_CHAIN_PATH";
        agent_extra[k++] = p->client_cert;
    }
    agent_extra[k] = NULL;
    agent_start(c->port, 5000);
    agent_extra[0] = NULL;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 20; i++) {
            sw_entry_span_begin("mtls", NULL);
            sw_log(SW_SEVERITY_INFO, "over mutual TLS %d", i);
            sw_span_end();
        }
        uint64_t deadline = now_ms() + WAIT_MS;
        for (;;) { /* bounded: every segment has an outcome */
            sw_stats(st);
            if (st->segments_reported + st->segments_failed + st->segments_dropped ==
                st->segments_finished) {
                break;
            }
            cr_assert_lt(now_ms(), deadline, "segments without an outcome after %d ms", WAIT_MS);
            poll_pause();
        }
    }
    *st = agent_stop();
    *err = stderr_capture_end(&cap);
    collector_stop(c);
}

Test(log_report, mutual_tls_with_and_without_a_client_certificate)
{
    pki_t p;
    pki_make(&p);
    char secret[64];
    key_line(p.client_key, secret, sizeof secret);

    sw_stats_t st;
    char *err;
    mtls_run(&p, true, &st, &err);
    cr_expect_eq(st.segments_reported, 100, "with a client certificate: %llu of 100 reported",
                 (unsigned long long)st.segments_reported);
    cr_expect_eq(st.logs_reported, 100, "%llu of 100 log lines reported",
                 (unsigned long long)st.logs_reported);
    size_t n;
    records_free(records_of(&the_collector, "segment", &n));
    cr_expect_eq(n, 100);
    cr_expect(strstr(err, secret) == NULL, "key material was printed");
    free(err);
    unlink(the_collector.out);

    mtls_run(&p, false, &st, &err);
    cr_expect_eq(st.segments_reported, 0,
                 "the collector must refuse an agent without a client "
                 "certificate");
    cr_expect_eq(st.segments_failed + st.segments_dropped, 100);
    cr_expect_eq(st.logs_reported, 0);
    records_free(records_of(&the_collector, "segment", &n));
    cr_expect_eq(n, 0, "the collector stored %zu segments of a refused agent", n);
    cr_expect_eq(occurrences(err, "SW_AGENT_SSL_KEY_PATH"), 1,
                 "the missing client certificate should be said exactly once");
    free(err);
    pki_remove(&p);
}

Test(log_report, client_certificate_settings_are_checked)
{
    pki_t p;
    pki_make(&p);
    char secret[64];
    key_line(p.client_key, secret, sizeof secret);
    sw_config_t cfg;
    char err[512] = "";
    sw_config_init(&cfg);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_SSL_KEY_PATH", p.client_key, err, sizeof err), 0);
    cr_expect_eq(sw_init(&cfg), SW_ECONFIG, "a key without a chain must be refused");
    /* A chain file given as the key: no private key in it, and nothing of it printed. */
    sw_config_init(&cfg);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_SSL_KEY_PATH", p.client_cert, err, sizeof err), 0);
    cr_assert_eq(
        sw_config_set(&cfg, "SW_AGENT_SSL_CERT_CHAIN_PATH", p.client_cert, err, sizeof err), 0);
    cr_expect_eq(sw_init(&cfg), SW_ECONFIG);
    /* The key given as the chain: refused, and the key's content not in the message. */
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    stderr_capture_t cap;
    stderr_capture_begin(&cap, c);
    sw_config_init(&cfg);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_SSL_KEY_PATH", p.client_key, err, sizeof err), 0);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_SSL_CERT_CHAIN_PATH", p.client_key, err, sizeof err),
                 0);
    cr_expect_eq(sw_init(&cfg), SW_ECONFIG);
    char *text = stderr_capture_end(&cap);
    cr_expect(strstr(text, "SW_AGENT_SSL_CERT_CHAIN_PATH") != NULL, "%s", text);
    cr_expect(strstr(text, secret) == NULL, "key material was printed");
    free(text);
    cr_expect(!sw_enabled());
    pki_remove(&p);
}
