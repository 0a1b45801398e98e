/*
 * test_wait.h - criterion helpers shared by tests: a bounded wait for a condition with a
 * clear failure message.
 */
#ifndef TEST_WAIT_H
#define TEST_WAIT_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <time.h>

#include "test_util.h"

/* Polls cond(arg) every millisecond until it holds; fails the test with "timed out waiting
 * until <what>" after `seconds`. Runs on the test's thread; blocks at most `seconds`. */
static inline void wait_until_within(double seconds, bool (*cond)(void *), void *arg,
                                     const char *what)
{
    double end = now_s() + seconds;
    while (!cond(arg)) {
        cr_assert(now_s() < end, "timed out waiting until %s", what);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL); /* polling interval of a bounded wait, not synchronization */
    }
}

/* wait_until_within with the usual bound of 10 s. */
static inline void wait_until(bool (*cond)(void *), void *arg, const char *what)
{
    wait_until_within(10.0, cond, arg, what);
}

#endif /* TEST_WAIT_H */
