/*
 * preload_grpc_calls.h - what the gRPC plugin's files share (internal): the records of the
 * calls it traces and of the completions it awaits, their maps, and the server half's entry
 * points (preload_grpc.c: the maps, client calls, batches, completions; preload_grpc_server.c:
 * server calls).
 */
#ifndef SW_PRELOAD_GRPC_CALLS_H
#define SW_PRELOAD_GRPC_CALLS_H

#include <grpc/grpc.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "preload_grpc.h"
#include "preload_handle_map.h"

#define METHOD_MAX 512
#define PEER_MAX   256

typedef struct call_rec {
    sw__handle_node_t node; /* first: the map's link, keyed by the grpc_call */
    sw_span_ref_t span;
    long refs; /* the program's references (grpc_call_ref / _unref; libgrpc++ takes one per
                  batch): the last unref ends a span still open */
    bool server;
    void *status_tag;          /* client: the tag of the batch that receives the status, or NULL */
    grpc_completion_queue *cq; /* client: the call's queue */
    bool callback_cq;          /* client: a callback queue (preload_grpc_callback.c) */
    size_t nmd;                /* client: propagation entries not yet sent (owned slices) */
    grpc_metadata md[SW__GRPC_PROPAGATION_MAX];
} call_rec_t;

typedef enum { PEND_STATUS, PEND_REQUEST } pend_kind_t;

typedef struct pending {
    sw__handle_node_t node; /* first: keyed by the batch's or the request's tag */
    pend_kind_t kind;
    grpc_completion_queue *cq; /* where the completion comes */
    grpc_call *call;           /* PEND_STATUS */
    grpc_status_code *status;  /* PEND_STATUS: the caller's, written before the completion */
    grpc_slice *details;
    grpc_call **callp; /* PEND_REQUEST: filled by gRPC before the completion */
    grpc_metadata_array *md;
    grpc_call_details *call_details;     /* unregistered requests */
    char *method;                        /* registered requests: a copy of the registration's */
    grpc_completion_queue_functor *wrap; /* on a callback queue: the key, our functor */
} pending_t;

/*
 * Calls traced and not yet ended (by grpc_call) and completions awaited (by tag), global because
 * gRPC gives no place of ours to keep them. SW__PLUGIN_LOCK_GRPC protects the buckets and every
 * node. The counts let the hot paths skip the lock while nothing is traced (relaxed: a stale
 * zero only means one completion looked up under the lock later, since the add happens before
 * the call that can complete it).
 */
extern sw__handle_map_t sw__grpc_calls, sw__grpc_pendings;
extern _Atomic long sw__grpc_calls_n, sw__grpc_pendings_n;

/* Adds `node` to `m` (takes the lock). */
void sw__grpc_map_put(sw__handle_map_t *m, _Atomic long *n, sw__handle_node_t *node);
/* Removes and returns the node of `key`; SW__PLUGIN_LOCK_GRPC held. */
void *sw__grpc_map_take(sw__handle_map_t *m, _Atomic long *n, const void *key);
/* The same, taking the lock (nothing when the map is empty). */
void *sw__grpc_map_take_locked(sw__handle_map_t *m, _Atomic long *n, const void *key);
void sw__grpc_pending_free(pending_t *p);

/* Whether this thread's gRPC calls are to be traced (starts the agent on the first). */
bool sw__grpc_tracing(void);

/* A copy of the method registered as `handle` (malloc), or NULL. */
char *sw__grpc_registered_method_copy(void *handle);

/* preload_grpc_server.c: the request of `p` was delivered on `cq`: begins its entry span and
   attaches its context to this thread. */
void sw__grpc_server_begin(pending_t *p, grpc_completion_queue *cq);
/* Ends a server call's span (status: the one sent, or NULL) and frees rec; detaches it first
   when this thread has it attached. */
void sw__grpc_server_end(call_rec_t *rec, const grpc_status_code *status);
/* Restores what the attach of this thread's server call saved (nothing when none). */
void sw__grpc_attach_end(void);
/* Whether this thread has the server call received from `cq` attached. */
bool sw__grpc_attached_from(const grpc_completion_queue *cq);

#endif /* SW_PRELOAD_GRPC_CALLS_H */
