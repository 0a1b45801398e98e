/*
 * test_common.c - the helpers of common/ that the three libraries share: deadline math
 * (swc__deadline_after_ms, swc__timespec_from_ms), timed waits on a monotonic condition
 * variable (swc__cond_init_monotonic, swc__cond_wait_until) and errbuf formatting
 * (swc__errbuf_printf, swc__errbuf_vprintf). Real threads; no sleeps: a waiter is released by
 * its own condition, every wait is bounded by its deadline.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "swc_clock.h"
#include "swc_errbuf.h"

/* The most a timed wait may overrun its deadline on a loaded two-core machine. */
#define OVERRUN_BOUND_MS 5000

static void assert_ts(int64_t ms, time_t sec, long nsec)
{
    struct timespec ts = swc__timespec_from_ms(ms);
    cr_assert_eq(ts.tv_sec, sec, "%lld ms: tv_sec %lld, expected %lld", (long long)ms,
                 (long long)ts.tv_sec, (long long)sec);
    cr_assert_eq(ts.tv_nsec, nsec, "%lld ms: tv_nsec %ld, expected %ld", (long long)ms, ts.tv_nsec,
                 nsec);
}

Test(common_clock, timespec_from_ms_carries_into_seconds)
{
    assert_ts(0, 0, 0);
    assert_ts(1, 0, 1000000L);
    assert_ts(999, 0, 999000000L);
    assert_ts(1000, 1, 0); /* 1000 ms is a whole second, never tv_nsec = 1e9 */
    assert_ts(1001, 1, 1000000L);
    assert_ts(123456789, 123456, 789000000L);
    assert_ts(INT64_MAX, (time_t)(INT64_MAX / 1000), 807000000L);
    assert_ts(-1, 0, 0); /* a negative time is already over */
    assert_ts(INT64_MIN, 0, 0);
}

Test(common_clock, deadline_after_ms_is_now_plus_timeout)
{
    int64_t before = swc__monotonic_ms();
    int64_t d = swc__deadline_after_ms(250);
    int64_t after = swc__monotonic_ms();
    cr_assert(d >= before + 250 && d <= after + 250, "deadline %lld not in [%lld, %lld]",
              (long long)d, (long long)before + 250, (long long)after + 250);
    cr_assert_geq(swc__deadline_after_ms(0), after);
}

Test(common_clock, deadline_after_ms_saturates)
{
    cr_assert_eq(swc__deadline_after_ms(-1), SWC__NO_DEADLINE, "a negative timeout: no limit");
    cr_assert_eq(swc__deadline_after_ms(INT64_MIN), SWC__NO_DEADLINE);
    cr_assert_eq(swc__deadline_after_ms(INT64_MAX), SWC__NO_DEADLINE, "no overflow");
    cr_assert_eq(swc__deadline_after_ms(INT64_MAX - 1), SWC__NO_DEADLINE, "no overflow");
    int64_t big = INT64_MAX / 2;
    cr_assert_lt(swc__deadline_after_ms(big), SWC__NO_DEADLINE, "a large timeout still counts");
}

Test(common_clock, monotonic_and_realtime_read_their_clocks)
{
    int64_t a = swc__monotonic_ms();
    int64_t b = swc__monotonic_ms();
    cr_assert_geq(b, a, "CLOCK_MONOTONIC went back: %lld then %lld", (long long)a, (long long)b);
    int64_t wall = (int64_t)time(NULL) * 1000;
    int64_t rt = swc__realtime_ms();
    cr_assert(rt >= wall - 1000 && rt <= wall + 2000, "realtime %lld ms, time() %lld ms",
              (long long)rt, (long long)wall);
}

struct waitable {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool flag; /* protected by lock */
};

static void waitable_init(struct waitable *w)
{
    pthread_mutex_init(&w->lock, NULL);
    cr_assert_eq(swc__cond_init_monotonic(&w->cond), 0);
    w->flag = false;
}

static void waitable_destroy(struct waitable *w)
{
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
}

Test(common_cond, timed_wait_returns_at_the_deadline)
{
    struct waitable w;
    waitable_init(&w);
    int64_t start = swc__monotonic_ms();
    int64_t deadline = start + 100;
    pthread_mutex_lock(&w.lock);
    int rc = 0;
    while (rc != ETIMEDOUT) {
        rc = swc__cond_wait_until(&w.cond, &w.lock, deadline);
        cr_assert(rc == 0 || rc == ETIMEDOUT, "rc %d", rc);
    }
    pthread_mutex_unlock(&w.lock);
    int64_t end = swc__monotonic_ms();
    cr_assert_geq(end, deadline, "returned ETIMEDOUT %lld ms before the deadline",
                  (long long)(deadline - end));
    cr_assert_lt(end - deadline, OVERRUN_BOUND_MS, "overran the deadline by %lld ms",
                 (long long)(end - deadline));
    waitable_destroy(&w);
}

