/*
 * clock.h - monotonic time in milliseconds and deadlines for pthread condition variables.
 */
#ifndef KP_CORE_CLOCK_H
#define KP_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Milliseconds of CLOCK_MONOTONIC. */
static inline int64_t kp__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds since the epoch (record timestamps). */
static inline int64_t kp__wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The CLOCK_MONOTONIC timespec of a deadline given in kp__now_ms() milliseconds, for
 * pthread_cond_timedwait on a condition created with kp__cond_init_monotonic(). */
static inline struct timespec kp__deadline_ts(int64_t deadline_ms)
{
    struct timespec ts;
    ts.tv_sec = deadline_ms / 1000;
    ts.tv_nsec = (deadline_ms % 1000) * 1000000;
    return ts;
}

#endif /* KP_CORE_CLOCK_H */
