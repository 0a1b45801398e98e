/*
 * profile_bench.c - what a trace-profiling sample costs the sampled thread and the agent, against
 * the same run without a task.
 *
 * A worker thread runs one "/bench" segment of a fixed amount of CPU work (nested functions,
 * about 20 frames deep); the agent runs with the file reporter to /dev/null. With a task (endpoint
 * "/bench", threshold 0) the bench's main thread plays the profiler's sampling thread: every
 * millisecond it calls the sampler's tick (signal to the worker, harvest of the last sample) with
 * the real snapshot path as the callback (sw__profile_sender_add: symbolization with the
 * symbolizer, the ThreadSnapshot packed and queued; the queue is emptied every 100 samples, so
 * the gRPC send is not counted). Without a task the main thread runs the same loop without the
 * tick. A millisecond is 10 times the shortest dump period a task may ask for: it makes the
 * cost measurable against the noise of the work itself.
 *
 * Per sample, the medians over the rounds (each round runs both, alternating which goes first):
 *   ns_per_sample_thread   the worker's extra CPU time (its CPU clock, with a task minus without)
 *   ns_per_sample_handler  the time inside the signal handler (the sampler's own count)
 *   ns_per_sample_agent    the main thread's extra CPU time (tick + symbolize + pack)
 *
 * Usage: profile_bench [--smoke] [--rounds R] (5 rounds)
 * Last line: ns_per_sample_thread= ns_per_sample_handler= ns_per_sample_agent= samples_per_s=
 *   depth= rounds=
 */
#include <grpc/grpc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"
#include "core/context.h"
#include "profile/profile_sampler.h"
#include "profile/profile_snapshot.h"
#include "skywalking.h"

enum { MAX_ROUNDS = 15, NEST = 16 };

static double clock_ns_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t leaf_work(uint64_t x)
{
    for (int i = 0; i < 2000; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
    }
    return x;
}

__attribute__((noinline)) static uint64_t nested(int depth, uint64_t x)
{
    if (depth == 0) {
        return leaf_work(x);
    }
    return nested(depth - 1, x + 1) + 1; /* not a tail call */
}

typedef struct worker {
    long units;
    double cpu_ns;
    _Atomic bool done;
} worker_t;

static void *worker_run(void *arg)
{
    worker_t *w = arg;
    sw_entry_span_begin("/bench", NULL);
    double c0 = clock_ns_of(CLOCK_THREAD_CPUTIME_ID);
    uint64_t x = 1;
    for (long i = 0; i < w->units; i++) {
        x = nested(NEST, x);
    }
    sink += x;
    w->cpu_ns = clock_ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
    sw_span_end();
    atomic_store_explicit(&w->done, true, memory_order_release);
    return NULL;
}

static sw__profile_sender_t sender;
static long samples;

static void on_sample(const sw__profile_sample_t *s, void *arg)
{
    sw__profile_sender_add(s, arg);
    if (++samples % 100 == 0) {
        sw__profile_sender_reset(&sender, "bench-task"); /* drops the queue: no send */
    }
}

typedef struct window {
    double worker_ns, main_ns, handler_ns;
    long samples;
    double seconds;
} window_t;