Test(common_cond, a_deadline_already_passed_times_out_at_once)
{
    struct waitable w;
    waitable_init(&w);
    int64_t start = swc__monotonic_ms();
    pthread_mutex_lock(&w.lock);
    cr_assert_eq(swc__cond_wait_until(&w.cond, &w.lock, start - 1), ETIMEDOUT);
    cr_assert_eq(swc__cond_wait_until(&w.cond, &w.lock, 0), ETIMEDOUT);
    pthread_mutex_unlock(&w.lock);
    cr_assert_lt(swc__monotonic_ms() - start, OVERRUN_BOUND_MS);
    waitable_destroy(&w);
}

static void *set_flag(void *arg)
{
    struct waitable *w = arg;
    pthread_mutex_lock(&w->lock);
    w->flag = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Waits for the flag with deadline_ms; returns the last result of swc__cond_wait_until. */
static int wait_for_flag(struct waitable *w, int64_t deadline_ms)
{
    pthread_t t;
    pthread_mutex_lock(&w->lock);
    cr_assert_eq(pthread_create(&t, NULL, set_flag, w), 0);
    int rc = 0;
    while (!w->flag && rc != ETIMEDOUT) {
        rc = swc__cond_wait_until(&w->cond, &w->lock, deadline_ms);
    }
    bool flag = w->flag;
    pthread_mutex_unlock(&w->lock);
    pthread_join(t, NULL);
    cr_assert(flag, "the signal was not seen before the deadline");
    return rc;
}

Test(common_cond, a_signal_ends_the_wait_before_the_deadline)
{
    struct waitable w;
    waitable_init(&w);
    int64_t start = swc__monotonic_ms();
    cr_assert_eq(wait_for_flag(&w, start + 120000), 0);
    cr_assert_lt(swc__monotonic_ms() - start, 60000, "the wake took as long as the deadline");
    waitable_destroy(&w);
}

Test(common_cond, no_deadline_waits_for_the_signal)
{
    struct waitable w;
    waitable_init(&w);
    cr_assert_eq(wait_for_flag(&w, SWC__NO_DEADLINE), 0);
    waitable_destroy(&w);
}

Test(common_errbuf, message_is_formatted)
{
    char buf[64];
    swc__errbuf_printf(buf, sizeof buf, "%s: %d is not in %d..%d", "linger.ms", -1, 0, 10);
    cr_assert_str_eq(buf, "linger.ms: -1 is not in 0..10");
}

Test(common_errbuf, long_message_is_cut_and_terminated)
{
    char buf[8];
    memset(buf, 'x', sizeof buf);
    swc__errbuf_printf(buf, sizeof buf, "%s", "abcdefghijklmnop");
    cr_assert_str_eq(buf, "abcdefg");
    char one[1] = {'x'};
    swc__errbuf_printf(one, sizeof one, "anything");
    cr_assert_eq(one[0], '\0', "a 1-byte errbuf holds the empty string");
}

Test(common_errbuf, null_or_empty_errbuf_is_left_alone)
{
    swc__errbuf_printf(NULL, 0, "no buffer %d", 1);
    swc__errbuf_printf(NULL, 64, "no buffer %d", 2); /* a length without a buffer: ignored */
    char buf[4] = {'x', 'y', 'z', 'w'};
    swc__errbuf_printf(buf, 0, "abc");
    cr_assert_eq(memcmp(buf, "xyzw", 4), 0, "errlen 0 must not write");
}

/* Formats one argument list into two buffers: swc__errbuf_vprintf serves a library's own
   variadic wrapper (producer/src/core/conf.c has one) and uses only the va_list it is given. */
static void format_twice(char *a, size_t a_len, char *b, size_t b_len, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void format_twice(char *a, size_t a_len, char *b, size_t b_len, const char *fmt, ...)
{
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    swc__errbuf_vprintf(a, a_len, fmt, ap);
    swc__errbuf_vprintf(b, b_len, fmt, again);
    va_end(again);
    va_end(ap);
}

Test(common_errbuf, vprintf_serves_a_wrapper)
{
    char a[32], b[5];
    format_twice(a, sizeof a, b, sizeof b, "key %s: %d", "acks", 7);
    cr_assert_str_eq(a, "key acks: 7");
    cr_assert_str_eq(b, "key ", "cut to its own buffer");
    format_twice(NULL, 0, b, sizeof b, "%s", "xyz");
    cr_assert_str_eq(b, "xyz", "a NULL errbuf beside a real one");
}
