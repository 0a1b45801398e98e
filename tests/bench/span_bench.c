/*
 * span_bench.c - what a recorded span costs, in total: the calling thread's time for whole
 * begin..end pairs (the segment-finishing end and its hand-off to the DataCarrier included) and
 * the CPU of every thread of the process (the consumer that encodes and reports included), both
 * beside the cost of one clock_gettime(CLOCK_REALTIME) measured in the same run.
 *
 * Workloads, interleaved over R rounds (7 by default, 2 with --smoke); every figure is the
 * median over the rounds, with min-max spread on the text lines:
 *   span:      segments of 100 spans (an entry span and 99 local pairs inside it)
 *   segment3:  segments of 3 spans (entry + exit + local, 2 tags), SkyWalking's typical request
 * each through the stack API (sw_entry_span_begin ... sw_span_end) and through the request-
 * context API (sw_context_begin_entry, sw_span_ref_*: span references with explicit parents).
 * Per round a window of segments is recorded paced: whenever more than PACE_HIGH segments wait
 * in the DataCarrier the caller sleeps until the consumer is below PACE_LOW, so nothing is
 * dropped (a dropped segment is a no-op and would flatter the figure). The window closes once the
 * consumer has reported every segment; process CPU (CLOCK_PROCESS_CPUTIME_ID, all threads) is
 * read before and after. The bench fails (exit 1) if any segment of a measured window was
 * dropped or failed.
 *
 * The loop around each segment (two clock reads for the caller's time, a look at the backlog
 * every 8 segments) costs CPU of its own: each round also runs it around an empty unit
 * (`harness`), and the CPU figures are net of it (each round's window minus that round's empty
 * one, per segment; per span it is a hundredth); harness_cpu_ns prints what it was.
 *
 * Last-line keys:
 *   caller_pair_ns             caller wall time per span, whole segment timed / spans
 *   total_cpu_per_span_ns      process CPU (all threads) per span over the window, net of the
 *                              harness
 *   caller_cpu_per_span_ns     the caller thread's CPU per span, net of the harness
 *   caller_segment3_ns         caller wall time per 3-span segment
 *   total_cpu_per_segment3_ns  process CPU per 3-span segment, net of the harness
 *   harness_cpu_ns             the CPU of the loop around one segment (subtracted above)
 *   clock_ns                   one clock_gettime(CLOCK_REALTIME) (vDSO): the baseline
 *   agent_clock_ns             one read of the agent's span clock (sw__now_ms)
 *   ratio_pair_clock           caller_pair_ns / clock_ns
 *   unsampled_pair_ns          a pair inside a trace upstream marked "not sampled"
 *   inject_extract_ns          sw_inject (sw8, correlation, sw8-x) + decoding the sw8 again
 *   span_pair_2t_ns            caller time per span on 2 threads at once (per thread)
 *   ref_total_cpu_per_span_ns  total_cpu_per_span_ns through the request-context API
 *   ref_total_cpu_per_segment3_ns  total_cpu_per_segment3_ns through the request-context API
 *   ratio_ref_stack_span       ref_total_cpu_per_span_ns / total_cpu_per_span_ns
 *   ratio_ref_stack_segment3   ref_total_cpu_per_segment3_ns / total_cpu_per_segment3_ns
 *   dropped                    segments dropped or failed in the measured windows (must be 0)
 *
 * The file reporter writes to /dev/null: the consumer encodes and frames every segment and
 * makes its write() calls, but no disk is involved.
 *
 * Usage: span_bench [--smoke] [--rounds R]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_drain.h"
#include "segment/clock.h"
#include "propagation/sw8.h"
#include "skywalking.h"

/* The agent's default carrier: 5 rings of 300; a thread stores into its own ring and moves to
   the next one when it is full. Pacing lets up to 1000 segments wait before the caller sleeps
   until 50 are left, so its sleeps stay rare (their CPU is not counted: waited_cpu_ns) and the
   consumer drains batches of hundreds. The figures are therefore the cost under a
   steady high load; at a low rate the consumer wakes for a few segments at a time and each
   wake-up (a futex wait, a context switch, one write()) is shared by fewer segments: with
   PACE_HIGH=240 / PACE_LOW=10 total_cpu_per_segment3_ns read 620-710 in the runs where 1000/50
   read 400-520 (preload_bench shows a server's whole cost at its own rate). */