static window_t run_window(bool task_on, long units, const sw__profile_task_t *task)
{
    worker_t w = {.units = units};
    sw__profile_sampler_stats_t s0, s1;
    sw__profile_sampler_stats(&s0);
    long samples0 = samples;
    if (task_on) {
        sw__profile_sampler_start(task);
    }
    double m0 = clock_ns_of(CLOCK_THREAD_CPUTIME_ID), t0 = clock_ns_of(CLOCK_MONOTONIC);
    pthread_t t;
    if (pthread_create(&t, NULL, worker_run, &w) != 0) {
        fprintf(stderr, "profile_bench: pthread_create failed\n");
        exit(1);
    }
    struct timespec ms = {0, 1000000};
    while (!atomic_load_explicit(&w.done, memory_order_acquire)) {
        nanosleep(&ms, NULL);
        if (task_on) {
            sw__profile_sampler_tick((int64_t)(clock_ns_of(CLOCK_REALTIME) / 1e6), on_sample,
                                     &sender);
        }
    }
    pthread_join(t, NULL);
    if (task_on) {
        sw__profile_sampler_stop(on_sample, &sender);
    }
    window_t out = {w.cpu_ns, clock_ns_of(CLOCK_THREAD_CPUTIME_ID) - m0, 0, samples - samples0,
                    (clock_ns_of(CLOCK_MONOTONIC) - t0) / 1e9};
    sw__profile_sampler_stats(&s1);
    out.handler_ns = (double)(s1.handler_ns - s0.handler_ns);
    return out;
}

int main(int argc, char **argv)
{
    int rounds = 5;
    long units = 200000; /* about half a second of work */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            rounds = 1;
            units = 4000;
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "profile_bench: --rounds must be 1..%d\n", MAX_ROUNDS);
        return 2;
    }
    sw_config_t cfg;
    sw_config_init(&cfg);
    snprintf(cfg.file_path, sizeof cfg.file_path, "/dev/null");
    snprintf(cfg.backend_services, sizeof cfg.backend_services, "127.0.0.1:1"); /* never used */
    if (sw_config_set(&cfg, "SW_REPORTER", "file", NULL, 0) != 0 || sw_init(&cfg) != 0) {
        fprintf(stderr, "profile_bench: sw_init failed\n");
        return 1;
    }
    grpc_init();
    char err[256] = "";
    if (sw__profile_sampler_init(1, 500, sw__context_current_segment) != 0 ||
        sw__profile_signal_install() != 0 ||
        sw__profile_sender_init(&sender, &cfg, NULL, 500, err, sizeof err) != 0) {
        fprintf(stderr, "profile_bench: cannot set the sampler up: %s\n", err);
        return 1;
    }
    sw__profile_sender_reset(&sender, "bench-task");
    sw__profile_task_t task = {.task_id = "bench-task",
                               .endpoint = "/bench",
                               .max_sampling_count = 10,
                               .dump_period_ms = 10};
    double thread[MAX_ROUNDS], handler[MAX_ROUNDS], agent[MAX_ROUNDS], rate[MAX_ROUNDS];
    (void)run_window(true, units / 10, &task); /* warm-up: modules opened, caches filled */
    for (int r = 0; r < rounds; r++) {
        window_t on, off;
        if (r % 2 == 0) {
            off = run_window(false, units, &task);
            on = run_window(true, units, &task);
        } else {
            on = run_window(true, units, &task);
            off = run_window(false, units, &task);
        }
        if (on.samples == 0) {
            fprintf(stderr, "profile_bench: no sample taken\n");
            return 1;
        }
        double n = (double)on.samples;
        thread[r] = (on.worker_ns - off.worker_ns) / n;
        handler[r] = on.handler_ns / n;
        agent[r] = (on.main_ns - off.main_ns) / n;
        rate[r] = n / on.seconds;
        printf("round %d: samples=%ld worker_ms on=%.1f off=%.1f main_ms on=%.1f off=%.1f\n", r,
               on.samples, on.worker_ns / 1e6, off.worker_ns / 1e6, on.main_ns / 1e6,
               off.main_ns / 1e6);
    }
    sw__profile_signal_restore();
    sw__profile_sender_destroy(&sender);
    sw__profile_sampler_destroy();
    grpc_shutdown();
    sw_shutdown();
    printf("ns_per_sample_thread=%.0f ns_per_sample_handler=%.0f ns_per_sample_agent=%.0f "
           "samples_per_s=%.0f depth=%d rounds=%d\n",
           bench_median(thread, rounds), bench_median(handler, rounds), bench_median(agent, rounds),
           bench_median(rate, rounds), NEST + 5, rounds);
    return 0;
}
