/*
 * reporter_bench.c - the agent end to end, per reporter: N application threads finish 5-span
 * segments for a fixed time while the agent reports them through the file, Kafka (a real
 * broker) and gRPC (tests/support/grpc_collector.py) reporters, and through Kafka and gRPC
 * reporters whose backend is down for the whole run (bootstrap and collector addresses point
 * at a closed loopback port).
 *
 * Two loads, each measured against the agent off in the same run:
 *   flat   the threads finish segments as fast as they can. The cost per segment is then a mix
 *          of recorded segments and segments dropped because the DataCarrier is full.
 *   paced  each thread finishes a segment, then does ~2 us of busy work (calibrated at start).
 *          The host program's throughput is what a real service sees; the ratio of CPU time per
 *          iteration against the agent off is the host overhead (1.00 = unaffected).
 *
 * For each variant it prints segments/s produced (finished by the threads), delivered
 * (reported: written, acknowledged by Kafka, or accepted by the collector) and dropped (the
 * DataCarrier was full: the threads never wait), the host-thread CPU time per segment and its
 * ratio to the agent off (and, for the backend-down variants, to the file reporter), p50/p99
 * of one segment's wall time on the host thread (every segment paced, every 16th flat), the
 * growth of the peak RSS over the run, and the check finished == reported + dropped + failed
 * (a mismatch fails the run).
 *
 * sw_init/sw_shutdown are once per process, so every variant runs in a forked child that sends
 * its figures back through a pipe. The parent starts no thread of its own before forking.
 *
 * Kafka: --bootstrap host:port, else the ctest fixture's broker (smoke run), else a private
 * one-node broker started through tests/support/kafka/broker.sh. gRPC: the collector is
 * started with /usr/bin/python3 on a free loopback port; without it (or without the gRPC
 * reporter in this build) the gRPC figures are -1. The Kafka-down variant sets
 * max.block.ms=1000 (default 60000) so that its shutdown stays short: the host threads never
 * wait on the reporter either way, so the host figures do not depend on it.
 *
 * Usage: reporter_bench [--smoke] [--seconds S] [--threads N] [--bootstrap host:port]
 * Last line: name=value pairs, among them kafka_delivered_per_s, grpc_delivered_per_s,
 * host_overhead_ratio (Kafka reporter's host cost / agent off, flat), kafka_down_overhead_ratio
 * and grpc_down_overhead_ratio (paced, against the agent off), down_p99_ns (the larger paced
 * p99 of the two backend-down variants) and accounting_ok.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kafka_test_env.h"
#include "skywalking.h"
#include "test_util.h"

/* Internal (agent/src/agent_internal.h): blocks the segment pool has malloc'd in this run; read
   to tell the pool's share of the RSS growth. */
uint64_t sw__agent_blocks_allocated(void);

#define THREADS_MAX   64
#define HIST_SUB      16 /* sub-buckets per power of two: ~6% resolution */
#define HIST_BUCKETS  (64 * HIST_SUB)
#define PACED_WORK_NS 2000.0

typedef enum {
    VARIANT_OFF,
    VARIANT_FILE,
    VARIANT_KAFKA,
    VARIANT_GRPC,
    VARIANT_KAFKA_DOWN,
    VARIANT_GRPC_DOWN,
    VARIANT_COUNT
} variant_t;

static const char *const variant_names[] = {"off",  "file",       "kafka",
                                            "grpc", "kafka-down", "grpc-down"};
static const char *const variant_reporters[] = {NULL, "file", "kafka", "grpc", "kafka", "grpc"};

typedef enum { LOAD_FLAT, LOAD_PACED } load_t;

/* What a child measured; sent to the parent through a pipe. */
typedef struct result {
    int ok;            /* 0: the agent could not start with this reporter */
    double load_s;     /* how long the threads ran */
    double total_s;    /* load + sw_shutdown (drain, flush, close) */
    uint64_t segments; /* loop iterations of all threads */
    double host_cpu_ns_per_segment;
    double p50_ns, p99_ns; /* wall time of one segment on a host thread */
    long rss_growth_kb;    /* peak RSS of the run minus the RSS before sw_init */
    uint64_t blocks;       /* segment blocks the agent's pool allocated (malloc) in the run */
    sw_stats_t stats;
} result_t;

