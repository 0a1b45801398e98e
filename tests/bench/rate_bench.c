/*
 * rate_bench.c - what the agent costs per segment at the steady, modest rates most services
 * run at, where the consumer thread's wake-ups rather than the spans dominate.
 *
 * One thread records a segment (an entry span with a tag, the file reporter writing to
 * /dev/null) every 1/R s, for R = 100 and 1000 segments/s, with the agent's default consume
 * cycle (SW_BUFFER_CONSUME_CYCLE_MS, 500 ms) and, as the baseline, the Java DataCarrier's 20 ms.
 * Each (cycle, rate) is a window of W seconds (3; --smoke: 0.3) after the agent started; the
 * agent is started afresh for every window, and the rounds alternate the order of the cycles.
 *
 * The agent's cost per segment = the calling thread's CPU inside the span calls (its CPU-time
 * clock read around them, minus the same reads around nothing, measured in the same window) +
 * the agent consumer thread's CPU over the window (its schedstat), divided by the segments. The
 * pacing sleeps between segments are the benchmark's: each timed sleep is charged CPU of its own
 * (in a VM much more than the agent's work per segment), which would swamp the figures. The calling
 * thread runs each segment after a sleep, with the caches as the rest of the machine left them:
 * that is the point. Every segment of a window must be reported, none dropped: otherwise the bench
 * exits 1.
 *
 * Usage: rate_bench [--smoke] [--rounds R] (3 rounds; figures are medians over them)
 * Last line: ns_per_segment_100= ns_per_segment_100_cycle20= ns_per_segment_1000=
 *   ns_per_segment_1000_cycle20= consumer_wakes_per_s_100= consumer_wakes_per_s_100_cycle20=
 *   rounds=
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_drain.h"
#include "bench_stats.h"
#include "skywalking.h"
#include "thread_stat.h"

enum { MAX_ROUNDS = 15, CYCLES = 2, RATES = 2 };
static const uint32_t cycles_ms[CYCLES] = {500, 20}; /* the default first */
static const int rates[RATES] = {100, 1000};

static double clock_ns_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The agent's segment consumer thread: its CPU time (ns) and the times it blocked. */
static bool consumer_read(double *cpu_ns, long *blocks)
{
    return thread_stat_read("sw-segment-c0", cpu_ns, blocks);
}

typedef struct window {
    double ns_per_segment; /* caller's span calls + consumer, per segment */
    double consumer_ns;    /* the consumer's part */
    double wakes_per_s;    /* the consumer's blocks per second */
} window_t;

static window_t run_window(uint32_t cycle_ms, int rate, double seconds)
{
    sw_config_t cfg;
    sw_config_init(&cfg);
    snprintf(cfg.file_path, sizeof cfg.file_path, "/dev/null");
    snprintf(cfg.service_name, sizeof cfg.service_name, "rate-bench");
    snprintf(cfg.instance_name, sizeof cfg.instance_name, "rate-bench-1");
    cfg.buffer_consume_cycle_ms = cycle_ms;
    if (sw_init(&cfg) != 0) {
        fprintf(stderr, "rate_bench: sw_init failed\n");
        exit(1);
    }
    /* One segment to start the consumer thread, then the window. */
    sw_entry_span_begin("GET /warm-up", NULL);
    sw_span_end();
    double cons0 = 0, cons1 = 0;
    long blocks0 = 0, blocks1 = 0;
    if (!agent_drained() || !consumer_read(&cons0, &blocks0)) {
        fprintf(stderr, "rate_bench: the agent's consumer thread was not found or not drained\n");
        exit(1);
    }
    int n = (int)(rate * seconds);
    long period_ns = 1000000000L / rate;
    double caller_ns = 0, harness_ns = 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    double t0 = clock_ns_of(CLOCK_MONOTONIC);
    for (int i = 0; i < n; i++) {
        /* Two reads around nothing (h0, c0), then the span calls (c0, c1). */
        double h0 = clock_ns_of(CLOCK_THREAD_CPUTIME_ID);
        double c0 = clock_ns_of(CLOCK_THREAD_CPUTIME_ID);
        sw_entry_span_begin("GET /orders", NULL);
        sw_span_tag("http.method", "GET");
        sw_span_end();
        double c1 = clock_ns_of(CLOCK_THREAD_CPUTIME_ID);
        harness_ns += c0 - h0;
        caller_ns += c1 - c0;
        next.tv_nsec += period_ns;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL); /* the pacing */
    }
    double elapsed_s = (clock_ns_of(CLOCK_MONOTONIC) - t0) / 1e9;
    if (!agent_drained() || !consumer_read(&cons1, &blocks1)) {
        fprintf(stderr, "rate_bench: the consumer did not report every segment within 10 s\n");
        exit(1);
    }
    sw_stats_t st;
    sw_stats(&st);
    if (sw_shutdown() != 0 || st.segments_dropped != 0 || st.segments_failed != 0) {
        fprintf(stderr, "rate_bench: %llu segments dropped, %llu failed: not a measurement\n",
                (unsigned long long)st.segments_dropped, (unsigned long long)st.segments_failed);
        exit(1);
    }
    return (window_t){(caller_ns - harness_ns + cons1 - cons0) / n, (cons1 - cons0) / n,
                      (double)(blocks1 - blocks0) / elapsed_s};
}

int main(int argc, char **argv)
{
    int rounds = 3;
    double seconds = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            rounds = 1;
            seconds = 0.3;
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "rate_bench: --rounds must be 1..%d\n", MAX_ROUNDS);
        return 2;
    }
    double cost[CYCLES][RATES][MAX_ROUNDS], wakes[CYCLES][RATES][MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < CYCLES; k++) {
            int c = (k + r) % CYCLES; /* alternate which cycle goes first */
            for (int q = 0; q < RATES; q++) {
                window_t w = run_window(cycles_ms[c], rates[q], seconds);
                cost[c][q][r] = w.ns_per_segment;
                wakes[c][q][r] = w.wakes_per_s;
                printf("round %d: cycle %u ms, %d segments/s: %.0f ns per segment (consumer "
                       "%.0f), consumer woke %.1f times/s\n",
                       r, cycles_ms[c], rates[q], w.ns_per_segment, w.consumer_ns, w.wakes_per_s);
                fflush(stdout);
            }
        }
    }
    double m[CYCLES][RATES], wk[CYCLES][RATES];
    for (int c = 0; c < CYCLES; c++) {
        for (int q = 0; q < RATES; q++) {
            m[c][q] = bench_median(cost[c][q], rounds);
            wk[c][q] = bench_median(wakes[c][q], rounds);
        }
    }
    printf("ns_per_segment_100=%.0f ns_per_segment_100_cycle20=%.0f ns_per_segment_1000=%.0f "
           "ns_per_segment_1000_cycle20=%.0f consumer_wakes_per_s_100=%.1f "
           "consumer_wakes_per_s_100_cycle20=%.1f rounds=%d\n",
           m[0][0], m[1][0], m[0][1], m[1][1], wk[0][0], wk[1][0], rounds);
    return 0;
}