enum { SPANS_PER_SEGMENT = 100, PACE_HIGH = 1000, PACE_LOW = 50, MAX_ROUNDS = 31 };

static int rounds = 7;
static int span_segments = 1000;  /* per window: 100k spans */
static int seg3_segments = 20000; /* per window */

static double clock_ns_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double now_ns(void)
{
    return clock_ns_of(CLOCK_MONOTONIC);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v. */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static volatile long sink;

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* Segments finished but neither reported, dropped nor failed yet. */
static uint64_t backlog(sw_stats_t *st)
{
    sw_stats(st);
    return st->segments_finished - st->segments_reported - st->segments_dropped -
           st->segments_failed;
}

/* The calling thread's CPU while it waited for the consumer (pacing sleeps, draining), summed:
   the benchmark's waiting, not the agent's work, so the windows subtract it (each timed sleep
   is charged CPU of its own, and a window ends with a drain that can wait for the agent's
   500 ms nap). */
static double waited_cpu_ns;

/* Pacing: above PACE_HIGH waiting segments, sleep until the consumer is below PACE_LOW. */
static void pace(void)
{
    sw_stats_t st;
    if (backlog(&st) <= PACE_HIGH) {
        return;
    }
    double c0 = clock_ns_of(CLOCK_THREAD_CPUTIME_ID);
    while (backlog(&st) > PACE_LOW) {
        sleep_us(200);
    }
    waited_cpu_ns += clock_ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
}

/* Waits (bounded) until every finished segment is accounted for; *st: the counters then. */
static void drain(sw_stats_t *st)
{
    double c0 = clock_ns_of(CLOCK_THREAD_CPUTIME_ID);
    if (!agent_drained()) {
        fprintf(stderr, "span_bench: the consumer did not report %llu segments in 10 s\n",
                (unsigned long long)backlog(st));
        exit(1);
    }
    sw_stats(st);
    waited_cpu_ns += clock_ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
}

typedef struct window {
    double caller_ns;     /* median caller time per unit (span or segment) */
    double total_cpu_ns;  /* process CPU per unit */
    double caller_cpu_ns; /* caller thread CPU per unit */
    uint64_t lost;        /* dropped + failed during the window */
} window_t;

typedef double (*unit_fn)(void); /* records one segment, returns its caller time in ns */

static double segment100(void)
{
    double t0 = now_ns();
    sw_entry_span_begin("GET /bench", NULL);
    for (int i = 1; i < SPANS_PER_SEGMENT; i++) {
        sw_local_span_begin("local");
        sw_span_end();
    }
    sw_span_end();
    return now_ns() - t0;
}

static double segment3(void)
{
    double t0 = now_ns();
    sw_entry_span_begin("GET /bench", NULL);
    sw_span_tag("http.method", "GET");
    sw_exit_span_begin("SELECT", "db:5432");
    sw_span_tag("db.statement", "SELECT 1");
    sw_span_end();
    sw_local_span_begin("render");
    sw_span_end();
    sw_span_end();
    return now_ns() - t0;
}

/* The same two shapes through the request-context API (span references, skywalking.h). */
static double segment100_ref(void)
{
    double t0 = now_ns();
    sw_span_ref_t root, child;
    sw_context_begin_entry("GET /bench", NULL, &root);
    for (int i = 1; i < SPANS_PER_SEGMENT; i++) {
        sw_span_ref_begin_local(root, "local", &child);
        sw_span_ref_end(child);
    }
    sw_span_ref_end(root);
    return now_ns() - t0;
}

static double segment3_ref(void)
{
    double t0 = now_ns();
    sw_span_ref_t root, exit, local;
    sw_context_begin_entry("GET /bench", NULL, &root);
    sw_span_ref_tag(root, "http.method", "GET");
    sw_span_ref_begin_exit(root, "SELECT", "db:5432", &exit);
    sw_span_ref_tag(exit, "db.statement", "SELECT 1");
    sw_span_ref_end(exit);
    sw_span_ref_begin_local(root, "render", &local);
    sw_span_ref_end(local);
    sw_span_ref_end(root);
    return now_ns() - t0;
}

/* The harness alone: what the loop around a segment costs (subtracted from the CPU figures). */
static double segment0(void)
{
    double t0 = now_ns();
    return now_ns() - t0;
}

static window_t run_window(unit_fn fn, int segments, double units_per_segment)
{
    double *v = malloc(sizeof(double) * (size_t)segments);
    sw_stats_t before, after;
    drain(&before);
    double cpu0 = clock_ns_of(CLOCK_PROCESS_CPUTIME_ID);
    double thr0 = clock_ns_of(CLOCK_THREAD_CPUTIME_ID);
    double waited0 = waited_cpu_ns;
    for (int s = 0; s < segments; s++) {
        v[s] = fn() / units_per_segment;
        if ((s & 7) == 7) {
            pace();
        }
    }
    drain(&after);
    double cpu1 = clock_ns_of(CLOCK_PROCESS_CPUTIME_ID);
    double thr1 = clock_ns_of(CLOCK_THREAD_CPUTIME_ID);
    double waited = waited_cpu_ns - waited0;
    double units = segments * units_per_segment;
    window_t w = {
        .caller_ns = median(v, segments),
        .total_cpu_ns = (cpu1 - cpu0 - waited) / units,
        .caller_cpu_ns = (thr1 - thr0 - waited) / units,
        .lost = (after.segments_dropped - before.segments_dropped) +
                (after.segments_failed - before.segments_failed),
    };
    if ((uint64_t)segments != after.segments_finished - before.segments_finished) {
        w.lost += 1; /* a segment that did not finish is a lost one for this bench */
    }
    free(v);
    return w;
}

static double bench_loop_ns(int which)
{
    double v[101];
    for (int b = 0; b < 101; b++) {
        double t0 = now_ns();
        for (int i = 0; i < 250; i++) {
            if (which == 0) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                sink += ts.tv_nsec;
            } else {
                sink += sw__now_ms();
            }
        }
        v[b] = (now_ns() - t0) / 250;
    }
    return median(v, 101);
}

