/*
 * preload_grpc.h - the pure parts of the gRPC plugin (preload_grpc.c), for its tests and fuzz
 * target: the propagation entries of a client call's metadata, and the incoming headers of a
 * server call's metadata.
 */
#ifndef SW_PRELOAD_GRPC_H
#define SW_PRELOAD_GRPC_H

#include <grpc/grpc.h>
#include <stdbool.h>
#include <stddef.h>

#include "skywalking.h"

/* sw8, sw8-correlation, sw8-x, traceparent, tracestate */
#define SW__GRPC_PROPAGATION_MAX 5

/* The incoming headers of a server call, copied out of its metadata (NUL-terminated). */
typedef struct sw__grpc_headers {
    sw_headers_t in; /* points into the buffers below; NULL members are absent */
    char sw8[SW_SW8_MAX];
    char correlation[SW_CORRELATION_HEADER_MAX];
    char x[SW_SW8_X_MAX];
    char traceparent[SW_TRACEPARENT_MAX];
    char tracestate[SW_TRACESTATE_MAX];
} sw__grpc_headers_t;

/*
 * Fills *h from `md` (NULL: none): the first entry of each propagation key whose value is not
 * empty, fits its buffer and holds no NUL byte (others are not what an agent writes, and are
 * ignored). The
 * values are only copied: sw_context_begin_entry parses them, and refuses malformed ones (a
 * new trace starts). Any thread; never allocates.
 */
void sw__grpc_headers_from_metadata(const grpc_metadata_array *md, sw__grpc_headers_t *h);

/*
 * Writes into md[0 .. SW__GRPC_PROPAGATION_MAX) the propagation entries of the exit span
 * `span` (SW_AGENT_PROPAGATION says which) and returns how many: static keys, values in new
 * gRPC slices that the caller must unref. 0 when the span is not recorded.
 */
size_t sw__grpc_propagation_build(sw_span_ref_t span, grpc_metadata *md);

/*
 * For the interposers of libgrpc++'s server (preload_grpc_sync.cpp), which learn of a call from
 * the core's allocation: notes a request awaited on `cq` under `tag`, whose call and metadata
 * gRPC fills before completing it, for the method registered as `method_tag`
 * (grpc_server_register_method) or, when NULL, named in *details. Returns the tag to give gRPC
 * instead of `tag`: `tag` itself, or on a callback queue a functor of the plugin's that runs
 * `tag` (preload_grpc_callback.c). Any thread (the core calls it); never starts the agent
 * (sw__grpc_server_tracing did, when the allocator was set).
 */
void *sw__grpc_request_note(void *tag, grpc_call **callp, grpc_metadata_array *md,
                            grpc_call_details *details, void *method_tag,
                            grpc_completion_queue *cq);

/* preload_grpc_callback.c: whether `cq` is a callback queue (its tags are functors). Takes the
   plugin's lock: never call it with the lock held. */
bool sw__grpc_cq_is_callback(const grpc_completion_queue *cq);

/* A functor that runs sw__grpc_completed(cq, itself, ok), then `orig_tag` (a functor), then
   sw__grpc_handler_done(cq), and frees itself; NULL when out of memory. A functor gRPC never
   got (the call that would have taken it failed) is freed with sw__grpc_functor_discard (NULL:
   nothing). Neither takes a lock. */
grpc_completion_queue_functor *sw__grpc_functor_wrap(void *orig_tag, grpc_completion_queue *cq);
void sw__grpc_functor_discard(grpc_completion_queue_functor *w);

/* preload_grpc.c: a completion of `tag` on `cq` came back (from a queue, or a functor run):
   ends or begins what the plugin awaited under it. */
void sw__grpc_completed(grpc_completion_queue *cq, void *tag, int success);

/* preload_grpc.c: a handler run from a callback queue's functor returned: the context its
   thread attached for it is detached. */
void sw__grpc_handler_done(grpc_completion_queue *cq);

/* Whether gRPC calls are traced on this thread; starts the agent on the first call. */
bool sw__grpc_server_tracing(void);

#endif /* SW_PRELOAD_GRPC_H */
