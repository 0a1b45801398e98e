/*
 * test_profile.c - trace profiling against the real gRPC collector (tests/support/
 * grpc_collector.py serves ProfileTask: tasks from a file, snapshots and finish reports
 * recorded), through the public API, with real threads and real signals:
 *
 *   - a task for "/slow": requests spend their time in handle_slow -> parse_rows ->
 *     checksum_block; the snapshots name those functions in that order (outermost first), with
 *     sequences 0, 1, ... per segment, times inside the task's window, for no more segments than
 *     MaxSamplingCount (the later "/slow" requests are not profiled), only segments whose first
 *     span is "/slow"; a request context attached to another thread is sampled there; C++
 *     frames come out demangled; the task ends on time and reportTaskFinish is sent;
 *   - a task for another endpoint samples nothing, and still finishes;
 *   - with the Kafka reporter no profiler thread runs (the OAP takes profiles over gRPC only);
 *   - hostile commands (a 0 or negative dump period, a huge count, garbage, a missing endpoint,
 *     a repeated task id) are refused with a logged reason naming the argument.
 *
 * A task's shortest Duration is one minute: the tests give StartTime in the past so that the
 * window left is a few seconds (the protocol allows it; the Java agent starts such a task at
 * once).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grpc_collector_proc.h"
#include "skywalking.h"
#include "test_agent_support.h"
#include "thread_stat.h"

uint64_t profile_cxx_request(int ms);

/* Under TSan a signal's handler runs when the thread next enters TSan's runtime, with the
   context of the moment the signal arrived: the stack has moved on by then, so what the frames
   name is not asserted there (everything else is). */
#if defined(__SANITIZE_THREAD__)
#define STACKS_EXACT 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STACKS_EXACT 0
#endif
#endif
#ifndef STACKS_EXACT
#define STACKS_EXACT 1
#endif

/* ---- the traced program ------------------------------------------------------------------ */

static volatile uint64_t sink;
static uint8_t block[4096];

__attribute__((noinline)) static uint64_t checksum_block(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 1099511628211u;
    }
    return h;
}

__attribute__((noinline)) static uint64_t parse_rows(int ms)
{
    uint64_t end = now_ms() + (uint64_t)ms, h = 0;
    while (now_ms() < end) {
        h += checksum_block(block, sizeof block);
    }
    return h + 1; /* not a tail call */
}

__attribute__((noinline)) static void handle_slow(int ms)
{
    sink += parse_rows(ms);
    sink++;
}

/* One "/slow" request through the span stack. */
static void request_slow(int ms)
{
    sw_entry_span_begin("/slow", NULL);
    handle_slow(ms);
    sw_span_end();
}

static void request_fast(void)
{
    sw_entry_span_begin("/fast", NULL);
    sink += checksum_block(block, 64);
    sw_span_end();
}

/* A "/slow" request context, begun here and run on another thread that attaches it. */
static void *attached_worker(void *arg)
{
    sw_span_ref_t *ref = arg;
    sw_attach_t saved;
    cr_assert_eq(sw_context_attach(*ref, &saved), 0);
    handle_slow(400);
    cr_assert_eq(sw_context_detach(&saved), 0);
    return NULL;
}

static void request_context_slow(void)
{
    sw_span_ref_t entry;
    cr_assert_eq(sw_context_begin_entry("/slow", NULL, &entry), 0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, attached_worker, &entry), 0);
    pthread_join(t, NULL);
    cr_assert_eq(sw_span_ref_end(entry), 0);
}

static void request_cxx(void)
{
    sw_entry_span_begin("/slow", NULL);
    sink += profile_cxx_request(400);
    sw_span_end();
}

/* ---- the agent's log lines ------------------------------------------------------------------ */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 16];
static size_t log_len;

static void log_handler(sw_log_level_t level, const char *message, void *opaque)
{
    (void)level;
    (void)opaque;
    pthread_mutex_lock(&log_lock);
    int n = snprintf(log_text + log_len, sizeof log_text - log_len, "%s\n", message);
    if (n > 0 && log_len + (size_t)n < sizeof log_text) {
        log_len += (size_t)n;
    }
    pthread_mutex_unlock(&log_lock);
}

