/*
 * grpc_reporter_call.h - one gRPC call of the reporter, start to status, on the gRPC core C
 * API (internal): a client stream of n messages (n == 1 for the unary management calls), with
 * the `authentication` metadata, under a deadline, and the one response message.
 *
 * The batches, all plucked from the connection's queue by the calling thread:
 *   1. SEND_INITIAL_METADATA + RECV_STATUS_ON_CLIENT (completes last, when the call is over);
 *   2. one SEND_MESSAGE per message, each awaited before the next (gRPC allows one in flight);
 *      a failed send means the call is already over, so the rest are skipped;
 *   3. SEND_CLOSE_FROM_CLIENT + RECV_INITIAL_METADATA + RECV_MESSAGE.
 */
#ifndef SW_GRPC_GRPC_REPORTER_CALL_H
#define SW_GRPC_GRPC_REPORTER_CALL_H

#include <grpc/grpc.h>
#include <grpc/status.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../report/reporter.h"

/* A way for another thread to cancel the call a thread is running (used by close()). */
typedef struct sw__grpc_cancel {
    pthread_mutex_t lock;
    grpc_call *call; /* the call in flight or NULL; protected by lock */
    bool cancelled;  /* set once by close(); protected by lock */
} sw__grpc_cancel_t;

void sw__grpc_cancel_init(sw__grpc_cancel_t *k);
void sw__grpc_cancel_destroy(sw__grpc_cancel_t *k);
/* Cancels the call in flight (if any) and every later one at its start. Any thread. */
void sw__grpc_cancel_fire(sw__grpc_cancel_t *k);

typedef struct sw__grpc_result {
    grpc_status_code status;
    char details[256]; /* the status message, NUL-terminated, maybe truncated */
    uint8_t *response; /* the response message (malloc'd, caller frees) or NULL */
    size_t response_len;
    size_t sent; /* messages that gRPC accepted for sending */
} sw__grpc_result_t;

/*
 * Runs `method` ("/pkg.Service/Method") on `channel` with messages[0..count) (data/len; the
 * segment_id is unused), `token` as `authentication` metadata when non-empty (NULL: none),
 * completing within timeout_ms (gRPC enforces the deadline; the call is cancelled if gRPC
 * should ever overrun it by 5 s). Blocks the calling thread until the status is known. Fills
 * *res (status INTERNAL when gRPC refuses to start the call). `cancel` may be NULL. The
 * messages are copied into gRPC byte buffers.
 */
void sw__grpc_call_run(grpc_channel *channel, grpc_completion_queue *queue, const char *method,
                       const sw__report_record_t *messages, size_t count, const char *token,
                       uint32_t timeout_ms, sw__grpc_cancel_t *cancel, sw__grpc_result_t *res);

/*
 * True on a thread while it runs one of the agent's own calls (sw__grpc_call_run). Inside
 * libskywalking-preload.so the agent's calls to gRPC's C core reach the preload's gRPC plugin
 * (agent/preload/preload_grpc.c: the library is linked with -Bsymbolic-functions, so its own
 * references bind to its own interposers); the plugin then only forwards them, so that the
 * agent never traces its own reporting.
 */
extern _Thread_local bool sw__grpc_own_call;

/* The name of a status code ("UNAVAILABLE"). Never NULL. */
const char *sw__grpc_status_name(grpc_status_code status);

#endif /* SW_GRPC_GRPC_REPORTER_CALL_H */