typedef struct options {
    double seconds;
    int threads;
    const char *bootstrap;
    char file_path[512];
    char grpc_backend[64];
    char down_backend[64]; /* 127.0.0.1:<a port nothing listens on> */
    uint64_t work_iters;   /* busy-work iterations of ~PACED_WORK_NS */
} options_t;

/* The threads' stop flag: set once by the child's main thread. Relaxed: it publishes no data
   (each thread's counts are read after pthread_join, which orders them). */
static atomic_bool stop_flag;

/* Keeps the busy work from being optimised away; written by every worker, never read back.
   Relaxed: the value does not matter, only that the store happens. */
static _Atomic uint64_t work_sink;

typedef struct worker {
    pthread_t thread;
    load_t load;
    uint64_t work_iters;
    uint64_t segments; /* written by the worker, read after join */
    double cpu_ns;
    uint32_t hist[HIST_BUCKETS]; /* segment wall times, see hist_index */
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

/* Log-linear bucket of a duration: exact below 16 ns, then 16 buckets per power of two. */
static unsigned hist_index(uint64_t ns)
{
    if (ns < HIST_SUB) {
        return (unsigned)ns;
    }
    unsigned msb = 63u - (unsigned)__builtin_clzll(ns);
    return (msb - 3u) * HIST_SUB + (unsigned)((ns >> (msb - 4u)) & (HIST_SUB - 1));
}

/* The upper end of bucket i (a quantile is reported on the safe side). */
static double hist_upper(unsigned i)
{
    if (i < HIST_SUB) {
        return i;
    }
    unsigned msb = i / HIST_SUB + 3u;
    return (double)((uint64_t)(HIST_SUB + 1 + i % HIST_SUB) << (msb - 4u));
}

static double hist_quantile(const uint64_t *hist, double q)
{
    uint64_t total = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        total += hist[i];
    }
    if (total == 0) {
        return 0;
    }
    uint64_t want = (uint64_t)(q * (double)total), seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += hist[i];
        if (seen > want) {
            return hist_upper(i);
        }
    }
    return hist_upper(HIST_BUCKETS - 1);
}

