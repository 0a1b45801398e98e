/*
 * reporter_bench.c - the agent end to end, per reporter: N application threads finish 5-span
 * segments as fast as they can for a fixed time while the agent reports them through the file,
 * Kafka (a real broker) and gRPC (tests/support/grpc_collector.py) reporters.
 *
 * For each reporter it prints segments/s produced (finished by the threads), delivered
 * (reported: written, acknowledged by Kafka, or accepted by the collector) and dropped (the
 * DataCarrier was full: the threads never wait), and the host-thread cost per segment (thread
 * CPU time / segments) against the same loop with the agent off, measured in the same run:
 * the ratio is what tracing costs the application per segment.
 *
 * sw_init/sw_shutdown are once per process, so every variant runs in a forked child that sends
 * its figures back through a pipe. The parent starts no thread of its own before forking.
 *
 * Kafka: --bootstrap host:port, else the ctest fixture's broker (smoke run), else a private
 * one-node broker started through tests/support/kafka/broker.sh. gRPC: the collector is
 * started with /usr/bin/python3 on a free loopback port; without it (or without the gRPC
 * reporter in this build) the gRPC figures are -1.
 *
 * Usage: reporter_bench [--smoke] [--seconds S] [--threads N] [--bootstrap host:port]
 * Last line: name=value pairs, among them kafka_delivered_per_s, grpc_delivered_per_s and
 * host_overhead_ratio (Kafka reporter's host cost / agent off).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kafka_test_env.h"
#include "skywalking.h"

#define THREADS_MAX 64

typedef enum { VARIANT_OFF, VARIANT_FILE, VARIANT_KAFKA, VARIANT_GRPC } variant_t;

static const char *const variant_names[] = {"off", "file", "kafka", "grpc"};

/* What a child measured; sent to the parent through a pipe. */
typedef struct result {
    int ok;            /* 0: the agent could not start with this reporter */
    double load_s;     /* how long the threads ran */
    double total_s;    /* load + sw_shutdown (drain, flush, close) */
    uint64_t segments; /* loop iterations of all threads */
    double host_cpu_ns_per_segment;
    sw_stats_t stats;
} result_t;

typedef struct options {
    double seconds;
    int threads;
    const char *bootstrap;
    char file_path[512];
    char grpc_backend[64];
} options_t;

/* The threads' stop flag: set once by the child's main thread. Relaxed: it publishes no data
   (each thread's counts are read after pthread_join, which orders them). */
static atomic_bool stop_flag;

typedef struct worker {
    pthread_t thread;
    uint64_t segments; /* written by the worker, read after join */
    double cpu_ns;
} worker_t;

static double clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One segment of 5 spans: entry { local, exit (tagged), local, exit }. */
static void segment_make(void)
{
    sw_entry_span_begin("GET /orders/{id}", NULL);
    sw_local_span_begin("orders.validate");
    sw_span_end();
    sw_exit_span_begin("PostgreSQL/SELECT", "postgres:5432");
    sw_span_tag("db.statement", "SELECT * FROM orders WHERE id = $1");
    sw_span_end();
    sw_local_span_begin("orders.render");
    sw_span_end();
    sw_exit_span_begin("POST /inventory/reserve", "inventory:8080");
    sw_span_end();
    sw_span_end();
}

static void *worker_run(void *arg)
{
    worker_t *w = arg;
    double cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t n = 0;
    while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
        for (int i = 0; i < 64; i++)
            segment_make();
        n += 64;
    }
    w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    w->segments = n;
    return NULL;
}

static int agent_start(variant_t v, const options_t *o, const char *bootstrap)
{
    if (v == VARIANT_OFF)
        return 0;
    sw_config_t cfg;
    char err[512];
    sw_config_init(&cfg);
    int rc = sw_config_set(&cfg, "SW_AGENT_NAME", "reporter-bench", err, sizeof err);
    rc = rc ? rc : sw_config_set(&cfg, "SW_REPORTER", variant_names[v], err, sizeof err);
    if (rc == 0 && v == VARIANT_FILE)
        rc = sw_config_set(&cfg, "SW_REPORTER_FILE_PATH", o->file_path, err, sizeof err);
    if (rc == 0 && v == VARIANT_KAFKA)
        rc = sw_config_set(&cfg, "SW_KAFKA_BOOTSTRAP_SERVERS", bootstrap, err, sizeof err);
    if (rc == 0 && v == VARIANT_GRPC)
        rc = sw_config_set(&cfg, "SW_AGENT_COLLECTOR_BACKEND_SERVICES", o->grpc_backend, err,
                           sizeof err);
    if (rc != 0) {
        fprintf(stderr, "reporter_bench: %s\n", err);
        return rc;
    }
    return sw_init(&cfg);
}

