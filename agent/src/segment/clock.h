/*
 * clock.h - span timestamps (internal).
 *
 * SkyWalking records milliseconds since the Unix epoch, so the clock must be the wall clock.
 * CLOCK_REALTIME through the vDSO is two of the few things a recorded span pair does, and not
 * the cheapest of them (tests/bench/span_bench.c prints its cost, clock_ns, beside a pair's).
 * CLOCK_REALTIME_COARSE is cheaper but only advances every scheduler tick (4 ms at HZ=250): spans
 * shorter than a tick would read 0 ms and a child could appear to start before its parent, which is
 * wrong for ms data.
 *
 * So, where the CPU has an invariant TSC and the kernel itself keeps time with it (clocksource
 * "tsc"), a span reads the TSC (one RDTSC, no fence: ms timestamps need no ordering against
 * other instructions) and converts it with a rate calibrated against CLOCK_REALTIME:
 *
 *   ns = base_ns + (tsc - base_tsc) * mult / 2^32
 *
 * The anchor (base_tsc, base_ns) is re-taken from CLOCK_REALTIME at least every 500 ms (the
 * first read after that goes the slow path), so NTP slewing or a step of the wall clock reaches
 * the spans within half a second, and the rate is re-measured over that interval. Until the
 * first 20 ms have calibrated a rate, and on every CPU without an invariant TSC (or another
 * clocksource), every read is CLOCK_REALTIME (the fallback).
 *
 * Concurrency: sw__clock is a seqlock. The thread that re-anchors makes `seq` odd (CAS, so one
 * writer at a time), stores the fields (release), makes it even again (release); readers load
 * `seq` (acquire), the fields (acquire) and `seq` again, and take the slow path when it was odd
 * or changed. No fences (ThreadSanitizer does not model them); on x86 every one of these is a
 * plain load or store. Any thread may read the clock at any time.
 */
#ifndef SW_SEGMENT_CLOCK_H
#define SW_SEGMENT_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define SW__CLOCK_HAS_TSC 1
#else
#define SW__CLOCK_HAS_TSC 0
#endif

typedef enum sw__clock_mode {
    SW__CLOCK_UNPROBED = 0, /* the first slow read probes the CPU */
    SW__CLOCK_TSC = 1,      /* TSC, calibrated against CLOCK_REALTIME */
    SW__CLOCK_REALTIME = 2, /* fallback: clock_gettime(CLOCK_REALTIME) on every read */
} sw__clock_mode_t;

/*
 * The process's span clock. Global because every thread of the process reads the same clock
 * and the API has no handle; written only under the seqlock (see above).
 */
typedef struct sw__clock {
    _Atomic uint32_t seq;      /* odd while a thread re-anchors */
    _Atomic uint32_t mode;     /* sw__clock_mode_t */
    _Atomic uint64_t base_tsc; /* TSC at the anchor; 0: no anchor yet */
    _Atomic int64_t base_ns;   /* CLOCK_REALTIME at the anchor */
    _Atomic uint64_t mult;     /* ns per TSC tick << 32; 0: not calibrated */
    _Atomic uint64_t limit;    /* ticks after base_tsc the fast path may extrapolate; 0: none */
} sw__clock_t;

extern sw__clock_t sw__clock;

/* CLOCK_REALTIME in ns. */
static inline int64_t sw__realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The slow path: probes, calibrates or re-anchors when due; returns CLOCK_REALTIME. */
int64_t sw__clock_slow_ns(void);

/* Wall-clock ns since the epoch, from the TSC when calibrated, else CLOCK_REALTIME. */
static inline int64_t sw__now_ns(void)
{
#if SW__CLOCK_HAS_TSC
    /* acquire: pairs with the release store that ends a re-anchor (clock.c). The field loads
       are acquire too (plain loads on x86): one that reads a value of a re-anchor in progress
       synchronizes with its release store, so the second seq load sees the odd seq. */
    uint32_t s0 = atomic_load_explicit(&sw__clock.seq, memory_order_acquire);
    uint64_t base_tsc = atomic_load_explicit(&sw__clock.base_tsc, memory_order_acquire);
    int64_t base_ns = atomic_load_explicit(&sw__clock.base_ns, memory_order_acquire);
    uint64_t mult = atomic_load_explicit(&sw__clock.mult, memory_order_acquire);
    uint64_t limit = atomic_load_explicit(&sw__clock.limit, memory_order_acquire);
    uint64_t d = __rdtsc() - base_tsc;
    if (__builtin_expect(d < limit && (s0 & 1) == 0 &&
                             atomic_load_explicit(&sw__clock.seq, memory_order_relaxed) == s0,
                         1)) {
        return base_ns + (int64_t)(((unsigned __int128)d * mult) >> 32);
    }
#endif
    return sw__clock_slow_ns();
}

static inline int64_t sw__now_ms(void)
{
    return sw__now_ns() / 1000000;
}

/* The mode the clock runs in (probes first if needed). */
sw__clock_mode_t sw__clock_mode(void);

/*
 * Tests: drops the calibration and puts the clock in `mode` (SW__CLOCK_UNPROBED probes again;
 * SW__CLOCK_TSC only where the CPU qualifies, else it falls back). No other thread may read the
 * clock meanwhile.
 */
void sw__clock_reset(sw__clock_mode_t mode);

/*
 * The calibration rule, pure for tests: mult (ns per tick << 32) from two anchors that lie
 * dt_ns and dt_ticks apart, or 0 when the interval is too short (< 20 ms), too long (> 10 s),
 * gives a TSC rate outside 100 MHz..20 GHz, or differs by more than 1% from `prev` (non-zero):
 * the wall clock was stepped in between.
 */
uint64_t sw__clock_calibrate(int64_t dt_ns, uint64_t dt_ticks, uint64_t prev);

#endif /* SW_SEGMENT_CLOCK_H */
