/*
 * locality.h - what the per-call path does for the CPU's caches (internal): its functions are
 * placed together, and it asks for cache lines before it touches them.
 *
 * Why: a traced call runs its own work (system calls, a database server on the same core)
 * between a span's begin and its end, and that evicts the lines the agent touched at begin.
 * Touched one after another, each line is a miss that waits for the previous one (a segment's
 * end reads its block and writes its record through about 15 of them). Asked for together, the
 * misses overlap. A prefetch is a hint: it never faults, on any address.
 * The code misses too: the ~11 KB of functions a traced PQexec runs lay scattered over the
 * library's 300 KB of text. SW__HOT puts a function of the per-call path (a span's begin, tags
 * and end, the encoder, the preload's wrappers) in .text.hot, which the linker keeps in one
 * place, so the lines and pages of that code are few and adjacent: as good as ordering the
 * functions with gold's --section-ordering-file, measured with rdtsc around a traced PQexec's
 * agent work (client and server on one core, as plugins_bench runs them). tests/bench/cold_bench.c
 * prints what a traced call costs once its code, its data or only its address translations
 * are evicted.
 */
#ifndef SW_UTIL_LOCALITY_H
#define SW_UTIL_LOCALITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* GCC's `hot` also optimizes the function as if it ran often, which it does. */
#define SW__HOT __attribute__((hot))

enum { SW__LINE = 64 };

/* Asks for every line that holds a byte of [from, from + len). `write` (a constant at every
   call) marks lines about to be written: the compiler emits PREFETCHW for them when it targets a
   CPU that has it (-mprfchw, or -march=native on the AMD guests of docs/PERFORMANCE.md), so the
   write needs no second request to take the line from another core's cache; the default x86-64
   build emits the same PREFETCHT0 as for reading, which is what docs/PERFORMANCE.md measured. The
   addresses are made as integers: the first line may begin before the object. */
static inline void sw__prefetch_lines(const void *from, size_t len, bool write)
{
    uintptr_t end = (uintptr_t)from + len;
    for (uintptr_t at = (uintptr_t)from & ~(uintptr_t)(SW__LINE - 1); at < end; at += SW__LINE) {
        if (write) {
            __builtin_prefetch((const void *)at, 1, 3);
        } else {
            __builtin_prefetch((const void *)at, 0, 3);
        }
    }
}

static inline void sw__prefetch_read(const void *from, size_t len)
{
    sw__prefetch_lines(from, len, false);
}

static inline void sw__prefetch_write(const void *from, size_t len)
{
    sw__prefetch_lines(from, len, true);
}

#endif /* SW_UTIL_LOCALITY_H */
