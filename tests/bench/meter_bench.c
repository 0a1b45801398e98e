/*
 * meter_bench.c - what recording a user meter costs (skywalking.h, sw_meter_*), against the
 * cheapest atomic increment of the same machine measured in the same run:
 *
 *   meter_bench [--smoke]
 *
 *   counter     sw_meter_counter_add(c, 1): a CAS loop on the double's bits
 *   histogram   sw_meter_histogram_add(h, v) with 11 steps: binary search + fetch_add
 *   gauge       sw_meter_gauge_set(g, v): one store
 *   baseline    atomic_fetch_add on a uint64_t (relaxed)
 *   counter_2t  sw_meter_counter_add from 2 threads on the same counter (contended)
 *
 * Each figure is the median of 5 rounds (1 with --smoke) of thread CPU time per call. The last
 * line is name=value pairs; ratio_* are against the baseline.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"
#include "skywalking.h"

static long iterations = 20000000;
static sw_meter_t *counter, *histogram, *gauge;
static _Atomic uint64_t baseline_word;

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run_counter(long n)
{
    for (long i = 0; i < n; i++) {
        sw_meter_counter_add(counter, 1);
    }
}

static void run_histogram(long n)
{
    for (long i = 0; i < n; i++) {
        sw_meter_histogram_add(histogram, (double)(i % 700));
    }
}

static void run_gauge(long n)
{
    for (long i = 0; i < n; i++) {
        sw_meter_gauge_set(gauge, (double)i);
    }
}

static void run_baseline(long n)
{
    for (long i = 0; i < n; i++) {
        atomic_fetch_add_explicit(&baseline_word, 1, memory_order_relaxed);
    }
}

/* ns of thread CPU per call of fn. */
static double per_call_ns(void (*fn)(long), long n)
{
    double t0 = thread_cpu_s();
    fn(n);
    return (thread_cpu_s() - t0) / (double)n * 1e9;
}

static void *contended(void *arg)
{
    double *out = arg;
    *out = per_call_ns(run_counter, iterations / 2);
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = 5;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            rounds = 1;
            iterations = 2000000;
        } else {
            fprintf(stderr, "usage: %s [--smoke]\n", argv[0]);
            return 2;
        }
    }
    const double steps[] = {0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000};
    if (sw_meter_counter_new("bench_counter", NULL, 0, &counter) != 0 ||
        sw_meter_histogram_new("bench_histogram", NULL, 0, steps, 11, &histogram) != 0 ||
        sw_meter_gauge_new("bench_gauge", NULL, 0, &gauge) != 0) {
        fprintf(stderr, "meter_bench: cannot create the meters\n");
        return 1;
    }
    double c[5], h[5], g[5], b[5], c2[5];
    for (int r = 0; r < rounds; r++) {
        b[r] = per_call_ns(run_baseline, iterations);
        c[r] = per_call_ns(run_counter, iterations);
        h[r] = per_call_ns(run_histogram, iterations);
        g[r] = per_call_ns(run_gauge, iterations);
        double t[2];
        pthread_t th[2];
        for (int i = 0; i < 2; i++) {
            pthread_create(&th[i], NULL, contended, &t[i]);
        }
        for (int i = 0; i < 2; i++) {
            pthread_join(th[i], NULL);
        }
        c2[r] = (t[0] + t[1]) / 2;
    }
    double vb = bench_median(b, rounds), vc = bench_median(c, rounds), vh = bench_median(h, rounds),
           vg = bench_median(g, rounds), vc2 = bench_median(c2, rounds);
    double total;
    sw_meter_value(counter, &total);
    double expected = (double)rounds * (double)iterations * 2;
    if (total != expected) {
        fprintf(stderr, "meter_bench: the counter holds %.0f, expected %.0f\n", total, expected);
        return 1;
    }
    printf("per call (thread CPU, median of %d rounds of %ld calls)\n", rounds, iterations);
    printf("  atomic fetch_add (baseline)   %6.2f ns\n", vb);
    printf("  sw_meter_counter_add          %6.2f ns\n", vc);
    printf("  sw_meter_histogram_add (11)   %6.2f ns\n", vh);
    printf("  sw_meter_gauge_set            %6.2f ns\n", vg);
    printf("  sw_meter_counter_add, 2 thr.  %6.2f ns per thread\n", vc2);
    printf("baseline_ns=%.2f counter_ns=%.2f histogram_ns=%.2f gauge_ns=%.2f counter_2t_ns=%.2f "
           "ratio_counter=%.2f ratio_histogram=%.2f\n",
           vb, vc, vh, vg, vc2, vc / vb, vh / vb);
    return 0;
}