/* Pairs in one segment of 250 (limit 300); not paced: 1 segment per 250 pairs. */
static double bench_span_pair(const char *entry_sw8, int batches)
{
    double *v = malloc(sizeof(double) * (size_t)batches);
    for (int b = 0; b < batches; b++) {
        sw_entry_span_begin("bench", entry_sw8);
        double t0 = now_ns();
        for (int i = 0; i < 250; i++) {
            sw_local_span_begin("local");
            sw_span_end();
        }
        v[b] = (now_ns() - t0) / 250;
        sw_span_end();
        pace();
    }
    double m = median(v, batches);
    free(v);
    return m;
}

static double bench_inject_extract(void)
{
    double v[101];
    static char scratch[SW__SW8_HEADER_MAX + 16];
    char sw8[SW_SW8_MAX], corr[SW_CORRELATION_HEADER_MAX], x[SW_SW8_X_MAX];
    sw_entry_span_begin("GET /bench", NULL);
    sw_correlation_set("tenant", "acme");
    sw_exit_span_begin("GET /downstream", "downstream:8080");
    for (int b = 0; b < 101; b++) {
        double t0 = now_ns();
        for (int i = 0; i < 50; i++) {
            sw_inject(sw8, sizeof sw8, corr, sizeof corr, x, sizeof x);
            sw__sw8_t up;
            sink += sw__sw8_decode(sw8, strlen(sw8), &up, scratch, sizeof scratch, NULL);
        }
        v[b] = (now_ns() - t0) / 50;
    }
    sw_span_end();
    sw_span_end();
    return median(v, 101);
}

static pthread_barrier_t start_line;

static void *pair_thread(void *arg)
{
    double *out = arg;
    pthread_barrier_wait(&start_line);
    *out = bench_span_pair(NULL, 101);
    return NULL;
}

