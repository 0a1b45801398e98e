/*
 * gs_c_client.c - a C program calling gs.Echo/Unary through gRPC's C API on a completion queue
 * of the callback kind (grpc_completion_queue_create_for_callback): the core runs the batch's
 * tag, a grpc_completion_queue_functor, on a thread of its own. Knows nothing of skywalking.
 *
 *   gs_c_client TARGET     exits 0 when the call ended with status OK and the echoed message
 */
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct done {
    grpc_completion_queue_functor functor; /* first: the batch's tag */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool ran;
    int ok;
} done_t;

/* Run by the core when the batch completes. */
static void done_run(grpc_completion_queue_functor *f, int ok)
{
    done_t *d = (done_t *)f;
    pthread_mutex_lock(&d->lock);
    d->ran = true;
    d->ok = ok;
    pthread_cond_signal(&d->cond);
    pthread_mutex_unlock(&d->lock);
}

/* The queue's shutdown callback: gRPC runs it on a thread of its own after
   grpc_completion_queue_shutdown, possibly after that call returns, so the functor is static and
   main waits for it (a functor on main's stack, or exiting first, crashed in gRPC's executor
   about 1 run in 30, with or without the agent). */
static done_t shutdown_done = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void done_wait(done_t *d, int seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += seconds;
    pthread_mutex_lock(&d->lock);
    while (!d->ran && pthread_cond_timedwait(&d->cond, &d->lock, &until) == 0) {
    }
    pthread_mutex_unlock(&d->lock);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gs_c_client TARGET\n");
        return 2;
    }
    grpc_init();
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    grpc_channel *ch = grpc_channel_create(argv[1], creds, NULL);
    grpc_channel_credentials_release(creds);
    shutdown_done.functor.functor_run = done_run;
    grpc_completion_queue *cq =
        grpc_completion_queue_create_for_callback(&shutdown_done.functor, NULL);
    gpr_timespec deadline =
        gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_seconds(30, GPR_TIMESPAN));
    grpc_call *call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                               grpc_slice_from_static_string("/gs.Echo/Unary"),
                                               NULL, deadline, NULL);
    static const char msg[] = {0x0a, 0x01, 'c'}; /* gs.Msg{text: "c"} */
    grpc_slice s = grpc_slice_from_static_buffer(msg, sizeof msg);
    grpc_byte_buffer *req = grpc_raw_byte_buffer_create(&s, 1), *resp = NULL;
    grpc_metadata_array initial, trailing;
    grpc_metadata_array_init(&initial);
    grpc_metadata_array_init(&trailing);
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    grpc_op ops[6] = {
        {.op = GRPC_OP_SEND_INITIAL_METADATA},  {.op = GRPC_OP_SEND_MESSAGE},
        {.op = GRPC_OP_SEND_CLOSE_FROM_CLIENT}, {.op = GRPC_OP_RECV_INITIAL_METADATA},
        {.op = GRPC_OP_RECV_MESSAGE},           {.op = GRPC_OP_RECV_STATUS_ON_CLIENT}};
    ops[1].data.send_message.send_message = req;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial;
    ops[4].data.recv_message.recv_message = &resp;
    ops[5].data.recv_status_on_client.trailing_metadata = &trailing;
    ops[5].data.recv_status_on_client.status = &status;
    ops[5].data.recv_status_on_client.status_details = &details;
    done_t d = {.functor = {.functor_run = done_run},
                .lock = PTHREAD_MUTEX_INITIALIZER,
                .cond = PTHREAD_COND_INITIALIZER};
    if (call == NULL || grpc_call_start_batch(call, ops, 6, &d.functor, NULL) != GRPC_CALL_OK) {
        fprintf(stderr, "gs_c_client: cannot start the call\n");
        return 1;
    }
    done_wait(&d, 60);
    pthread_mutex_lock(&d.lock);
    bool ran = d.ran;
    pthread_mutex_unlock(&d.lock);
    bool echoed = false;
    if (resp != NULL) {
        grpc_byte_buffer_reader r;
        if (grpc_byte_buffer_reader_init(&r, resp)) {
            grpc_slice all = grpc_byte_buffer_reader_readall(&r);
            echoed = GRPC_SLICE_LENGTH(all) == sizeof msg &&
                     memcmp(GRPC_SLICE_START_PTR(all), msg, sizeof msg) == 0;
            grpc_slice_unref(all);
            grpc_byte_buffer_reader_destroy(&r);
        }
        grpc_byte_buffer_destroy(resp);
    }
    if (!ran || !d.ok || status != GRPC_STATUS_OK || !echoed) {
        fprintf(stderr, "gs_c_client: ran %d ok %d status %d echoed %d\n", ran, d.ok, (int)status,
                echoed);
        return 1;
    }
    grpc_byte_buffer_destroy(req);
    grpc_metadata_array_destroy(&initial);
    grpc_metadata_array_destroy(&trailing);
    grpc_slice_unref(details);
    grpc_call_unref(call);
    grpc_completion_queue_shutdown(cq);
    done_wait(&shutdown_done, 60);
    pthread_mutex_lock(&shutdown_done.lock);
    bool shut = shutdown_done.ran;
    pthread_mutex_unlock(&shutdown_done.lock);
    if (!shut) {
        fprintf(stderr, "gs_c_client: the queue's shutdown callback did not run within 60 s\n");
        return 1;
    }
    grpc_completion_queue_destroy(cq);
    grpc_channel_destroy(ch);
    grpc_shutdown();
    return 0;
}
