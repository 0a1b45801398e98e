/*
 * sampler.h - SkyWalking's sampling service (internal): at most N trace starts are sampled per
 * 3-second window; N <= 0 samples everything. The window and its count live in one 64-bit atomic
 * (window index << 32 | count), so the reset at a window boundary needs no timer thread and no
 * lock. Any thread may call both functions concurrently.
 */
#ifndef SW_SEGMENT_SAMPLER_H
#define SW_SEGMENT_SAMPLER_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define SW__SAMPLER_WINDOW_MS 3000

typedef struct sw__sampler {
    /* Alone on its cache line: every sampled trace start of every thread CASes it when
       sampling is on (N > 0). With N <= 0 nothing touches it. */
    alignas(64) _Atomic uint64_t state;
    /* Set by init and by configuration discovery (sw__sampler_set) while traces start:
       relaxed, a new N applies from the next trace start (config/dynamic_config.h). */
    _Atomic int32_t n_per_window;
} sw__sampler_t;

void sw__sampler_init(sw__sampler_t *s, int32_t n_per_3_secs);

/* Changes N (<= 0: sample all); the current window keeps its count. Any thread. */
void sw__sampler_set(sw__sampler_t *s, int32_t n_per_3_secs);

/* The current N. Any thread. */
int32_t sw__sampler_n(sw__sampler_t *s);

/* True when a new trace starting at now_ms may be sampled (and counts it). Lock-free. */
bool sw__sampler_try(sw__sampler_t *s, int64_t now_ms);

/* Counts a trace sampled because upstream asked for it (never refused). Lock-free. */
void sw__sampler_force(sw__sampler_t *s, int64_t now_ms);

#endif /* SW_SEGMENT_SAMPLER_H */