static bool log_has(const char *needle)
{
    pthread_mutex_lock(&log_lock);
    bool found = strstr(log_text, needle) != NULL;
    pthread_mutex_unlock(&log_lock);
    return found;
}

static void wait_log(const char *needle)
{
    uint64_t deadline = now_ms() + WAIT_MS;
    while (!log_has(needle)) {
        cr_assert(now_ms() < deadline, "no log line with \"%s\" within %d ms; log:\n%s", needle,
                  WAIT_MS, log_text);
        poll_pause();
    }
}

/* ---- the collector and the agent ----------------------------------------------------------- */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The window left of a one-minute task: it began this long before now. */
#define WINDOW_MS 5000

static char task_file[256];

/* Writes the tasks file: `tasks` is the JSON list. */
static void tasks_write(const char *tasks)
{
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", task_file);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f);
    fputs(tasks, f);
    fclose(f);
    cr_assert_eq(rename(tmp, task_file), 0); /* whole, as the collector may read it any time */
}

/* A valid task's JSON object for `endpoint`, whose one-minute window ends WINDOW_MS from now;
 *start_ms and *end_ms say its window. */
static void task_json(char *buf, size_t len, const char *id, const char *endpoint,
                      int64_t *start_ms, int64_t *end_ms)
{
    int64_t now = wall_ms();
    *start_ms = now - 60000 + WINDOW_MS;
    *end_ms = *start_ms + 60000;
    snprintf(buf, len,
             "{\"TaskId\": \"%s\", \"EndpointName\": \"%s\", \"Duration\": \"1\", "
             "\"MinDurationThreshold\": \"50\", \"DumpPeriod\": \"20\", "
             "\"MaxSamplingCount\": \"3\", \"StartTime\": \"%lld\", \"CreateTime\": \"%lld\"}",
             id, endpoint, (long long)*start_ms, (long long)now);
}

/* Starts the collector, serving tasks from a file not written yet (no task). */
static void collector_up(void)
{
    collector_t *c = &the_collector;
    snprintf(c->dir, sizeof c->dir, "/tmp/sw-grpc-test-XXXXXX"); /* as collector_start does */
    cr_assert_not_null(mkdtemp(c->dir));
    snprintf(c->out, sizeof c->out, "%.120s/records.jsonl", c->dir);
    snprintf(c->port_file, sizeof c->port_file, "%.120s/port", c->dir);
    snprintf(task_file, sizeof task_file, "%s/tasks.json", the_collector.dir);
    collector_profile_task_file = task_file;
    collector_start(&the_collector, 0, NULL, NULL);
}

/* Writes the tasks (the collector is up: their window starts counting now), starts the agent. */
static void start_all(const char *tasks_json)
{
    tasks_write(tasks_json);
    sw_set_log_handler(log_handler, NULL);
    sw_config_t cfg;
    sw_config_init(&cfg);
    char err[256] = "", text[64];
    snprintf(text, sizeof text, "127.0.0.1:%d", the_collector.port);
    cr_assert_eq(sw_config_set(&cfg, "SW_REPORTER", "grpc", err, sizeof err), 0, "%s", err);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_COLLECTOR_BACKEND_SERVICES", text, err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_PROFILE_CHECK_INTERVAL", "1", err, sizeof err), 0);
    cr_assert_eq(sw_config_set(&cfg, "SW_BUFFER_CONSUME_CYCLE_MS", "20", err, sizeof err), 0);
    snprintf(cfg.service_name, sizeof cfg.service_name, "profile-test");
    snprintf(cfg.instance_name, sizeof cfg.instance_name, "profile-test-instance");
    cr_assert_eq(sw_init(&cfg), 0);
}

