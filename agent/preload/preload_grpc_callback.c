/*
 * preload_grpc_callback.c - completion queues of the callback kind (internal, part of the gRPC
 * plugin, preload_grpc.c).
 *
 * On a callback queue (libgrpc++'s callback API: CallbackService, stub->async()) the core runs
 * each completion's tag itself, a grpc_completion_queue_functor, instead of handing it to
 * grpc_completion_queue_next / _pluck. The plugin remembers which queues are of that kind
 * (grpc_completion_queue_create with GRPC_CQ_CALLBACK attributes, _create_for_callback; forgotten
 * at grpc_completion_queue_destroy) and, for the completions it awaits there (a request's
 * arrival, a client call's status), passes gRPC a functor of its own instead of the caller's:
 * it runs the plugin's completion (sw__grpc_completed), then the caller's functor with the same
 * result, then ends what the handler's thread had attached (sw__grpc_handler_done), and frees
 * itself. The caller's functor is called exactly once, as gRPC would have called it.
 */
#include <grpc/grpc.h>
#include <stdlib.h>

#include "preload.h"
#include "preload_grpc.h"
#include "preload_handle_map.h"
#include "preload_lock.h"

typedef struct wrap {
    grpc_completion_queue_functor base; /* first: what gRPC runs */
    grpc_completion_queue_functor *orig;
    grpc_completion_queue *cq;
} wrap_t;

/* Callback queues alive, by address (the node is the whole record). SW__PLUGIN_LOCK_GRPC
   protects it; the count lets the other queues skip the lock (relaxed: a queue is added before
   the program can use it, on the thread that creates it). */
static sw__handle_map_t callback_cqs;
static _Atomic long callback_cqs_n;

static void remember(grpc_completion_queue *cq)
{
    sw__handle_node_t *n = calloc(1, sizeof *n);
    if (cq == NULL || n == NULL) {
        free(n);
        return;
    }
    n->handle = cq;
    sw__plugin_lock(SW__PLUGIN_LOCK_GRPC);
    sw__handle_map_add(&callback_cqs, n);
    atomic_fetch_add_explicit(&callback_cqs_n, 1, memory_order_relaxed);
    sw__plugin_unlock(SW__PLUGIN_LOCK_GRPC);
}

bool sw__grpc_cq_is_callback(const grpc_completion_queue *cq)
{
    if (cq == NULL || atomic_load_explicit(&callback_cqs_n, memory_order_relaxed) == 0) {
        return false;
    }
    sw__plugin_lock(SW__PLUGIN_LOCK_GRPC);
    bool found = sw__handle_map_find(&callback_cqs, cq) != NULL;
    sw__plugin_unlock(SW__PLUGIN_LOCK_GRPC);
    return found;
}

grpc_completion_queue *grpc_completion_queue_create(const grpc_completion_queue_factory *factory,
                                                    const grpc_completion_queue_attributes *attr,
                                                    void *reserved)
{
    grpc_completion_queue *(*real)(const grpc_completion_queue_factory *,
                                   const grpc_completion_queue_attributes *, void *);
    SW__PRELOAD_REAL(real, "grpc_completion_queue_create");
    if (real == NULL) {
        return NULL;
    }
    grpc_completion_queue *cq = real(factory, attr, reserved);
    if (attr != NULL && attr->cq_completion_type == GRPC_CQ_CALLBACK) {
        remember(cq);
    }
    return cq;
}

grpc_completion_queue *
grpc_completion_queue_create_for_callback(grpc_completion_queue_functor *shutdown_callback,
                                          void *reserved)
{
    grpc_completion_queue *(*real)(grpc_completion_queue_functor *, void *);
    SW__PRELOAD_REAL(real, "grpc_completion_queue_create_for_callback");
    if (real == NULL) {
        return NULL;
    }
    grpc_completion_queue *cq = real(shutdown_callback, reserved);
    remember(cq);
    return cq;
}

void grpc_completion_queue_destroy(grpc_completion_queue *cq)
{
    void (*real)(grpc_completion_queue *);
    SW__PRELOAD_REAL(real, "grpc_completion_queue_destroy");
    if (atomic_load_explicit(&callback_cqs_n, memory_order_relaxed) != 0) {
        sw__plugin_lock(SW__PLUGIN_LOCK_GRPC);
        sw__handle_node_t *n = sw__handle_map_take(&callback_cqs, cq);
        if (n != NULL) {
            atomic_fetch_sub_explicit(&callback_cqs_n, 1, memory_order_relaxed);
        }
        sw__plugin_unlock(SW__PLUGIN_LOCK_GRPC);
        free(n);
    }
    if (real != NULL) {
        real(cq);
    }
}

/* What gRPC runs in place of the caller's functor (on a thread of its own choice). */
static void wrap_run(grpc_completion_queue_functor *f, int ok)
{
    wrap_t *w = (wrap_t *)f;
    grpc_completion_queue_functor *orig = w->orig;
    grpc_completion_queue *cq = w->cq;
    sw__grpc_completed(cq, w, ok);
    free(w); /* before the caller's functor, which may destroy the queue */
    orig->functor_run(orig, ok);
    sw__grpc_handler_done(cq);
}

grpc_completion_queue_functor *sw__grpc_functor_wrap(void *orig_tag, grpc_completion_queue *cq)
{
    if (orig_tag == NULL) {
        return NULL;
    }
    grpc_completion_queue_functor *orig = orig_tag;
    wrap_t *w = calloc(1, sizeof *w);
    if (w != NULL) {
        w->base.functor_run = wrap_run;
        w->base.inlineable = orig->inlineable;
        w->orig = orig;
        w->cq = cq;
    }
    return w != NULL ? &w->base : NULL;
}

void sw__grpc_functor_discard(grpc_completion_queue_functor *w)
{
    free(w);
}
