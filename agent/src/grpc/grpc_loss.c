/*
 * grpc_loss.c - rate-limited warnings about segments lost to failed collect calls. See
 * grpc_loss.h.
 */
#include "grpc_loss.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <time.h>

#include "../log/log.h"
#include "grpc_reporter_call.h"

/* The interval in use; relaxed: a setting read on its own, changed only by tests. */
static _Atomic unsigned interval_ms = SW__GRPC_LOSS_WARN_MS;

void sw__grpc_loss_interval_set(unsigned ms)
{
    atomic_store_explicit(&interval_ms, ms != 0 ? ms : SW__GRPC_LOSS_WARN_MS, memory_order_relaxed);
}

static uint64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

bool sw__grpc_loss_note(sw__grpc_loss_t *l, grpc_status_code status, size_t count,
                        const char *target)
{
    if (status == GRPC_STATUS_OK || count == 0) {
        return false;
    }
    l->lost += count;
    l->calls++;
    l->total += count;
    uint64_t now = monotonic_ms();
    unsigned every = atomic_load_explicit(&interval_ms, memory_order_relaxed);
    if (l->warned_ms != 0 && now - l->warned_ms < every) {
        return false;
    }
    sw__log(SW_LOG_WARN,
            "gRPC: %" PRIu64 " segments lost in %" PRIu64
            " failed collect calls to %s since the last warning (last status %s); %" PRIu64
            " lost since start. Repeated at most every %u s while losses continue",
            l->lost, l->calls, target, sw__grpc_status_name(status), l->total,
            (every + 999) / 1000);
    l->lost = 0;
    l->calls = 0;
    l->warned_ms = now != 0 ? now : 1;
    return true;
}