/* Lines of the collector's records of `kind` (malloc'd, NULL-ended). */
static char **records_of(const char *kind, size_t *count)
{
    size_t n = 0, cap = 64;
    char **out = calloc(cap + 1, sizeof *out);
    FILE *f = fopen(the_collector.out, "r");
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t len;
    char k[32];
    while (f != NULL && (len = getline(&line, &line_cap, f)) > 0) {
        if (line[len - 1] != '\n' || !json_string(line, "kind", k, sizeof k) ||
            strcmp(k, kind) != 0) {
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

static long long json_int(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(line, pat);
    cr_assert_not_null(p, "no %s in %s", key, line);
    return strtoll(p + strlen(pat), NULL, 10);
}

/* Waits for the finish report of `task`, and checks it came at the window's end. */
static void wait_finish(const char *task, int64_t end_ms)
{
    uint64_t deadline = now_ms() + WINDOW_MS + WAIT_MS;
    for (;;) {
        size_t n;
        char **fin = records_of("profile_finish", &n);
        char id[64];
        bool found = false;
        for (size_t i = 0; i < n; i++) {
            if (json_string(fin[i], "taskId", id, sizeof id) && strcmp(id, task) == 0) {
                long long at = json_int(fin[i], "received");
                cr_assert(at >= end_ms && at <= end_ms + 3000,
                          "reportTaskFinish at %lld, the window ends at %lld", at,
                          (long long)end_ms);
                cr_assert(strstr(fin[i], "\"serviceInstance\": \"profile-test-instance\"") != NULL);
                found = true;
            }
        }
        records_free(fin);
        if (found) {
            return;
        }
        cr_assert(now_ms() < deadline, "no reportTaskFinish for %s", task);
        poll_pause();
    }
}

static void fini(void)
{
    sw_set_log_handler(NULL, NULL);
    unlink(task_file);
    collector_fini();
}

/* ---- the tests ----------------------------------------------------------------------------- */

/* The position of `frame` (a function name followed by " (") in a snapshot's stack, or NULL. */
static const char *frame_at(const char *line, const char *frame)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s (", frame);
    return strstr(line, pat);
}

Test(profile, slow_endpoint_sampled_in_order, .fini = fini, .timeout = 120)
{
    char task[512];
    int64_t start_ms, end_ms;
    collector_up();
    task_json(task, sizeof task, "task-slow", "/slow", &start_ms, &end_ms);
    char list[600];
    snprintf(list, sizeof list, "[%s]", task);
    start_all(list);
    wait_log("profile task 'task-slow' started");

    request_fast();
    request_slow(400);      /* profiled: 1 */
    request_context_slow(); /* profiled: 2, sampled on the thread it is attached to */
    request_cxx();          /* profiled: 3 */
    request_slow(300);      /* MaxSamplingCount 3: not profiled */
    request_fast();
    wait_finish("task-slow", end_ms);

    size_t n;
    char **snaps = records_of("snapshot", &n);
    cr_assert_gt(n, 0, "no snapshot");
    size_t segments = 0, ordered = 0, cxx = 0, lines = 0;
    char first[2048];
    snprintf(first, sizeof first, "%s", snaps[0]);
    char seg_ids[8][64];
    long long last_seq[8];
    for (size_t i = 0; i < n; i++) {
        const char *line = snaps[i];
        char id[64], task_id[64];
        cr_assert(json_string(line, "traceSegmentId", id, sizeof id), "%s", line);
        cr_assert(json_string(line, "taskId", task_id, sizeof task_id) &&
                  strcmp(task_id, "task-slow") == 0);
        long long t = json_int(line, "time");
        cr_assert(t >= start_ms && t <= end_ms, "snapshot time %lld outside [%lld, %lld]", t,
                  (long long)start_ms, (long long)end_ms);
        size_t k = 0;
        while (k < segments && strcmp(seg_ids[k], id) != 0) {
            k++;
        }
        if (k == segments) {
            cr_assert_lt(segments, 3, "more segments profiled than MaxSamplingCount 3");
            snprintf(seg_ids[segments], sizeof seg_ids[0], "%s", id);
            last_seq[segments++] = -1;
        }
        long long seq = json_int(line, "sequence");
        cr_assert_eq(seq, last_seq[k] + 1, "segment %s: sequence %lld after %lld", id, seq,
                     last_seq[k]);
        last_seq[k] = seq;
        const char *h = frame_at(line, "handle_slow"), *p = frame_at(line, "parse_rows"),
                   *c = frame_at(line, "checksum_block");
        if (h != NULL && p != NULL && c != NULL) {
            cr_assert(h < p && p < c, "frames out of order (outermost first): %s", line);
            ordered++;
        }
        if (strstr(line, "\"parse_rows (test_profile.c:") != NULL) {
            lines++; /* file:line from DWARF */
        }
        if (strstr(line, "\"slowcxx::Table::scan(int) (") != NULL) {
            cxx++;
        }
    }
    records_free(snaps);
    cr_assert_eq(segments, 3, "profiled %zu segments, want 3", segments);
    if (!STACKS_EXACT) {
        cr_log_info("TSan: frames not checked (%zu of %zu in order)", ordered, n);
        ordered = 4;
        cxx = lines = 1;
    }
    cr_assert_geq(ordered, 4,
                  "handle_slow -> parse_rows -> checksum_block in %zu snapshots; the first: %s",
                  ordered, first);
    cr_assert_gt(cxx, 0, "no demangled C++ frame \"slowcxx::Table::scan(int) (...)\"");
    cr_assert_gt(lines, 0, "no frame \"parse_rows (test_profile.c:N)\"; the first: %s", first);

    /* Every profiled segment's first span is "/slow" (the collector has the segments). */
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_reported, 6);
    size_t ns;
    char **segs = records_of("segment", &ns);
    for (size_t k = 0; k < segments; k++) {
        bool found = false;
        for (size_t i = 0; i < ns; i++) {
            char id[64];
            if (json_string(segs[i], "traceSegmentId", id, sizeof id) &&
                strcmp(id, seg_ids[k]) == 0) {
                cr_assert(strstr(segs[i], "\"operations\": [\"/slow\"") != NULL, "%s", segs[i]);
                found = true;
            }
        }
        cr_assert(found, "profiled segment %s was not reported", seg_ids[k]);
    }
    records_free(segs);
}

Test(profile, other_endpoint_samples_nothing, .fini = fini, .timeout = 120)
{
    char task[512];
    int64_t start_ms, end_ms;
    collector_up();
    task_json(task, sizeof task, "task-other", "/other", &start_ms, &end_ms);
    char list[600];
    snprintf(list, sizeof list, "[%s]", task);
    start_all(list);
    wait_log("profile task 'task-other' started");
    request_slow(300);
    request_slow(300);
    wait_finish("task-other", end_ms);
    size_t n;
    char **snaps = records_of("snapshot", &n);
    records_free(snaps);
    cr_assert_eq(n, 0, "%zu snapshots for a task of another endpoint", n);
    agent_test_stop();
}

Test(profile, hostile_commands_refused, .fini = fini, .timeout = 120)
{
    char ok[512];
    int64_t start_ms, end_ms;
    collector_up();
    task_json(ok, sizeof ok, "t-ok", "/slow", &start_ms, &end_ms);
    long long now = (long long)wall_ms();
    char list[4096];
    snprintf(list, sizeof list,
             "[{\"TaskId\": \"t-dump0\", \"EndpointName\": \"/slow\", \"Duration\": \"1\", "
             "\"MinDurationThreshold\": \"0\", \"DumpPeriod\": \"0\", \"MaxSamplingCount\": "
             "\"3\", \"StartTime\": \"%lld\", \"CreateTime\": \"%lld\"},"
             "{\"TaskId\": \"t-dumpneg\", \"EndpointName\": \"/slow\", \"Duration\": \"1\", "
             "\"MinDurationThreshold\": \"0\", \"DumpPeriod\": \"-5\", \"MaxSamplingCount\": "
             "\"3\", \"StartTime\": \"%lld\", \"CreateTime\": \"%lld\"},"
             "{\"TaskId\": \"t-huge\", \"EndpointName\": \"/slow\", \"Duration\": \"1\", "
             "\"MinDurationThreshold\": \"0\", \"DumpPeriod\": \"20\", \"MaxSamplingCount\": "
             "\"99999999999999999999\", \"StartTime\": \"%lld\", \"CreateTime\": \"%lld\"},"
             "{\"TaskId\": \"t-garbage\", \"EndpointName\": \"/slow\", \"Duration\": \"1x\", "
             "\"MinDurationThreshold\": \"\\u0001\\u00ff\", \"DumpPeriod\": \"20\", "
             "\"MaxSamplingCount\": \"3\", \"StartTime\": \"%lld\", \"CreateTime\": \"%lld\"},"
             "{\"TaskId\": \"t-noendpoint\", \"Duration\": \"1\", \"MinDurationThreshold\": "
             "\"0\", \"DumpPeriod\": \"20\", \"MaxSamplingCount\": \"3\", \"StartTime\": "
             "\"%lld\", \"CreateTime\": \"%lld\"},"
             "%s,"
             "{\"TaskId\": \"t-ok\", \"EndpointName\": \"/again\", \"Duration\": \"1\", "
             "\"MinDurationThreshold\": \"0\", \"DumpPeriod\": \"20\", \"MaxSamplingCount\": "
             "\"3\", \"StartTime\": \"%lld\", \"CreateTime\": \"%lld\"}]",
             now, now, now, now, now, now, now, now, now, now, ok, now + 120000, now + 1);
    start_all(list);
    wait_log("profile task 't-ok' started");
    wait_log("profile task 't-ok' refused: this task id was received before");
    const char *reasons[] = {
        "profile task 't-dump0' refused: DumpPeriod must be an integer in 10..60000 ms (got '0')",
        "profile task 't-dumpneg' refused: DumpPeriod must be an integer in 10..60000 ms (got "
        "'-5')",
        "profile task 't-huge' refused: MaxSamplingCount must be an integer in 1..10",
        "profile task 't-garbage' refused: Duration must be an integer in 1..15 minutes (got "
        "'1x')",
        "profile task 't-noendpoint' refused: EndpointName missing",
    };
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
        cr_assert(log_has(reasons[i]), "no \"%s\" in the log:\n%s", reasons[i], log_text);
    }
    /* The refused tasks are not asked for again: lastCommandTime moved past them. */
    size_t n;
    char **q = records_of("profile_query", &n);
    uint64_t deadline = now_ms() + WAIT_MS;
    while (n < 2) {
        records_free(q);
        cr_assert(now_ms() < deadline, "the agent asked for tasks only once");
        poll_pause();
        q = records_of("profile_query", &n);
    }
    cr_assert_eq(json_int(q[n - 1], "lastCommandTime"), now + 1, "%s", q[n - 1]);
    records_free(q);
    wait_finish("t-ok", end_ms);
    agent_test_stop();
}

Test(profile, kafka_reporter_never_profiles, .fini = fini, .timeout = 120)
{
    /* The positive control first: with gRPC the profiler's thread runs. */
    collector_up();
    start_all("[]");
    uint64_t deadline = now_ms() + WAIT_MS;
    while (!thread_stat_read("sw-profile", NULL, NULL)) {
        cr_assert(now_ms() < deadline, "no sw-profile thread with the gRPC reporter");
        poll_pause();
    }
    agent_test_stop();
    cr_assert(!thread_stat_read("sw-profile", NULL, NULL), "sw-profile outlived sw_shutdown");
    sw_config_t cfg;
    sw_config_init(&cfg);
    char err[256] = "";
    cr_assert_eq(sw_config_set(&cfg, "SW_REPORTER", "kafka", err, sizeof err), 0, "%s", err);
    cr_assert_eq(sw_config_set(&cfg, "SW_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1", err, sizeof err),
                 0);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_PROFILE_ACTIVE", "true", err, sizeof err), 0);
    cr_assert_eq(sw_init(&cfg), 0);
    cr_assert(!thread_stat_read("sw-profile", NULL, NULL), "a profiler thread with Kafka");
    cr_assert(!thread_stat_read("sw-prof-sample", NULL, NULL));
    sw_shutdown();
}
