/*
 * test_clock.c - the span clock (agent/src/segment/clock.c): the calibration rule, the TSC path
 * against CLOCK_REALTIME across re-anchors, the CLOCK_REALTIME fallback, and readers on several
 * threads while the anchor moves.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>

#include "segment/clock.h"
#include "test_util.h"

static int64_t abs64(int64_t v)
{
    return v < 0 ? -v : v;
}

Test(clock, calibration_rule)
{
    /* 3 GHz over 100 ms: 1/3 ns per tick. */
    uint64_t m = sw__clock_calibrate(100000000, 300000000, 0);
    cr_assert_eq(m, ((uint64_t)1 << 32) / 3);
    cr_expect_eq(sw__clock_calibrate(10000000, 30000000, 0), 0, "10 ms is too short");
    cr_expect_eq(sw__clock_calibrate(11000000000LL, 33000000000ULL, 0), 0, "11 s is too long");
    cr_expect_eq(sw__clock_calibrate(100000000, 5000000, 0), 0, "50 MHz is not a TSC");
    cr_expect_eq(sw__clock_calibrate(100000000, 300000000, 0) != 0, 1);
    cr_expect_eq(sw__clock_calibrate(-100000000, 300000000, 0), 0, "the wall clock went back");
    cr_expect_neq(sw__clock_calibrate(100000000, 300300000, m), 0, "0.1 percent off is a slew");
    cr_expect_eq(sw__clock_calibrate(100000000, 290000000, m), 0, "3 percent off is a step");
    cr_expect_eq(sw__clock_calibrate(100000000, 0, 0), 0);
}

/* Reads the span clock beside CLOCK_REALTIME for `ns`; every pair within 1 ms. */
static void assert_tracks_realtime(int64_t ns)
{
    int64_t end = sw__realtime_ns() + ns, worst = 0;
    long n = 0;
    while (sw__realtime_ns() < end) {
        int64_t before = sw__realtime_ns();
        int64_t ours = sw__now_ns();
        int64_t after = sw__realtime_ns();
        int64_t off = ours < before ? before - ours : ours > after ? ours - after : 0;
        if (off > worst) {
            worst = off;
        }
        cr_assert_lt(off, 1000000, "span clock %lld ns off CLOCK_REALTIME (read %ld)",
                     (long long)off, n);
        n++;
    }
    cr_log_info("%ld reads, worst offset %lld ns", n, (long long)worst);
}

Test(clock, tsc_tracks_realtime_across_reanchors, .timeout = 30)
{
    sw__clock_reset(SW__CLOCK_TSC);
    if (sw__clock_mode() != SW__CLOCK_TSC) {
        cr_skip_test("no invariant TSC used by the kernel here: the fallback test covers it");
    }
    assert_tracks_realtime(60 * 1000000LL); /* calibrates after 20 ms */
    cr_assert_neq(atomic_load(&sw__clock.mult), 0, "not calibrated after 60 ms");
    cr_assert_neq(atomic_load(&sw__clock.limit), 0);
    uint64_t first_anchor = atomic_load(&sw__clock.base_tsc);
    assert_tracks_realtime(1100 * 1000000LL); /* two re-anchors at 500 ms */
    cr_assert_neq(atomic_load(&sw__clock.base_tsc), first_anchor, "never re-anchored");
    /* Fast path in use: a read right after an anchor must not move it. */
    (void)sw__now_ns();
    uint64_t anchor = atomic_load(&sw__clock.base_tsc);
    for (int i = 0; i < 1000; i++) {
        (void)sw__now_ns();
    }
    cr_assert_eq(atomic_load(&sw__clock.base_tsc), anchor, "reads took the slow path");
}

Test(clock, realtime_fallback)
{
    sw__clock_reset(SW__CLOCK_REALTIME);
    cr_assert_eq(sw__clock_mode(), SW__CLOCK_REALTIME);
    assert_tracks_realtime(40 * 1000000LL);
    cr_assert_eq(atomic_load(&sw__clock.mult), 0, "the fallback calibrated a TSC rate");
    cr_assert_eq(atomic_load(&sw__clock.base_tsc), 0);
    sw__clock_reset(SW__CLOCK_UNPROBED);
}

static void *reader(void *arg)
{
    int64_t *worst = arg;
    int64_t end = sw__realtime_ns() + 700 * 1000000LL; /* at least one re-anchor */
    while (sw__realtime_ns() < end) {
        int64_t before = sw__realtime_ns();
        int64_t ours = sw__now_ns();
        int64_t after = sw__realtime_ns();
        int64_t off = ours < before ? before - ours : ours > after ? ours - after : 0;
        if (off > *worst) {
            *worst = off;
        }
    }
    return NULL;
}

Test(clock, readers_on_threads_while_reanchoring, .timeout = 30)
{
    sw__clock_reset(SW__CLOCK_UNPROBED);
    pthread_t t[3];
    int64_t worst[3] = {0};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(pthread_create(&t[i], NULL, reader, &worst[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        /* Under a sanitizer a thread can be preempted between the reads: a wider bound. */
        cr_expect_lt(abs64(worst[i]), TEST_SANITIZED ? 20000000 : 1000000, "thread %d: %lld ns off",
                     i, (long long)worst[i]);
    }
}