/* The child: start the agent, run the threads for o->seconds, shut down, measure. */
static result_t variant_measure(variant_t v, const options_t *o, const char *bootstrap)
{
    result_t r;
    memset(&r, 0, sizeof r);
    if (agent_start(v, o, bootstrap) != 0)
        return r;
    worker_t w[THREADS_MAX];
    memset(w, 0, sizeof w);
    double t0 = clock_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < o->threads; i++) {
        if (pthread_create(&w[i].thread, NULL, worker_run, &w[i]) != 0)
            return r;
    }
    struct timespec load = {(time_t)o->seconds,
                            (long)((o->seconds - (double)(time_t)o->seconds) * 1e9)};
    while (nanosleep(&load, &load) != 0 && errno == EINTR)
        ;
    atomic_store_explicit(&stop_flag, true, memory_order_relaxed);
    double cpu = 0;
    for (int i = 0; i < o->threads; i++) {
        pthread_join(w[i].thread, NULL);
        r.segments += w[i].segments;
        cpu += w[i].cpu_ns;
    }
    double t1 = clock_ns(CLOCK_MONOTONIC);
    if (v != VARIANT_OFF)
        sw_shutdown();
    double t2 = clock_ns(CLOCK_MONOTONIC);
    sw_stats(&r.stats);
    r.ok = 1;
    r.load_s = (t1 - t0) / 1e9;
    r.total_s = (t2 - t0) / 1e9;
    r.host_cpu_ns_per_segment = r.segments ? cpu / (double)r.segments : 0;
    return r;
}

