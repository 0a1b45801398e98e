/*
 * swc_clock.h - monotonic time, deadlines and the condition variables that wait for them.
 *
 * Shared by libdatacarrier, libkproducer and libskywalking (common/CMakeLists.txt): compiled
 * once, its objects are part of each library, and each library's version script keeps the
 * swc__ names local. Nothing here depends on a library, so any of the three may use it.
 *
 * A deadline is an absolute time in milliseconds of CLOCK_MONOTONIC (swc__monotonic_ms), so
 * it is unaffected by changes of the wall clock and can be compared with `now` directly.
 * SWC__NO_DEADLINE means "no limit". A condition variable waited on with swc__cond_wait_until
 * must have been made by swc__cond_init_monotonic: pthread_cond_timedwait measures its
 * timeout against the clock the condition variable was created with.
 *
 * Every function may be called from any thread.
 */
#ifndef SWC_CLOCK_H
#define SWC_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* The deadline that never passes. */
#define SWC__NO_DEADLINE INT64_MAX

/* Milliseconds of CLOCK_MONOTONIC (time since an unspecified start, never goes back). */
int64_t swc__monotonic_ms(void);

/* Milliseconds of CLOCK_REALTIME: since the Unix epoch (timestamps sent to a server). */
int64_t swc__realtime_ms(void);

/* The deadline timeout_ms from now; SWC__NO_DEADLINE for a negative timeout_ms and where the
   sum would not fit. */
int64_t swc__deadline_after_ms(int64_t timeout_ms);

/* ms milliseconds as a timespec (tv_nsec in 0..999999999): an absolute deadline for
   pthread_cond_timedwait or a relative timeout for futex(2). A negative ms gives zero. */
struct timespec swc__timespec_from_ms(int64_t ms);

/* Initialises *cond to measure timed waits on CLOCK_MONOTONIC. Returns 0 or the error of
   pthread_cond_init (ENOMEM, EAGAIN). */
int swc__cond_init_monotonic(pthread_cond_t *cond);

/*
 * Waits on cond (made by swc__cond_init_monotonic; the caller holds mutex) until it is
 * signalled or deadline_ms has passed; SWC__NO_DEADLINE waits without a limit. Returns 0 after
 * a wake (which may be spurious: the caller re-checks its condition) and ETIMEDOUT once the
 * deadline has passed, including when it had passed before the call. Any other value is the
 * error pthread_cond_timedwait gives for a misuse (EPERM: mutex not held).
 */
int swc__cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mutex, int64_t deadline_ms);

#endif /* SWC_CLOCK_H */
