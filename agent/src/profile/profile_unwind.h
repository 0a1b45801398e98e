/*
 * profile_unwind.h - a sampled thread's stack from the interrupted context (internal; the
 * signal handler's half of profile_sampler.c).
 *
 * Frame pointers first: each frame record (saved frame pointer, return address) is followed up
 * the thread's own stack, bounded by its limits. The frame pointer chain cannot see the frame of
 * the interrupted function when that function keeps none (a leaf function: GCC omits the frame
 * even with -fno-omit-frame-pointer unless the function needs one; a function interrupted in its
 * prologue), so when libunwind is present the first step, from the interrupted function to its
 * caller, is taken by libunwind from the DWARF call frame information, and the frame pointers
 * from there on. When the chain is broken at once (code built without frame pointers), libunwind
 * takes every step.
 *
 * libunwind (Debian's libunwind8, libunwind.so.8) is loaded at run time with dlopen RTLD_LOCAL,
 * never linked: linked, its _Unwind_* functions could take over C++ exception unwinding from
 * libgcc_s in the program. Without it, the frame pointers alone are followed.
 */
#ifndef SW_PROFILE_PROFILE_UNWIND_H
#define SW_PROFILE_PROFILE_UNWIND_H

#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

/* Loads libunwind once and warms it up (its first use allocates). Profiler's thread; not in a
   signal handler. Returns whether it is there. */
bool sw__profile_unwind_load(void);

/* Whether libunwind was loaded. */
bool sw__profile_unwind_loaded(void);

/* Writes the stack of the interrupted context `uc` into frames[0..max): the interrupted pc, then
   return addresses outward. The thread's stack is [lo, hi). Returns the number written.
   Async-signal-safe (reads only the thread's own stack within its bounds; libunwind's local
   unwinding blocks signals around its own locks). */
uint32_t sw__profile_unwind(ucontext_t *uc, uintptr_t lo, uintptr_t hi, uintptr_t *frames,
                            uint32_t max);

#endif /* SW_PROFILE_PROFILE_UNWIND_H */