/* Fixed CPU work (xorshift steps): the paced load's "application". */
static uint64_t busy_work(uint64_t iters, uint64_t x)
{
    for (uint64_t i = 0; i < iters; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

/* Iterations of busy_work that take about PACED_WORK_NS on this machine (best of 5). */
static uint64_t busy_work_calibrate(void)
{
    const uint64_t n = 2000000;
    double best = 0;
    for (int round = 0; round < 5; round++) {
        double t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        atomic_store_explicit(&work_sink, busy_work(n, 88172645463325252ull), memory_order_relaxed);
        double dt = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
        if (best == 0 || dt < best) {
            best = dt;
        }
    }
    uint64_t iters = best > 0 ? (uint64_t)(PACED_WORK_NS * (double)n / best) : 1000;
    return iters ? iters : 1;
}

/* One segment, timed on the wall clock into the thread's histogram. */
static void segment_timed(worker_t *w)
{
    double t0 = clock_ns(CLOCK_MONOTONIC);
    segment_make();
    double dt = clock_ns(CLOCK_MONOTONIC) - t0;
    w->hist[hist_index(dt > 0 ? (uint64_t)dt : 0)]++;
}

static void *worker_run(void *arg)
{
    worker_t *w = arg;
    double cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t n = 0, x = 88172645463325252ull + (uintptr_t)w;
    while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
        if (w->load == LOAD_PACED) {
            for (int i = 0; i < 16; i++) {
                segment_timed(w);
                x = busy_work(w->work_iters, x);
            }
            n += 16;
            continue;
        }
        /* Flat: a sample of the segments is timed, so the clock reads cost ~1/16 of theirs. */
        for (int i = 0; i < 64; i++) {
            if (i % 16 == 0) {
                segment_timed(w);
            } else {
                segment_make();
            }
        }
        n += 64;
    }
    atomic_store_explicit(&work_sink, x, memory_order_relaxed);
    w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    w->segments = n;
    return NULL;
}

/* Resets the peak RSS (VmHWM) to the current RSS (Linux >= 4.0); harmless when refused. */
static void peak_rss_reset(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    ssize_t n = write(fd, "5", 1);
    (void)n;
    close(fd);
}

static int agent_start(variant_t v, const options_t *o, const char *bootstrap)
{
    if (v == VARIANT_OFF) {
        return 0;
    }
    sw_config_t cfg;
    char err[512];
    sw_config_init(&cfg);
    int rc = sw_config_set(&cfg, "SW_AGENT_NAME", "reporter-bench", err, sizeof err);
    rc = rc ? rc : sw_config_set(&cfg, "SW_REPORTER", variant_reporters[v], err, sizeof err);
    if (rc == 0 && v == VARIANT_FILE) {
        rc = sw_config_set(&cfg, "SW_REPORTER_FILE_PATH", o->file_path, err, sizeof err);
    }
    if (rc == 0 && v == VARIANT_KAFKA) {
        rc = sw_config_set(&cfg, "SW_KAFKA_BOOTSTRAP_SERVERS", bootstrap, err, sizeof err);
    }
    if (rc == 0 && v == VARIANT_KAFKA_DOWN) {
        rc = sw_config_set(&cfg, "SW_KAFKA_BOOTSTRAP_SERVERS", o->down_backend, err, sizeof err);
    }
    if (rc == 0 && v == VARIANT_KAFKA_DOWN) { /* a short shutdown (see the top of the file) */
        rc = sw_config_set(&cfg, "SW_KAFKA_PRODUCER_CONFIG", "max.block.ms=1000", err, sizeof err);
    }
    if (rc == 0 && (v == VARIANT_GRPC || v == VARIANT_GRPC_DOWN)) {
        rc = sw_config_set(&cfg, "SW_AGENT_COLLECTOR_BACKEND_SERVICES",
                           v == VARIANT_GRPC ? o->grpc_backend : o->down_backend, err, sizeof err);
    }
    if (rc != 0) {
        fprintf(stderr, "reporter_bench: %s\n", err);
        return rc;
    }
    return sw_init(&cfg);
}

/* The child: start the agent, run the threads for o->seconds, shut down, measure. */
static result_t variant_measure(variant_t v, load_t load, const options_t *o, const char *bootstrap)
{
    result_t r;
    memset(&r, 0, sizeof r);
    peak_rss_reset();
    long rss0 = proc_status_kb("VmRSS");
    if (agent_start(v, o, bootstrap) != 0) {
        return r;
    }
    static worker_t w[THREADS_MAX]; /* the child's only run: 4 KiB histograms off the stack */
    memset(w, 0, sizeof w);
    double t0 = clock_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < o->threads; i++) {
        w[i].load = load;
        w[i].work_iters = o->work_iters;
        if (pthread_create(&w[i].thread, NULL, worker_run, &w[i]) != 0) {
            return r;
        }
    }
    struct timespec pause = {(time_t)o->seconds,
                             (long)((o->seconds - (double)(time_t)o->seconds) * 1e9)};
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR)
        ;
    atomic_store_explicit(&stop_flag, true, memory_order_relaxed);
    double cpu = 0;
    static uint64_t hist[HIST_BUCKETS];
    for (int i = 0; i < o->threads; i++) {
        pthread_join(w[i].thread, NULL);
        r.segments += w[i].segments;
        cpu += w[i].cpu_ns;
        for (unsigned b = 0; b < HIST_BUCKETS; b++) {
            hist[b] += w[i].hist[b];
        }
    }
    double t1 = clock_ns(CLOCK_MONOTONIC);
    if (v != VARIANT_OFF) {
        r.blocks = sw__agent_blocks_allocated();
        sw_shutdown();
    }
    double t2 = clock_ns(CLOCK_MONOTONIC);
    sw_stats(&r.stats);
    long peak = proc_status_kb("VmHWM");
    r.ok = 1;
    r.load_s = (t1 - t0) / 1e9;
    r.total_s = (t2 - t0) / 1e9;
    r.host_cpu_ns_per_segment = r.segments ? cpu / (double)r.segments : 0;
    r.p50_ns = hist_quantile(hist, 0.50);
    r.p99_ns = hist_quantile(hist, 0.99);
    r.rss_growth_kb = rss0 >= 0 && peak >= 0 ? peak - rss0 : -1;
    return r;
}

