/*
 * test_profile_sampler.c - the sampling signal under load (agent/src/profile/profile_sampler.c),
 * with real threads and real signals and no collector: four threads each run one profiled
 * "/stress" segment whose work lands the signal inside malloc and free, inside the agent's own
 * span calls and inside stdio formatting, while this thread asks for samples every 200 µs (50
 * times more often than a task may). Nothing may crash or deadlock, every thread must be
 * sampled many times with whole stacks (the worker's own function among the frames). A fifth
 * thread runs the same work in a segment of another endpoint, unprofiled, alongside. Runs under
 * ASan and TSan too.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/context.h"
#include "profile/profile_sampler.h"
#include "skywalking.h"

#if defined(__has_feature)
#define HAS_FEATURE(x) __has_feature(x)
#else
#define HAS_FEATURE(x) 0
#endif

#define THREADS 4
#define RUN_MS  1500

static _Atomic bool stop;

__attribute__((noinline)) static void stress_work(void)
{
    char buf[128];
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        void *p = malloc(64 + (size_t)(rand() % 4096));
        snprintf(buf, sizeof buf, "%p %d %s", p, rand(), "x");
        free(p);
        sw_local_span_begin("inner"); /* the agent's own code under the signal */
        sw_span_tag("k", buf);
        sw_span_end();
    }
}

static void *worker(void *arg)
{
    sw_entry_span_begin((const char *)arg, NULL);
    stress_work();
    sw_span_end();
    return NULL;
}

typedef struct tally {
    long samples;
    long with_worker_frame; /* samples whose frames include stress_work */
} tally_t;

static void on_sample(const sw__profile_sample_t *s, void *arg)
{
    tally_t *t = arg;
    t->samples++;
    cr_assert_gt(s->depth, 0);
    cr_assert_leq(s->depth, 64);
    for (uint32_t i = 0; i < s->depth; i++) {
        /* A return address inside stress_work's body (it never returns while sampled). */
        if (s->frames[i] > (uintptr_t)stress_work && s->frames[i] < (uintptr_t)stress_work + 512) {
            t->with_worker_frame++;
            break;
        }
    }
}

Test(profile_sampler, signals_under_load, .timeout = 120)
{
    sw_config_t cfg;
    sw_config_init(&cfg);
    snprintf(cfg.file_path, sizeof cfg.file_path, "/dev/null");
    char err[128];
    cr_assert_eq(sw_config_set(&cfg, "SW_REPORTER", "file", err, sizeof err), 0);
    cr_assert_eq(sw_init(&cfg), 0);
    cr_assert_eq(sw__profile_sampler_init(THREADS, 64, sw__context_current_segment), 0);
    cr_assert_eq(sw__profile_signal_install(), 0);
    sw__profile_task_t task = {
        .task_id = "stress", .endpoint = "/stress", .max_sampling_count = 10, .dump_period_ms = 10};
    sw__profile_sampler_start(&task);
    pthread_t t[THREADS + 1];
    for (int i = 0; i < THREADS; i++) {
        cr_assert_eq(pthread_create(&t[i], NULL, worker, "/stress"), 0);
    }
    cr_assert_eq(pthread_create(&t[THREADS], NULL, worker, "/other"), 0);
    tally_t tally = {0};
    struct timespec period = {0, 200000};
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (ms > RUN_MS) {
            break;
        }
        sw__profile_sampler_tick(INT64_MAX / 2, on_sample, &tally);
        nanosleep(&period, NULL);
    }
    atomic_store_explicit(&stop, true, memory_order_relaxed);
    for (int i = 0; i <= THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    sw__profile_sampler_stop(on_sample, &tally);
    sw__profile_signal_restore();
    sw__profile_sampler_stats_t st;
    sw__profile_sampler_stats(&st);
    sw__profile_sampler_destroy();
    cr_assert_eq(sw_shutdown(), 0);
    cr_log_info("samples %ld, with the worker's frame %ld; requested %llu taken %llu skipped %llu",
                tally.samples, tally.with_worker_frame, (unsigned long long)st.requested,
                (unsigned long long)st.taken, (unsigned long long)st.skipped);
    cr_assert_geq(tally.samples, 100, "only %ld samples", tally.samples);
    long want_pct = 90;
#if defined(__SANITIZE_THREAD__)
    /* TSan runs a handler when the thread next enters its runtime, with the context of the
       moment the signal came: the stack has moved on, frames are not checked. */
    want_pct = 0;
#elif defined(__SANITIZE_ADDRESS__) || HAS_FEATURE(address_sanitizer)
    /* ASan's interceptors of malloc, free and snprintf keep no frame pointers: a chain through
       them ends early (about half the samples here). */
    want_pct = 25;
#endif
    cr_assert_geq(tally.with_worker_frame * 100, tally.samples * want_pct,
                  "%ld of %ld samples lack stress_work's frame", tally.with_worker_frame,
                  tally.samples);
    cr_assert_leq((long)st.taken, (long)st.requested);
}

static void program_handler(int sig)
{
    (void)sig;
}

static void (*handler_now(void))(int)
{
    struct sigaction sa;
    cr_assert_eq(sigaction(SW__PROFILE_SIGNAL, NULL, &sa), 0);
    return sa.sa_handler;
}

/* The program's own handler of the signal is never taken over, nor replaced at restore. */
Test(profile_sampler, program_handler_left_alone)
{
    struct sigaction mine;
    memset(&mine, 0, sizeof mine);
    mine.sa_handler = program_handler;
    cr_assert_eq(sigaction(SW__PROFILE_SIGNAL, &mine, NULL), 0);
    cr_assert_eq(sw__profile_signal_install(), SW_EBUSY);
    cr_assert(handler_now() == program_handler);

    /* Ours in, then the program installs its own while a task runs: restore leaves it. */
    signal(SW__PROFILE_SIGNAL, SIG_DFL);
    cr_assert_eq(sw__profile_signal_install(), 0);
    cr_assert(handler_now() != SIG_DFL);
    cr_assert_eq(sigaction(SW__PROFILE_SIGNAL, &mine, NULL), 0);
    sw__profile_signal_restore();
    cr_assert(handler_now() == program_handler);

    /* And the usual case: the default disposition comes back. */
    signal(SW__PROFILE_SIGNAL, SIG_DFL);
    cr_assert_eq(sw__profile_signal_install(), 0);
    sw__profile_signal_restore();
    cr_assert(handler_now() == SIG_DFL);
}
