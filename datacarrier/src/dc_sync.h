/*
 * dc_sync.h - the few synchronisation primitives the carrier is built on: cache-line
 * alignment, a CPU pause for short spins, and futex wait/wake on a 32-bit atomic word.
 *
 * The futex calls carry no memory-ordering meaning of their own: every ordering argument in
 * this library is made with C11 atomics on the futex word or next to it, and the futex only
 * puts a thread to sleep while the word still holds the value it last saw (the kernel compares
 * atomically), so a wake between "read the word" and "sleep" is never lost.
 */
#ifndef DC_SYNC_H
#define DC_SYNC_H

#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "swc_clock.h"

#define DC__CACHE_LINE 64

/* Tells the CPU this is a spin-wait iteration (cheaper for the sibling hyper-thread). */
static inline void dc__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/*
 * Sleeps while *word == expected, at most timeout_ms (0 = no limit). Returns on a wake, on a
 * changed value, on the timeout or on a signal; callers always re-check their condition.
 */
static inline void dc__futex_wait(_Atomic uint32_t *word, uint32_t expected, uint32_t timeout_ms)
{
    struct timespec ts = swc__timespec_from_ms(timeout_ms);
    syscall(SYS_futex, (void *)word, FUTEX_WAIT_PRIVATE, expected, timeout_ms ? &ts : NULL, NULL,
            0);
}

/* Wakes up to n threads sleeping on word (INT_MAX = all). */
static inline void dc__futex_wake(_Atomic uint32_t *word, int n)
{
    syscall(SYS_futex, (void *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

#endif /* DC_SYNC_H */