static double bench_two_threads(void)
{
    pthread_t t[2];
    double r[2];
    pthread_barrier_init(&start_line, NULL, 2);
    for (int i = 0; i < 2; i++) {
        pthread_create(&t[i], NULL, pair_thread, &r[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
    }
    pthread_barrier_destroy(&start_line);
    return (r[0] + r[1]) / 2;
}

typedef struct series {
    double caller[MAX_ROUNDS], total[MAX_ROUNDS], caller_cpu[MAX_ROUNDS];
} series_t;

/* Puts round r's window; `harness` is that round's empty window, whose CPU per segment is
   subtracted (divided over the segment's `units`). */
static void series_put(series_t *s, int r, window_t w, window_t harness, double units)
{
    s->caller[r] = w.caller_ns;
    s->total[r] = w.total_cpu_ns - harness.total_cpu_ns / units;
    s->caller_cpu[r] = w.caller_cpu_ns - harness.caller_cpu_ns / units;
}

/* Median of v[0..n) and its min/max (sorts v). */
static double spread(double *v, int n, double *lo, double *hi)
{
    double m = median(v, n);
    *lo = v[0];
    *hi = v[n - 1];
    return m;
}

static void print_row(const char *what, double *v, int n, double clock)
{
    double lo, hi, m = spread(v, n, &lo, &hi);
    printf("%-38s %8.1f ns  (%.1f-%.1f)  = %5.2fx clock\n", what, m, lo, hi, m / clock);
}

/*
 * The crash recorder (docs/CRASH.md) on and off, same process: a run of each, alternating,
 * `rounds` times; each round's median caller time and total CPU per 3-span segment. The span
 * path is the same code either way (the recorder costs a registration per thread and run);
 * these figures show that.
 */
static void bench_crash_recorder(const sw_config_t *base, double on[2], double off[2])
{
    double v[2][2][MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++) {
            int which = (r + k) % 2; /* alternating which goes first */
            sw_config_t cfg = *base;
            cfg.crash_recorder = which == 0;
            if (sw_init(&cfg) != 0) {
                exit(1);
            }
            (void)run_window(segment3, seg3_segments / 4 + 1, 1);
            window_t w = run_window(segment3, seg3_segments, 1);
            v[which][0][r] = w.caller_ns;
            v[which][1][r] = w.total_cpu_ns;
            sw_shutdown();
        }
    }
    for (int i = 0; i < 2; i++) {
        on[i] = median(v[0][i], rounds);
        off[i] = median(v[1][i], rounds);
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            rounds = 2;
            span_segments = 50;
            seg3_segments = 1000;
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "span_bench: --rounds must be 1..%d\n", MAX_ROUNDS);
        return 2;
    }
    sw_config_t cfg;
    sw_config_init(&cfg);
    snprintf(cfg.file_path, sizeof cfg.file_path, "/dev/null");
    snprintf(cfg.service_name, sizeof cfg.service_name, "span-bench");
    snprintf(cfg.instance_name, sizeof cfg.instance_name, "span-bench-1");
    if (sw_init(&cfg) != 0) {
        return 1;
    }
    char unsampled[SW_SW8_MAX];
    sw__sw8_t up = {0, 1, "bench.trace", "bench.segment", "up", "up-1", "/", "bench:1"};
    sw__sw8_encode(&up, unsampled, sizeof unsampled);

    /* Warm up: the pool, the caches, and the span clock's calibration (20 ms, clock.h). */
    double warm_end = now_ns() + 30e6;
    while (now_ns() < warm_end) {
        (void)run_window(segment100, span_segments / 4 + 1, SPANS_PER_SEGMENT);
    }
    (void)run_window(segment3, seg3_segments / 4 + 1, 1);
    (void)run_window(segment100_ref, span_segments / 4 + 1, SPANS_PER_SEGMENT);
    (void)run_window(segment3_ref, seg3_segments / 4 + 1, 1);
    series_t span = {0}, seg3 = {0}, span_ref = {0}, seg3_ref = {0};
    double harness_cpu[MAX_ROUNDS];
    uint64_t lost = 0;
    for (int r = 0; r < rounds; r++) { /* interleaved, alternating which goes first */
        window_t a, b, ar, br, h = run_window(segment0, seg3_segments, 1);
        if (r % 2 == 0) {
            a = run_window(segment100, span_segments, SPANS_PER_SEGMENT);
            ar = run_window(segment100_ref, span_segments, SPANS_PER_SEGMENT);
            b = run_window(segment3, seg3_segments, 1);
            br = run_window(segment3_ref, seg3_segments, 1);
        } else {
            br = run_window(segment3_ref, seg3_segments, 1);
            b = run_window(segment3, seg3_segments, 1);
            ar = run_window(segment100_ref, span_segments, SPANS_PER_SEGMENT);
            a = run_window(segment100, span_segments, SPANS_PER_SEGMENT);
        }
        series_put(&span, r, a, h, SPANS_PER_SEGMENT);
        series_put(&seg3, r, b, h, 1);
        series_put(&span_ref, r, ar, h, SPANS_PER_SEGMENT);
        series_put(&seg3_ref, r, br, h, 1);
        harness_cpu[r] = h.total_cpu_ns;
        lost += a.lost + b.lost + ar.lost + br.lost;
    }
    double clock_ns = bench_loop_ns(0);
    double agent_clock_ns = bench_loop_ns(1);
    double unsampled_ns = bench_span_pair(unsampled, 101);
    double inj_ns = bench_inject_extract();
    double pair2_ns = bench_two_threads();
    sw_shutdown();
    sw_stats_t st;
    sw_stats(&st);
    double crash_on[2], crash_off[2];
    bench_crash_recorder(&cfg, crash_on, crash_off);

    printf("clock_gettime(CLOCK_REALTIME)          %8.1f ns  (baseline)\n", clock_ns);
    printf("agent span clock (sw__now_ms)          %8.1f ns\n", agent_clock_ns);
    print_row("span, caller (whole segments / spans)", span.caller, rounds, clock_ns);
    print_row("span, total CPU of all threads", span.total, rounds, clock_ns);
    print_row("span, caller thread CPU", span.caller_cpu, rounds, clock_ns);
    print_row("3-span segment, caller", seg3.caller, rounds, clock_ns);
    print_row("3-span segment, total CPU", seg3.total, rounds, clock_ns);
    print_row("3-span segment, caller thread CPU", seg3.caller_cpu, rounds, clock_ns);
    print_row("span (references), total CPU", span_ref.total, rounds, clock_ns);
    print_row("3-span segment (references), total CPU", seg3_ref.total, rounds, clock_ns);
    print_row("harness around one segment, CPU", harness_cpu, rounds, clock_ns);
    printf("span pair (unsampled)                  %8.1f ns\n", unsampled_ns);
    printf("sw_inject + sw8 decode                 %8.1f ns\n", inj_ns);
    printf("span pair, 2 threads at once           %8.1f ns per thread\n", pair2_ns);
    printf("3-span segment, caller, crash recorder on / off   %8.1f / %8.1f ns\n", crash_on[0],
           crash_off[0]);
    printf("3-span segment, total CPU, crash recorder on / off %8.1f / %8.1f ns\n", crash_on[1],
           crash_off[1]);
    printf("segments: finished=%llu reported=%llu dropped=%llu failed=%llu; lost in measured "
           "windows: %llu (%d rounds, medians, min-max)\n",
           (unsigned long long)st.segments_finished, (unsigned long long)st.segments_reported,
           (unsigned long long)st.segments_dropped, (unsigned long long)st.segments_failed,
           (unsigned long long)lost, rounds);
    double lo, hi;
    double pair = spread(span.caller, rounds, &lo, &hi);
    double total = spread(span.total, rounds, &lo, &hi);
    double caller_cpu = spread(span.caller_cpu, rounds, &lo, &hi);
    double s3 = spread(seg3.caller, rounds, &lo, &hi);
    double s3_total = spread(seg3.total, rounds, &lo, &hi);
    double harness = spread(harness_cpu, rounds, &lo, &hi);
    double ref_total = spread(span_ref.total, rounds, &lo, &hi);
    double ref_s3_total = spread(seg3_ref.total, rounds, &lo, &hi);
    printf("caller_pair_ns=%.1f total_cpu_per_span_ns=%.1f caller_cpu_per_span_ns=%.1f "
           "caller_segment3_ns=%.1f total_cpu_per_segment3_ns=%.1f harness_cpu_ns=%.1f "
           "clock_ns=%.1f agent_clock_ns=%.1f ratio_pair_clock=%.2f unsampled_pair_ns=%.1f "
           "inject_extract_ns=%.1f span_pair_2t_ns=%.1f ref_total_cpu_per_span_ns=%.1f "
           "ref_total_cpu_per_segment3_ns=%.1f ratio_ref_stack_span=%.2f "
           "ratio_ref_stack_segment3=%.2f crash_on_segment3_ns=%.1f crash_off_segment3_ns=%.1f "
           "crash_on_total_cpu_segment3_ns=%.1f crash_off_total_cpu_segment3_ns=%.1f "
           "dropped=%llu\n",
           pair, total, caller_cpu, s3, s3_total, harness, clock_ns, agent_clock_ns,
           pair / clock_ns, unsampled_ns, inj_ns, pair2_ns, ref_total, ref_s3_total,
           ref_total / total, ref_s3_total / s3_total, crash_on[0], crash_off[0], crash_on[1],
           crash_off[1], (unsigned long long)lost);
    if (lost != 0) {
        fprintf(stderr,
                "span_bench: %llu segments dropped or failed while measuring: the "
                "figures above are not valid\n",
                (unsigned long long)lost);
        return 1;
    }
    return 0;
}
