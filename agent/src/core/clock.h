/*
 * clock.h - span timestamps (internal).
 *
 * SkyWalking records milliseconds since the Unix epoch, so the clock must be the wall clock.
 * CLOCK_REALTIME through the vDSO costs ~20 ns here (TSC clocksource) and has ns resolution.
 * CLOCK_REALTIME_COARSE costs ~3 ns but only advances every scheduler tick (4 ms at HZ=250,
 * clock_getres() says so): spans shorter than a tick would read 0 ms and a child could appear
 * to start before its parent, which is wrong for ms data. So: CLOCK_REALTIME, one read per
 * span begin and one per end; an unsampled span reads no clock at all.
 */
#ifndef SW_CORE_CLOCK_H
#define SW_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t sw__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif /* SW_CORE_CLOCK_H */
