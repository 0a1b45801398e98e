/*
 * sampler.c - N traces per 3-second window.
 */
#include "sampler.h"
#include "../util/locality.h"

void sw__sampler_init(sw__sampler_t *s, int32_t n_per_3_secs)
{
    atomic_init(&s->state, 0);
    atomic_store_explicit(&s->n_per_window, n_per_3_secs, memory_order_relaxed);
}

void sw__sampler_set(sw__sampler_t *s, int32_t n_per_3_secs)
{
    atomic_store_explicit(&s->n_per_window, n_per_3_secs, memory_order_relaxed);
}

int32_t sw__sampler_n(sw__sampler_t *s)
{
    return atomic_load_explicit(&s->n_per_window, memory_order_relaxed);
}

static uint64_t window_of(int64_t now_ms)
{
    return (uint64_t)(now_ms < 0 ? 0 : now_ms / SW__SAMPLER_WINDOW_MS) & 0xFFFFFFFFu;
}

/* Adds one to the count of the current window; refuses when `limit` is reached (limit < 0:
   never refuses). */
static bool count_in_window(sw__sampler_t *s, int64_t now_ms, int64_t limit)
{
    uint64_t window = window_of(now_ms);
    /* relaxed everywhere: the state orders nothing but itself; the CAS makes the count exact. */
    uint64_t old = atomic_load_explicit(&s->state, memory_order_relaxed);
    for (;;) {
        uint64_t old_window = old >> 32;
        uint64_t count = old & 0xFFFFFFFFu;
        uint64_t next;
        if (old_window != window) {
            next = window << 32 | 1u; /* a new window starts with this trace */
        } else {
            if (limit >= 0 && count >= (uint64_t)limit) {
                return false;
            }
            if (count == 0xFFFFFFFFu) {
                return true; /* saturated (forced starts only): keep the count */
            }
            next = old + 1;
        }
        if (atomic_compare_exchange_weak_explicit(&s->state, &old, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            return true;
        }
    }
}

SW__HOT bool sw__sampler_try(sw__sampler_t *s, int64_t now_ms)
{
    int32_t n = atomic_load_explicit(&s->n_per_window, memory_order_relaxed);
    if (n <= 0) {
        return true;
    }
    return count_in_window(s, now_ms, n);
}

void sw__sampler_force(sw__sampler_t *s, int64_t now_ms)
{
    if (atomic_load_explicit(&s->n_per_window, memory_order_relaxed) <= 0) {
        return;
    }
    (void)count_in_window(s, now_ms, -1);
}
