/*
 * grpc_reporter_call.c - one client-streaming (or unary) call on the gRPC core C API.
 */
#include "grpc_reporter_call.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Extra time after the call's deadline before we stop trusting gRPC to end the call. */
#define OVERRUN_GUARD_MS 5000

/* Batch tags: distinct addresses, compared by identity only. */
static const char tag_status, tag_send, tag_close;
#define TAG(t) ((void *)(uintptr_t) & (t))

void sw__grpc_cancel_init(sw__grpc_cancel_t *k)
{
    pthread_mutex_init(&k->lock, NULL);
    k->call = NULL;
    k->cancelled = false;
}

void sw__grpc_cancel_destroy(sw__grpc_cancel_t *k)
{
    pthread_mutex_destroy(&k->lock);
}

void sw__grpc_cancel_fire(sw__grpc_cancel_t *k)
{
    pthread_mutex_lock(&k->lock);
    k->cancelled = true;
    if (k->call != NULL) {
        grpc_call_cancel(k->call, NULL); /* thread-safe before grpc_call_unref */
    }
    pthread_mutex_unlock(&k->lock);
}

/* Publishes the call for sw__grpc_cancel_fire (or cancels it at once if close() came first). */
static void cancel_attach(sw__grpc_cancel_t *k, grpc_call *call)
{
    if (k == NULL) {
        return;
    }
    pthread_mutex_lock(&k->lock);
    k->call = call;
    if (k->cancelled) {
        grpc_call_cancel(call, NULL);
    }
    pthread_mutex_unlock(&k->lock);
}

static void cancel_detach(sw__grpc_cancel_t *k)
{
    if (k == NULL) {
        return;
    }
    pthread_mutex_lock(&k->lock);
    k->call = NULL;
    pthread_mutex_unlock(&k->lock);
}

/* Waits for the batch tagged `tag`; on an overrun cancels the call, which ends it promptly.
   Returns the batch's success flag. */
static int batch_wait(grpc_completion_queue *queue, grpc_call *call, void *tag, gpr_timespec guard)
{
    grpc_event ev = grpc_completion_queue_pluck(queue, tag, guard, NULL);
    if (ev.type == GRPC_QUEUE_TIMEOUT) {
        grpc_call_cancel(call, NULL);
        ev = grpc_completion_queue_pluck(queue, tag, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
    }
    return ev.type == GRPC_OP_COMPLETE ? ev.success : 0;
}

/* Sends the messages one batch at a time; stops at the first failed send. */
static size_t messages_send(grpc_completion_queue *queue, grpc_call *call,
                            const sw__report_record_t *messages, size_t count, gpr_timespec guard)
{
    size_t sent = 0;
    for (size_t i = 0; i < count; i++) {
        grpc_slice slice =
            grpc_slice_from_copied_buffer((const char *)messages[i].data, messages[i].len);
        grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&slice, 1);
        grpc_slice_unref(slice); /* the byte buffer holds its own reference */
        grpc_op op = {.op = GRPC_OP_SEND_MESSAGE};
        op.data.send_message.send_message = bb;
        int ok = grpc_call_start_batch(call, &op, 1, TAG(tag_send), NULL) == GRPC_CALL_OK &&
                 batch_wait(queue, call, TAG(tag_send), guard);
        grpc_byte_buffer_destroy(bb);
        if (!ok) {
            break;
        }
        sent++;
    }
    return sent;
}

/* Copies the response message out of its byte buffer. */
static void response_take(grpc_byte_buffer *bb, sw__grpc_result_t *res)
{
    grpc_byte_buffer_reader reader;
    if (bb == NULL || !grpc_byte_buffer_reader_init(&reader, bb)) {
        return;
    }
    grpc_slice all = grpc_byte_buffer_reader_readall(&reader);
    grpc_byte_buffer_reader_destroy(&reader);
    size_t len = GRPC_SLICE_LENGTH(all);
    res->response = malloc(len ? len : 1);
    if (res->response != NULL) {
        memcpy(res->response, GRPC_SLICE_START_PTR(all), len);
        res->response_len = len;
    }
    grpc_slice_unref(all);
}

/* The default TLS model: libskywalking.so may be dlopened (agent/CMakeLists.txt, "Thread-locals");
   this is read once per reporting call, and by the preload's gRPC interposers. */
_Thread_local bool sw__grpc_own_call;

static void call_run(grpc_channel *channel, grpc_completion_queue *queue, const char *method,
                     const sw__report_record_t *messages, size_t count, const char *token,
                     uint32_t timeout_ms, sw__grpc_cancel_t *cancel, sw__grpc_result_t *res);

