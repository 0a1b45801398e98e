/*
 * clock.c - the span clock's slow path: probing the CPU, calibrating the TSC rate against
 * CLOCK_REALTIME and re-anchoring (see clock.h for the scheme and the seqlock).
 */
#include "clock.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#if SW__CLOCK_HAS_TSC
#include <cpuid.h>
#endif

sw__clock_t sw__clock;

enum {
    CALIBRATE_MIN_NS = 20 * 1000 * 1000, /* first rate: after 20 ms */
    REANCHOR_NS = 500 * 1000 * 1000,     /* the fast path extrapolates at most this far */
    ANCHOR_MAX_TICKS = 20000,            /* a (tsc, realtime) pair read further apart is
                                            not used (preempted in between) */
};

uint64_t sw__clock_calibrate(int64_t dt_ns, uint64_t dt_ticks, uint64_t prev)
{
    if (dt_ns < CALIBRATE_MIN_NS || dt_ns > 10LL * 1000 * 1000 * 1000 || dt_ticks == 0) {
        return 0;
    }
    unsigned __int128 m = ((unsigned __int128)(uint64_t)dt_ns << 32) / dt_ticks;
    /* 100 MHz .. 20 GHz: 10 ns .. 0.05 ns per tick. */
    if (m > ((unsigned __int128)10 << 32) || m < ((unsigned __int128)1 << 32) / 20) {
        return 0;
    }
    if (prev != 0) {
        unsigned __int128 diff = m > prev ? m - prev : prev - m;
        if (diff * 100 > prev) {
            return 0; /* more than 1% off: the wall clock was stepped */
        }
    }
    return (uint64_t)m;
}

#if SW__CLOCK_HAS_TSC
/* The kernel keeps time with the TSC: then it checked the TSC is synchronized across CPUs. */
static bool kernel_uses_tsc(void)
{
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
    if (f == NULL) {
        return false;
    }
    char name[32] = "";
    bool tsc = fgets(name, sizeof name, f) != NULL && strncmp(name, "tsc\n", 4) == 0;
    fclose(f);
    return tsc;
}

/* CPUID 0x80000007 EDX bit 8: invariant TSC (constant rate in every P-, C- and T-state). */
static bool cpu_has_invariant_tsc(void)
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    if ((unsigned)__get_cpuid_max(0x80000000u, NULL) < 0x80000007u ||
        !__get_cpuid(0x80000007u, &a, &b, &c, &d)) {
        return false;
    }
    return (d >> 8) & 1u;
}
#endif

static sw__clock_mode_t probe(void)
{
#if SW__CLOCK_HAS_TSC
    if (cpu_has_invariant_tsc() && kernel_uses_tsc()) {
        return SW__CLOCK_TSC;
    }
#endif
    return SW__CLOCK_REALTIME;
}

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void probe_store(void)
{
    uint32_t expect = SW__CLOCK_UNPROBED;
    /* relaxed: the mode is only a hint for the slow path; the fields are under the seqlock. */
    atomic_compare_exchange_strong_explicit(&sw__clock.mode, &expect, (uint32_t)probe(),
                                            memory_order_relaxed, memory_order_relaxed);
}

sw__clock_mode_t sw__clock_mode(void)
{
    uint32_t m = atomic_load_explicit(&sw__clock.mode, memory_order_relaxed);
    if (m == SW__CLOCK_UNPROBED) {
        pthread_once(&probe_once, probe_store);
        m = atomic_load_explicit(&sw__clock.mode, memory_order_relaxed);
    }
    return (sw__clock_mode_t)m;
}

#if SW__CLOCK_HAS_TSC
/* Stores a new anchor (and rate) when one is due. Called with a fresh (tsc, rt) pair. */
static void reanchor(uint64_t tsc, int64_t rt)
{
    /* acquire: the fields read below are those of the anchor that ended with s (or the CAS on s
       fails because another re-anchor came in between). */
    uint32_t s = atomic_load_explicit(&sw__clock.seq, memory_order_acquire);
    uint64_t base_tsc = atomic_load_explicit(&sw__clock.base_tsc, memory_order_relaxed);
    int64_t base_ns = atomic_load_explicit(&sw__clock.base_ns, memory_order_relaxed);
    uint64_t mult = atomic_load_explicit(&sw__clock.mult, memory_order_relaxed);
    uint64_t next = 0;
    if (base_tsc != 0 && tsc > base_tsc) {
        next = sw__clock_calibrate(rt - base_ns, tsc - base_tsc, mult);
        if (next == 0 && mult == 0) {
            return; /* not calibrated yet and too early: keep measuring from the old anchor */
        }
    }
    /* acquire on success: the stores below stay after the seq becomes odd. */
    if ((s & 1) != 0 ||
        !atomic_compare_exchange_strong_explicit(&sw__clock.seq, &s, s + 1, memory_order_acquire,
                                                 memory_order_relaxed)) {
        return; /* another thread re-anchors */
    }
    if (next != 0) {
        mult = next;
    }
    uint64_t limit = 0;
    if (mult != 0) {
        unsigned __int128 ticks = ((unsigned __int128)REANCHOR_NS << 32) / mult;
        limit = ticks > UINT32_MAX ? UINT32_MAX : (uint64_t)ticks;
    }
    /* release: a reader whose acquire load sees one of these values also sees the odd seq
       stored before them, and retries (clock.h). */
    atomic_store_explicit(&sw__clock.base_tsc, tsc, memory_order_release);
    atomic_store_explicit(&sw__clock.base_ns, rt, memory_order_release);
    atomic_store_explicit(&sw__clock.mult, mult, memory_order_release);
    atomic_store_explicit(&sw__clock.limit, limit, memory_order_release);
    /* release: partner of the readers' acquire load of seq (clock.h). */
    atomic_store_explicit(&sw__clock.seq, s + 2, memory_order_release);
}
#endif

int64_t sw__clock_slow_ns(void)
{
#if SW__CLOCK_HAS_TSC
    if (sw__clock_mode() == SW__CLOCK_TSC) {
        uint64_t t0 = __rdtsc();
        int64_t rt = sw__realtime_ns();
        uint64_t t1 = __rdtsc();
        if (t1 - t0 < ANCHOR_MAX_TICKS) {
            reanchor(t0 + (t1 - t0) / 2, rt);
        }
        return rt;
    }
#endif
    return sw__realtime_ns();
}

void sw__clock_reset(sw__clock_mode_t mode)
{
    (void)sw__clock_mode(); /* the once has run: a later probe cannot overwrite `mode` */
    if (mode == SW__CLOCK_UNPROBED || mode == SW__CLOCK_TSC) {
        mode = probe();
    }
    uint32_t s = atomic_load_explicit(&sw__clock.seq, memory_order_relaxed);
    atomic_store_explicit(&sw__clock.seq, s | 1, memory_order_relaxed);
    atomic_store_explicit(&sw__clock.base_tsc, 0, memory_order_relaxed);
    atomic_store_explicit(&sw__clock.base_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&sw__clock.mult, 0, memory_order_relaxed);
    atomic_store_explicit(&sw__clock.limit, 0, memory_order_relaxed);
    atomic_store_explicit(&sw__clock.mode, (uint32_t)mode, memory_order_relaxed);
    atomic_store_explicit(&sw__clock.seq, (s | 1) + 1, memory_order_release);
}
