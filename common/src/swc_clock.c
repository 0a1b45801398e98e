/*
 * swc_clock.c - monotonic time, deadlines and monotonic condition variables (swc_clock.h).
 */
#include "swc_clock.h"

static int64_t clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t swc__monotonic_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

int64_t swc__realtime_ms(void)
{
    return clock_ms(CLOCK_REALTIME);
}

int64_t swc__deadline_after_ms(int64_t timeout_ms)
{
    int64_t now = swc__monotonic_ms();
    if (timeout_ms < 0 || timeout_ms >= SWC__NO_DEADLINE - now) {
        return SWC__NO_DEADLINE;
    }
    return now + timeout_ms;
}

struct timespec swc__timespec_from_ms(int64_t ms)
{
    if (ms < 0) {
        ms = 0;
    }
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    return ts;
}

int swc__cond_init_monotonic(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);
    if (rc != 0) {
        return rc;
    }
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0) {
        rc = pthread_cond_init(cond, &attr);
    }
    pthread_condattr_destroy(&attr);
    return rc;
}

int swc__cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mutex, int64_t deadline_ms)
{
    if (deadline_ms == SWC__NO_DEADLINE) {
        return pthread_cond_wait(cond, mutex);
    }
    struct timespec ts = swc__timespec_from_ms(deadline_ms);
    return pthread_cond_timedwait(cond, mutex, &ts);
}