void sw__grpc_call_run(grpc_channel *channel, grpc_completion_queue *queue, const char *method,
                       const sw__report_record_t *messages, size_t count, const char *token,
                       uint32_t timeout_ms, sw__grpc_cancel_t *cancel, sw__grpc_result_t *res)
{
    bool outer = sw__grpc_own_call;
    sw__grpc_own_call = true;
    call_run(channel, queue, method, messages, count, token, timeout_ms, cancel, res);
    sw__grpc_own_call = outer;
}

static void call_run(grpc_channel *channel, grpc_completion_queue *queue, const char *method,
                     const sw__report_record_t *messages, size_t count, const char *token,
                     uint32_t timeout_ms, sw__grpc_cancel_t *cancel, sw__grpc_result_t *res)
{
    memset(res, 0, sizeof *res);
    res->status = GRPC_STATUS_INTERNAL;
    gpr_timespec now = gpr_now(GPR_CLOCK_MONOTONIC);
    gpr_timespec deadline = gpr_time_add(now, gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
    gpr_timespec guard =
        gpr_time_add(deadline, gpr_time_from_millis(OVERRUN_GUARD_MS, GPR_TIMESPAN));
    grpc_call *call =
        grpc_channel_create_call(channel, NULL, GRPC_PROPAGATE_DEFAULTS, queue,
                                 grpc_slice_from_static_string(method), NULL, deadline, NULL);
    if (call == NULL) {
        snprintf(res->details, sizeof res->details, "gRPC could not create the call");
        return;
    }
    cancel_attach(cancel, call);

    grpc_metadata auth = {.key = grpc_slice_from_static_string("authentication")};
    grpc_metadata_array initial_md, trailing_md;
    grpc_metadata_array_init(&initial_md);
    grpc_metadata_array_init(&trailing_md);
    grpc_slice details = grpc_empty_slice();
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_byte_buffer *response = NULL;

    grpc_op start[2] = {{.op = GRPC_OP_SEND_INITIAL_METADATA},
                        {.op = GRPC_OP_RECV_STATUS_ON_CLIENT}};
    if (token != NULL && token[0] != '\0') {
        auth.value = grpc_slice_from_static_string(token); /* token outlives the call */
        start[0].data.send_initial_metadata.count = 1;
        start[0].data.send_initial_metadata.metadata = &auth;
    }
    start[1].data.recv_status_on_client.trailing_metadata = &trailing_md;
    start[1].data.recv_status_on_client.status = &status;
    start[1].data.recv_status_on_client.status_details = &details;
    if (grpc_call_start_batch(call, start, 2, TAG(tag_status), NULL) != GRPC_CALL_OK) {
        snprintf(res->details, sizeof res->details, "gRPC refused to start the call");
        cancel_detach(cancel);
        grpc_call_unref(call);
        return;
    }
    res->sent = messages_send(queue, call, messages, count, guard);

    grpc_op finish[3] = {{.op = GRPC_OP_SEND_CLOSE_FROM_CLIENT},
                         {.op = GRPC_OP_RECV_INITIAL_METADATA},
                         {.op = GRPC_OP_RECV_MESSAGE}};
    finish[1].data.recv_initial_metadata.recv_initial_metadata = &initial_md;
    finish[2].data.recv_message.recv_message = &response;
    if (grpc_call_start_batch(call, finish, 3, TAG(tag_close), NULL) == GRPC_CALL_OK) {
        (void)batch_wait(queue, call, TAG(tag_close), guard);
    } else {
        grpc_call_cancel(call, NULL); /* ends the call, so the status batch completes */
    }
    (void)batch_wait(queue, call, TAG(tag_status), guard);

    res->status = status;
    snprintf(res->details, sizeof res->details, "%.*s", (int)GRPC_SLICE_LENGTH(details),
             (const char *)GRPC_SLICE_START_PTR(details));
    if (status == GRPC_STATUS_OK) {
        response_take(response, res);
    }
    if (response != NULL) {
        grpc_byte_buffer_destroy(response);
    }
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&initial_md);
    grpc_metadata_array_destroy(&trailing_md);
    cancel_detach(cancel);
    grpc_call_unref(call);
}

const char *sw__grpc_status_name(grpc_status_code status)
{
    static const char *const names[] = {"OK",
                                        "CANCELLED",
                                        "UNKNOWN",
                                        "INVALID_ARGUMENT",
                                        "DEADLINE_EXCEEDED",
                                        "NOT_FOUND",
                                        "ALREADY_EXISTS",
                                        "PERMISSION_DENIED",
                                        "RESOURCE_EXHAUSTED",
                                        "FAILED_PRECONDITION",
                                        "ABORTED",
                                        "OUT_OF_RANGE",
                                        "UNIMPLEMENTED",
                                        "INTERNAL",
                                        "UNAVAILABLE",
                                        "DATA_LOSS",
                                        "UNAUTHENTICATED"};
    if ((int)status >= 0 && (size_t)status < sizeof names / sizeof names[0]) {
        return names[status];
    }
    return "UNKNOWN_STATUS";
}