/* Runs variant v in a forked child and returns what it measured (ok = 0 on any failure). */
static result_t variant_run(variant_t v, load_t load, const options_t *o, const char *bootstrap)
{
    result_t r;
    memset(&r, 0, sizeof r);
    int fds[2];
    if (pipe(fds) != 0) {
        return r;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        result_t mine = variant_measure(v, load, o, bootstrap);
        ssize_t n = write(fds[1], &mine, sizeof mine);
        _exit(n == (ssize_t)sizeof mine ? 0 : 1);
    }
    close(fds[1]);
    if (pid > 0) {
        size_t got = 0;
        while (got < sizeof r) {
            ssize_t n = read(fds[0], (char *)&r + got, sizeof r - got);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                break;
            }
            got += (size_t)n;
        }
        if (got != sizeof r) {
            memset(&r, 0, sizeof r);
        }
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
    if (posix_spawn(pid, argv[0], NULL, NULL, argv, environ) != 0) {
        return -1;
    }
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

/* Fills o->down_backend with a loopback port that nothing listens on: bound, then closed
   without listen(), so a connect there is refused. Returns 0 or -1. */
static int closed_port_find(options_t *o)
{
    int port = loopback_refused_port(false);
    if (port < 0) {
        return -1;
    }
    snprintf(o->down_backend, sizeof o->down_backend, "127.0.0.1:%d", port);
    return 0;
}

static double per_s(uint64_t n, double s)
{
    return s > 0 ? (double)n / s : 0;
}

static bool accounting_ok(const result_t *r)
{
    const sw_stats_t *s = &r->stats;
    return s->segments_finished == s->segments_reported + s->segments_dropped + s->segments_failed;
}

/* The ratio a / b, or -1 when either side was not measured. */
static double ratio(const result_t *a, const result_t *b)
{
    return a->ok && b->ok && b->host_cpu_ns_per_segment > 0
               ? a->host_cpu_ns_per_segment / b->host_cpu_ns_per_segment
               : -1;
}

/* One line per variant; `file` (may be NULL) adds the ratio against the file reporter. `unit`
   names what the host CPU time is divided by ("segment", or "iteration" when paced). */
static void result_print(variant_t v, const result_t *r, const result_t *off, const result_t *file,
                         const char *unit)
{
    if (!r->ok) {
        printf("%-10s not measured (the agent did not start with this reporter)\n",
               variant_names[v]);
        return;
    }
    const sw_stats_t *s = &r->stats;
    printf("%-10s produced %9.0f/s  delivered %9.0f/s  dropped %9.0f/s  failed %llu  "
           "host %.0f ns/%s (x%.2f of agent off",
           variant_names[v], per_s(s->segments_finished, r->load_s),
           per_s(s->segments_reported, r->total_s), per_s(s->segments_dropped, r->load_s),
           (unsigned long long)s->segments_failed, r->host_cpu_ns_per_segment, unit, ratio(r, off));
    if (file != NULL) {
        printf(", x%.2f of file", ratio(r, file));
    }
    printf(")  p50 %.0f ns  p99 %.0f ns  peak RSS +%ld kB (pool blocks %llu)  shutdown %.2f s\n",
           r->p50_ns, r->p99_ns, r->rss_growth_kb, (unsigned long long)r->blocks,
           r->total_s - r->load_s);
    printf("%-10s finished %llu %s reported %llu + dropped %llu + failed %llu\n", variant_names[v],
           (unsigned long long)s->segments_finished, accounting_ok(r) ? "==" : "!= (MISMATCH)",
           (unsigned long long)s->segments_reported, (unsigned long long)s->segments_dropped,
           (unsigned long long)s->segments_failed);
    fflush(stdout);
}

static int options_parse(int argc, char **argv, options_t *o)
{
    o->seconds = 3;
    o->threads = 2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            o->seconds = 0.15;
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

static void files_remove(const char *dir, const char *kafka_dir)
{
    char path[700];
    snprintf(path, sizeof path, "%s/grpc.jsonl", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/grpc.port", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/segments.bin", dir);
    unlink(path);
    rmdir(kafka_dir);
    rmdir(dir);
}

/* The paced load: agent off, file reporter and the two backend-down variants. */
static void paced_run(const options_t *o, result_t paced[VARIANT_COUNT])
{
    static const variant_t order[] = {VARIANT_OFF, VARIANT_FILE, VARIANT_KAFKA_DOWN,
                                      VARIANT_GRPC_DOWN};
    printf("paced: each thread finishes a segment, then %.0f ns of busy work (%llu iterations)\n",
           PACED_WORK_NS, (unsigned long long)o->work_iters);
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        variant_t v = order[i];
        paced[v] = variant_run(v, LOAD_PACED, o, NULL);
        unlink(o->file_path);
        if (v == VARIANT_OFF) {
            printf("off        host %.0f ns/iteration (segment + busy work)  p50 %.0f ns  p99 "
                   "%.0f ns  peak RSS +%ld kB\n",
                   paced[v].host_cpu_ns_per_segment, paced[v].p50_ns, paced[v].p99_ns,
                   paced[v].rss_growth_kb);
        } else {
            result_print(v, &paced[v], &paced[VARIANT_OFF],
                         v == VARIANT_FILE ? NULL : &paced[VARIANT_FILE], "iteration");
        }
    }
}

int main(int argc, char **argv)
{
    options_t o;
    memset(&o, 0, sizeof o);
    if (options_parse(argc, argv, &o) != 0) {
        return 2;
    }
    char dir[] = "/tmp/reporter-bench-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("reporter_bench: mkdtemp");
        return 1;
    }
    snprintf(o.file_path, sizeof o.file_path, "%s/segments.bin", dir);
    o.work_iters = busy_work_calibrate();
    int have_down = closed_port_find(&o) == 0;
    char kafka_dir[256];
    snprintf(kafka_dir, sizeof kafka_dir, "%s/kafka", dir);
    sw_test_kafka_t k;
    int have_kafka =
        sw_test_kafka_bootstrap_or_start(&k, o.bootstrap, kafka_dir,
                                         "skywalking-segments:3 skywalking-managements:1") == 0;
    pid_t collector = -1;
    int have_grpc = collector_start(&o, dir, &collector) == 0;

    printf("reporter_bench: %d threads, %.2f s per variant, 5-span segments; backend down = %s\n",
           o.threads, o.seconds, have_down ? o.down_backend : "(no closed port found)");
    printf("flat: the threads finish segments as fast as they can\n");
    result_t res[VARIANT_COUNT], paced[VARIANT_COUNT];
    memset(res, 0, sizeof res);
    memset(paced, 0, sizeof paced);
    res[VARIANT_OFF] = variant_run(VARIANT_OFF, LOAD_FLAT, &o, NULL);
    const result_t *off = &res[VARIANT_OFF];
    double off_ns = off->host_cpu_ns_per_segment;
    printf("off        host %.1f ns/segment (the same loop, agent not started)  p50 %.0f ns  p99 "
           "%.0f ns\n",
           off_ns, off->p50_ns, off->p99_ns);
    res[VARIANT_FILE] = variant_run(VARIANT_FILE, LOAD_FLAT, &o, NULL);
    result_print(VARIANT_FILE, &res[VARIANT_FILE], off, NULL, "segment");
    unlink(o.file_path);
    if (have_kafka) {
        res[VARIANT_KAFKA] = variant_run(VARIANT_KAFKA, LOAD_FLAT, &o, k.bootstrap);
        result_print(VARIANT_KAFKA, &res[VARIANT_KAFKA], off, NULL, "segment");
        sw_test_kafka_stop(&k); /* a private broker's JVM must not compete with the rest */
    }
    if (have_grpc) {
        res[VARIANT_GRPC] = variant_run(VARIANT_GRPC, LOAD_FLAT, &o, NULL);
        result_print(VARIANT_GRPC, &res[VARIANT_GRPC], off, NULL, "segment");
        collector_stop(collector);
    }
    if (have_down) {
        for (variant_t v = VARIANT_KAFKA_DOWN; v <= VARIANT_GRPC_DOWN; v++) {
            res[v] = variant_run(v, LOAD_FLAT, &o, NULL);
            result_print(v, &res[v], off, &res[VARIANT_FILE], "segment");
        }
        paced_run(&o, paced);
    }
    files_remove(dir, kafka_dir);

    double v[VARIANT_COUNT][4]; /* produced, delivered, dropped, ratio; -1 when not measured */
    bool accounted = true;
    for (int i = VARIANT_FILE; i < VARIANT_COUNT; i++) {
        const result_t *r = &res[i];
        v[i][0] = r->ok ? per_s(r->stats.segments_finished, r->load_s) : -1;
        v[i][1] = r->ok ? per_s(r->stats.segments_reported, r->total_s) : -1;
        v[i][2] = r->ok ? per_s(r->stats.segments_dropped, r->load_s) : -1;
        v[i][3] = ratio(r, off);
        accounted =
            accounted && (!r->ok || accounting_ok(r)) && (!paced[i].ok || accounting_ok(&paced[i]));
    }
    const result_t *pk = &paced[VARIANT_KAFKA_DOWN], *pg = &paced[VARIANT_GRPC_DOWN];
    double down_p99 = pk->ok || pg->ok ? (pk->p99_ns > pg->p99_ns ? pk->p99_ns : pg->p99_ns) : -1;
    printf("threads=%d seconds=%.2f host_ns_off=%.1f file_produced_per_s=%.0f "
           "file_delivered_per_s=%.0f file_dropped_per_s=%.0f file_overhead_ratio=%.2f "
           "kafka_produced_per_s=%.0f kafka_delivered_per_s=%.0f kafka_dropped_per_s=%.0f "
           "grpc_produced_per_s=%.0f grpc_delivered_per_s=%.0f grpc_dropped_per_s=%.0f "
           "grpc_overhead_ratio=%.2f host_overhead_ratio=%.2f "
           "flat_kafka_down_overhead_ratio=%.2f flat_grpc_down_overhead_ratio=%.2f "
           "paced_host_ns_off=%.0f paced_file_overhead_ratio=%.3f "
           "kafka_down_overhead_ratio=%.3f grpc_down_overhead_ratio=%.3f "
           "kafka_down_vs_file_ratio=%.3f grpc_down_vs_file_ratio=%.3f "
           "off_p99_ns=%.0f file_p99_ns=%.0f kafka_down_p99_ns=%.0f grpc_down_p99_ns=%.0f "
           "down_p99_ns=%.0f file_rss_growth_kb=%ld kafka_down_rss_growth_kb=%ld "
           "grpc_down_rss_growth_kb=%ld kafka_down_failed=%llu kafka_down_dropped=%llu "
           "grpc_down_failed=%llu grpc_down_dropped=%llu accounting_ok=%d\n",
           o.threads, o.seconds, off_ns, v[1][0], v[1][1], v[1][2], v[1][3], v[2][0], v[2][1],
           v[2][2], v[3][0], v[3][1], v[3][2], v[3][3], v[2][3], v[4][3], v[5][3],
           paced[VARIANT_OFF].host_cpu_ns_per_segment, ratio(&paced[1], &paced[0]),
           ratio(pk, &paced[0]), ratio(pg, &paced[0]), ratio(pk, &paced[1]), ratio(pg, &paced[1]),
           paced[0].p99_ns, paced[1].p99_ns, pk->ok ? pk->p99_ns : -1, pg->ok ? pg->p99_ns : -1,
           down_p99, paced[1].rss_growth_kb, pk->ok ? pk->rss_growth_kb : -1,
           pg->ok ? pg->rss_growth_kb : -1, (unsigned long long)pk->stats.segments_failed,
           (unsigned long long)pk->stats.segments_dropped,
           (unsigned long long)pg->stats.segments_failed,
           (unsigned long long)pg->stats.segments_dropped, accounted ? 1 : 0);
    /* The Kafka figures are the point of the smoke run (label kafka): missing ones fail it, and
       so does any variant whose counters do not add up. */
    return res[VARIANT_FILE].ok && off->ok && res[VARIANT_KAFKA].ok && accounted ? 0 : 1;
}
