/*
 * profile_unwind.c - frame pointers, with libunwind for the innermost step (see
 * profile_unwind.h).
 */
#include "profile_unwind.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#define STR2(x) #x
#define STR(x)  STR2(x)

#if defined(__x86_64__)
#define FP_REG UNW_X86_64_RBP
#elif defined(__aarch64__)
#define FP_REG UNW_AARCH64_X29
#endif

typedef int (*init_fn)(unw_cursor_t *, unw_context_t *, int);
typedef int (*step_fn)(unw_cursor_t *);
typedef int (*get_reg_fn)(unw_cursor_t *, unw_regnum_t, unw_word_t *);

/* libunwind's functions, set once by sw__profile_unwind_load before any sample is requested
   (the request's release store orders them for the handler) and never unset: the library stays
   loaded for the process's life. */
static init_fn unw_init;
static step_fn unw_step_p;
static get_reg_fn unw_reg;
static _Atomic bool loaded;

static __attribute__((noinline)) void warm_up(void)
{
    ucontext_t uc; /* on Linux libunwind's local context is a ucontext_t */
    unw_cursor_t cur;
    if (getcontext(&uc) == 0 && unw_init(&cur, (unw_context_t *)&uc, 0) == 0) {
        for (int i = 0; i < 4 && unw_step_p(&cur) > 0; i++) {
        }
    }
}

bool sw__profile_unwind_load(void)
{
#if defined(FP_REG)
    if (atomic_load_explicit(&loaded, memory_order_relaxed)) {
        return true;
    }
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        return false;
    }
    *(void **)&unw_init = dlsym(h, STR(unw_init_local2));
    *(void **)&unw_step_p = dlsym(h, STR(unw_step));
    *(void **)&unw_reg = dlsym(h, STR(unw_get_reg));
    if (unw_init == NULL || unw_step_p == NULL || unw_reg == NULL) {
        unw_init = NULL;
        return false; /* h stays open: dlclose could race nothing, but gains nothing either */
    }
    warm_up();
    atomic_store_explicit(&loaded, true, memory_order_release);
    return true;
#else
    return false;
#endif
}

bool sw__profile_unwind_loaded(void)
{
    return atomic_load_explicit(&loaded, memory_order_acquire);
}

/* Follows frame records from `fp`, within [lo, hi), into frames[n..max). Async-signal-safe.
   Not instrumented: it reads other frames' stack slots, which ASan keeps poisoned. */
__attribute__((no_sanitize("address"))) static uint32_t
fp_walk(uintptr_t fp, uintptr_t lo, uintptr_t hi, uintptr_t *frames, uint32_t n, uint32_t max)
{
    while (n < max && fp >= lo && hi > 16 && fp <= hi - 16 && (fp & (sizeof(void *) - 1)) == 0) {
        const uintptr_t *record = (const uintptr_t *)fp;
        uintptr_t next = record[0];
        uintptr_t ret = record[1];
        if (ret < 4096) {
            break;
        }
        frames[n++] = ret;
        if (next <= fp) {
            break;
        }
        fp = next;
    }
    return n;
}

/* The interrupted pc, frame pointer and stack pointer. Async-signal-safe. */
static void regs_of(const ucontext_t *uc, uintptr_t *pc, uintptr_t *fp, uintptr_t *sp)
{
#if defined(__x86_64__)
    *pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    *fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    *sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    *pc = (uintptr_t)uc->uc_mcontext.pc;
    *fp = (uintptr_t)uc->uc_mcontext.regs[29];
    *sp = (uintptr_t)uc->uc_mcontext.sp;
#else
    (void)uc;
    *pc = *fp = *sp = 0;
#endif
}

/* Every step by libunwind, from the cursor's frame outward. Async-signal-safe (libunwind's local
   unwinding is documented so). */
static uint32_t unw_walk(unw_cursor_t *cur, uintptr_t *frames, uint32_t n, uint32_t max)
{
    while (n < max && unw_step_p(cur) > 0) {
        unw_word_t ip = 0;
        if (unw_reg(cur, UNW_REG_IP, &ip) != 0 || ip < 4096) {
            break;
        }
        frames[n++] = (uintptr_t)ip;
    }
    return n;
}

uint32_t sw__profile_unwind(ucontext_t *uc, uintptr_t lo, uintptr_t hi, uintptr_t *frames,
                            uint32_t max)
{
    uintptr_t pc, fp, sp;
    regs_of(uc, &pc, &fp, &sp);
    if (max == 0 || pc == 0) {
        return 0;
    }
    frames[0] = pc;
    if (sp > lo) {
        lo = sp; /* below the stack pointer is no frame of the interrupted code */
    }
#if defined(FP_REG)
    if (atomic_load_explicit(&loaded, memory_order_relaxed) && max > 1) {
        unw_cursor_t cur;
        if (unw_init(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0 &&
            unw_step_p(&cur) > 0) {
            unw_word_t ip = 0, cfp = 0, csp = 0;
            if (unw_reg(&cur, UNW_REG_IP, &ip) == 0 && ip >= 4096 &&
                unw_reg(&cur, FP_REG, &cfp) == 0 && unw_reg(&cur, UNW_REG_SP, &csp) == 0) {
                frames[1] = (uintptr_t)ip;
                uint32_t n = fp_walk((uintptr_t)cfp, (uintptr_t)csp > lo ? (uintptr_t)csp : lo, hi,
                                     frames, 2, max);
                if (n > 2) {
                    return n;
                }
                return unw_walk(&cur, frames, 2, max); /* no frame pointers out there */
            }
        }
    }
#endif
    return fp_walk(fp, lo, hi, frames, 1, max);
}