/* Runs variant v in a forked child and returns what it measured (ok = 0 on any failure). */
static result_t variant_run(variant_t v, const options_t *o, const char *bootstrap)
{
    result_t r;
    memset(&r, 0, sizeof r);
    int fds[2];
    if (pipe(fds) != 0)
        return r;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        result_t mine = variant_measure(v, o, bootstrap);
        ssize_t n = write(fds[1], &mine, sizeof mine);
        _exit(n == (ssize_t)sizeof mine ? 0 : 1);
    }
    close(fds[1]);
    if (pid > 0) {
        size_t got = 0;
        while (got < sizeof r) {
            ssize_t n = read(fds[0], (char *)&r + got, sizeof r - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (got != sizeof r)
            memset(&r, 0, sizeof r);
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    close(fds[0]);
    return r;
}

/* Starts the collector; fills o->grpc_backend and *pid. Returns 0 or -1 (no collector). */
static int collector_start(options_t *o, const char *dir, pid_t *pid)
{
#ifdef SW_GRPC_COLLECTOR_PY
    const char *script = SW_GRPC_COLLECTOR_PY;
#else
    const char *script = "tests/support/grpc_collector.py";
#endif
    if (access(script, R_OK) != 0 || access("/usr/bin/python3", X_OK) != 0) {
        fprintf(stderr, "reporter_bench: no gRPC collector (%s); gRPC left out\n", script);
        return -1;
    }
    char port_file[600], out[600];
    snprintf(port_file, sizeof port_file, "%s/grpc.port", dir);
    snprintf(out, sizeof out, "%s/grpc.jsonl", dir);
    char *argv[] = {
        "/usr/bin/python3", (char *)script, "--port-file", port_file, "--out", out, NULL};
    if (posix_spawn(pid, argv[0], NULL, NULL, argv, environ) != 0)
        return -1;
    /* A benchmark's bounded wait for the server: up to 60 s for the port file. */
    for (int i = 0; i < 600; i++) {
        FILE *f = fopen(port_file, "r");
        int port = 0;
        if (f != NULL) {
            int ok = fscanf(f, "%d", &port);
            fclose(f);
            if (ok == 1 && port > 0) {
                snprintf(o->grpc_backend, sizeof o->grpc_backend, "127.0.0.1:%d", port);
                return 0;
            }
        }
        int status;
        if (waitpid(*pid, &status, WNOHANG) == *pid) {
            fprintf(stderr, "reporter_bench: the gRPC collector exited\n");
            return -1;
        }
        struct timespec tick = {0, 100 * 1000 * 1000};
        nanosleep(&tick, NULL);
    }
    fprintf(stderr, "reporter_bench: the gRPC collector did not serve within 60 s\n");
    kill(*pid, SIGKILL);
    waitpid(*pid, NULL, 0);
    return -1;
}

static void collector_stop(pid_t pid)
{
    kill(pid, SIGTERM);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

static double per_s(uint64_t n, double s)
{
    return s > 0 ? (double)n / s : 0;
}

static void result_print(variant_t v, const result_t *r, double off_ns)
{
    if (!r->ok) {
        printf("%-5s  not measured (the agent did not start with this reporter)\n",
               variant_names[v]);
        return;
    }
    const sw_stats_t *s = &r->stats;
    printf("%-5s  produced %9.0f/s  delivered %9.0f/s  dropped %9.0f/s  failed %llu  "
           "host %.0f ns/segment (x%.2f of agent off)  shutdown %.2f s\n",
           variant_names[v], per_s(s->segments_finished, r->load_s),
           per_s(s->segments_reported, r->total_s), per_s(s->segments_dropped, r->load_s),
           (unsigned long long)s->segments_failed, r->host_cpu_ns_per_segment,
           off_ns > 0 ? r->host_cpu_ns_per_segment / off_ns : 0, r->total_s - r->load_s);
    if (s->segments_finished != s->segments_reported + s->segments_dropped + s->segments_failed)
        printf("%-5s  ACCOUNTING MISMATCH: finished %llu\n", variant_names[v],
               (unsigned long long)s->segments_finished);
}

static int options_parse(int argc, char **argv, options_t *o)
{
    o->seconds = 3;
    o->threads = 2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            o->seconds = 0.25;
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            o->seconds = atof(argv[++i]);
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            o->threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--bootstrap") == 0 && i + 1 < argc) {
            o->bootstrap = argv[++i];
        } else {
            fprintf(stderr,
                    "usage: %s [--smoke] [--seconds S] [--threads N] "
                    "[--bootstrap host:port]\n",
                    argv[0]);
            return -1;
        }
    }
    if (o->seconds <= 0 || o->seconds > 600 || o->threads < 1 || o->threads > THREADS_MAX) {
        fprintf(stderr, "reporter_bench: --seconds must be in (0, 600], --threads in 1..%d\n",
                THREADS_MAX);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    options_t o;
    memset(&o, 0, sizeof o);
    if (options_parse(argc, argv, &o) != 0)
        return 2;
    char dir[] = "/tmp/reporter-bench-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("reporter_bench: mkdtemp");
        return 1;
    }
    snprintf(o.file_path, sizeof o.file_path, "%s/segments.bin", dir);
    char kafka_dir[256];
    snprintf(kafka_dir, sizeof kafka_dir, "%s/kafka", dir);
    sw_test_kafka_t k;
    int have_kafka =
        sw_test_kafka_bootstrap_or_start(&k, o.bootstrap, kafka_dir,
                                         "skywalking-segments:3 skywalking-managements:1") == 0;
    pid_t collector = -1;
    int have_grpc = collector_start(&o, dir, &collector) == 0;

    printf("reporter_bench: %d threads, %.2f s per reporter, 5-span segments\n", o.threads,
           o.seconds);
    result_t off = variant_run(VARIANT_OFF, &o, NULL);
    double off_ns = off.host_cpu_ns_per_segment;
    printf("off    host %.1f ns/segment (the same loop, agent not started)\n", off_ns);
    result_t res[4] = {off};
    res[VARIANT_FILE] = variant_run(VARIANT_FILE, &o, NULL);
    result_print(VARIANT_FILE, &res[VARIANT_FILE], off_ns);
    fflush(stdout);
    unlink(o.file_path);
    if (have_kafka) {
        res[VARIANT_KAFKA] = variant_run(VARIANT_KAFKA, &o, k.bootstrap);
        result_print(VARIANT_KAFKA, &res[VARIANT_KAFKA], off_ns);
        fflush(stdout);
        sw_test_kafka_stop(&k); /* a private broker's JVM must not compete with gRPC's run */
    }
    if (have_grpc) {
        res[VARIANT_GRPC] = variant_run(VARIANT_GRPC, &o, NULL);
        result_print(VARIANT_GRPC, &res[VARIANT_GRPC], off_ns);
        collector_stop(collector);
    }

    double v[4][4]; /* produced, delivered, dropped, ratio; -1 when not measured */
    for (int i = VARIANT_FILE; i <= VARIANT_GRPC; i++) {
        const result_t *r = &res[i];
        v[i][0] = r->ok ? per_s(r->stats.segments_finished, r->load_s) : -1;
        v[i][1] = r->ok ? per_s(r->stats.segments_reported, r->total_s) : -1;
        v[i][2] = r->ok ? per_s(r->stats.segments_dropped, r->load_s) : -1;
        v[i][3] = r->ok && off_ns > 0 ? r->host_cpu_ns_per_segment / off_ns : -1;
    }
    char grpc_log[700];
    snprintf(grpc_log, sizeof grpc_log, "%s/grpc.jsonl", dir);
    unlink(grpc_log);
    char port_file[700];
    snprintf(port_file, sizeof port_file, "%s/grpc.port", dir);
    unlink(port_file);
    rmdir(kafka_dir);
    rmdir(dir);
    printf("threads=%d seconds=%.2f host_ns_off=%.1f file_produced_per_s=%.0f "
           "file_delivered_per_s=%.0f file_dropped_per_s=%.0f file_overhead_ratio=%.2f "
           "kafka_produced_per_s=%.0f kafka_delivered_per_s=%.0f kafka_dropped_per_s=%.0f "
           "grpc_produced_per_s=%.0f grpc_delivered_per_s=%.0f grpc_dropped_per_s=%.0f "
           "grpc_overhead_ratio=%.2f host_overhead_ratio=%.2f\n",
           o.threads, o.seconds, off_ns, v[1][0], v[1][1], v[1][2], v[1][3], v[2][0], v[2][1],
           v[2][2], v[3][0], v[3][1], v[3][2], v[3][3], v[2][3]);
    /* The Kafka figures are the point of the smoke run (label kafka): missing ones fail it. */
    return res[VARIANT_FILE].ok && off.ok && res[VARIANT_KAFKA].ok ? 0 : 1;
}
