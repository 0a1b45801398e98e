/*
 * periodic.h - a thread that runs one function at a fixed period until it is stopped
 * (internal): the meter reporter (meter_report.h), the configuration discovery (cds.h) and
 * the instance heartbeats of the gRPC and Kafka reporters.
 *
 * The thread sleeps on a condition variable with a CLOCK_MONOTONIC deadline, so stop() wakes
 * it at once; after a run that overran the period it starts counting again from its end (no
 * burst of catch-up runs). stop() first calls the owner's `interrupt` (e.g. to cancel a gRPC
 * call in flight), then joins the thread: a run in progress finishes first.
 */
#ifndef SW_UTIL_PERIODIC_H
#define SW_UTIL_PERIODIC_H

#include <stdint.h>

typedef struct sw__periodic sw__periodic_t;

/* When the first run happens. */
typedef enum sw__periodic_first {
    SW__PERIODIC_AFTER_A_PERIOD = 0,
    SW__PERIODIC_AT_START = 1, /* at once, then every period */
} sw__periodic_first_t;

/*
 * Starts a thread named `name` (at most 15 bytes) that calls run(arg) every period_ms
 * milliseconds, the first time as `first` says. `interrupt` (may be NULL) is called by stop()
 * on the stopping thread. Returns 0 and *out, SW_ENOMEM or SW_ETHREAD. Any thread.
 */
int sw__periodic_start(const char *name, uint32_t period_ms, sw__periodic_first_t first,
                       void (*run)(void *arg), void (*interrupt)(void *arg), void *arg,
                       sw__periodic_t **out);

/* Interrupts, wakes and joins the thread, then frees it. Blocks until a run in progress has
   returned. NULL is a no-op. Not from the thread itself. */
void sw__periodic_stop(sw__periodic_t *p);

#endif /* SW_UTIL_PERIODIC_H */
