/*
 * grpc_loss.h - telling the operator that segments are being lost to failed collect calls
 * (internal).
 *
 * A TraceSegmentReportService/collect stream is all or nothing: when the collector fails it
 * (a message it cannot decode, a full queue, a rejected token, a collector that is down), every
 * segment of the batch is lost. The counters (sw_stats.failed) count them; this makes them
 * visible in the agent's log too, without a line per call: the first failed call is logged at
 * once, then at most one warning per SW__GRPC_LOSS_WARN_MS while losses continue, each with
 * the segments and calls lost since the previous warning, the total, and the last status.
 *
 * Threads: one sw__grpc_loss_t belongs to the one thread that reports on its connection (the
 * pipeline's consumer thread); it has no lock.
 */
#ifndef SW_GRPC_GRPC_LOSS_H
#define SW_GRPC_GRPC_LOSS_H

#include <grpc/status.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The least time between two loss warnings. */
#define SW__GRPC_LOSS_WARN_MS 30000

typedef struct sw__grpc_loss {
    uint64_t lost;      /* segments lost since the last warning */
    uint64_t calls;     /* failed calls since the last warning */
    uint64_t total;     /* segments lost since the reporter started */
    uint64_t warned_ms; /* monotonic time of the last warning; 0: none yet */
} sw__grpc_loss_t;

/*
 * Notes the outcome of one collect call of `count` segments to `target`: OK does nothing; any
 * other status adds the segments to the losses and logs a warning (sw__log, SW_LOG_WARN) when
 * none was logged yet or the last one is at least SW__GRPC_LOSS_WARN_MS old. Returns whether
 * it logged. Never blocks but on the log lock.
 */
bool sw__grpc_loss_note(sw__grpc_loss_t *l, grpc_status_code status, size_t count,
                        const char *target);

/* Tests only: sets the least time between two warnings (0: SW__GRPC_LOSS_WARN_MS). */
void sw__grpc_loss_interval_set(unsigned ms);

#endif /* SW_GRPC_GRPC_LOSS_H */
