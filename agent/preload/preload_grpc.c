/*
 * preload_grpc.c - gRPC's C core (Debian's libgrpc; libgrpc++ calls it through its PLT, so C
 * and C++ programs are covered unmodified): an exit span per client call and an entry span per
 * server call (layer RPCFramework, component gRPC 23, tag grpc.status_code, error on a status
 * other than OK), sw8 (and/or traceparent, as SW_AGENT_PROPAGATION says) in the call's initial
 * metadata. Streaming calls get one span per call. docs/GRPC_SPANS.md has the details.
 *
 * Client: grpc_channel_create_call / grpc_channel_create_registered_call begin a request
 * context (sw_context_begin_exit) whose exit span has the method path as operation and the
 * channel's target as peer; when the creating thread has an active span, the exit span records
 * it as a CrossThread reference (a call may complete on any thread: a span of the thread's own
 * segment could not end there). The propagation headers are computed then and added to the
 * first batch that sends the initial metadata: gRPC copies the metadata array in
 * grpc_call_start_batch (the keys are copied, the values referenced), so a copy of the caller's
 * ops and metadata on this stack is enough. The batch with GRPC_OP_RECV_STATUS_ON_CLIENT is
 * remembered by tag; its completion (grpc_completion_queue_next / _pluck) ends the span with
 * the status. A call whose completion is never seen there (the callback API, or an unref
 * before completion) ends at grpc_call_unref, without a status.
 *
 * Server: grpc_server_request_call / _registered_call (and, for libgrpc++'s synchronous server,
 * the core's allocations: preload_grpc_sync.cpp, sw__grpc_request_note) are remembered by tag;
 * their completion
 * begins an entry span that continues the sw8 of the request's metadata, and attaches its
 * context to the thread that received it (sw_context_attach), so that what the handler does on
 * that thread (another gRPC call, libcurl, libpq...) nests under it. GRPC_OP_SEND_STATUS_FROM_
 * SERVER ends it with the status; the thread detaches when it sends that status, unrefs the
 * call, or polls the queue it received the call from again (an asynchronous server's loop).
 *
 * The server half is in preload_grpc_server.c, callback queues in preload_grpc_callback.c, the
 * metadata in preload_grpc_md.c, libgrpc++'s synchronous server in preload_grpc_sync.cpp.
 *
 * The agent's own reporter uses the same core from inside this library; its calls run with
 * sw__grpc_own_call set (agent/src/grpc/grpc_reporter_call.h) and are only forwarded; calls of
 * SkyWalking's own methods (/skywalking.*) are never traced, whoever makes them.
 */
#include <grpc/grpc.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/grpc/grpc_reporter_call.h"
#include "preload.h"
#include "preload_grpc_calls.h"
#include "preload_lock.h"

#define OPS_MAX  8  /* ops of one batch copied on the stack (gRPC has 8 op kinds) */
#define MD_STACK 16 /* the caller's metadata entries copied on the stack; more: malloc */

typedef struct registration {
    sw__handle_node_t node; /* keyed by the handle gRPC returned */
    char *method;
    char *peer; /* client registrations: the channel's target */
} registration_t;

/* The calls and completions (preload_grpc_calls.h says why global and how locked). */
sw__handle_map_t sw__grpc_calls, sw__grpc_pendings;
_Atomic long sw__grpc_calls_n, sw__grpc_pendings_n;
/* Registered methods, by the handle gRPC returned: the same reason, the same lock. */
static sw__handle_map_t registrations;

typedef struct real_fns {
    grpc_call_error (*start_batch)(grpc_call *, const grpc_op *, size_t, void *, void *);
    void (*unref)(grpc_call *);
} real_fns_t;

static bool reals(real_fns_t *f)
{
    SW__PRELOAD_REAL(f->start_batch, "grpc_call_start_batch");
    SW__PRELOAD_REAL(f->unref, "grpc_call_unref");
    return f->start_batch != NULL && f->unref != NULL;
}

/* Whether this thread's gRPC calls are to be traced (starts the agent on the first). */
bool sw__grpc_tracing(void)
{
    return !sw__grpc_own_call && !sw__preload_busy && sw__preload_agent_ready();
}

/* A method of SkyWalking's own protocol (skywalking.v3.TraceSegmentReportService, ...): the
   reporting of an agent this library cannot mark (a second copy of the agent linked statically
   into the program, whose flag is its own), never traced either. */
static bool reporting_method(const char *method, size_t len)
{
    static const char prefix[] = "/skywalking.";
    return len >= sizeof prefix - 1 && memcmp(method, prefix, sizeof prefix - 1) == 0;
}

void sw__grpc_map_put(sw__handle_map_t *m, _Atomic long *n, sw__handle_node_t *node)
{
    sw__plugin_lock(SW__PLUGIN_LOCK_GRPC);
    sw__handle_map_add(m, node);
    atomic_fetch_add_explicit(n, 1, memory_order_relaxed);
    sw__plugin_unlock(SW__PLUGIN_LOCK_GRPC);
}

/* Removes and returns the node of `key`; SW__PLUGIN_LOCK_GRPC held. */
void *sw__grpc_map_take(sw__handle_map_t *m, _Atomic long *n, const void *key)
{
    sw__handle_node_t *node = sw__handle_map_take(m, key);
    if (node != NULL) {
        atomic_fetch_sub_explicit(n, 1, memory_order_relaxed);
    }
    return node;
}

void *sw__grpc_map_take_locked(sw__handle_map_t *m, _Atomic long *n, const void *key)
{
    if (atomic_load_explicit(n, memory_order_relaxed) == 0) {
        return NULL;
    }
    sw__plugin_lock(SW__PLUGIN_LOCK_GRPC);
    void *node = sw__grpc_map_take(m, n, key);
    sw__plugin_unlock(SW__PLUGIN_LOCK_GRPC);
    return node;
}

void sw__grpc_pending_free(pending_t *p)
{
    if (p != NULL) {
        free(p->method);
        free(p);
    }
}

static void slices_unref(grpc_metadata *md, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        grpc_slice_unref(md[i].value);
    }
}

/* ----------------------------------------------------------------------------------------- */
/* Registrations                                                                              */
/* ----------------------------------------------------------------------------------------- */

static void registration_remember(void *handle, const char *method, const char *peer)
{
    if (handle == NULL || method == NULL) {
        return;
    }
    registration_t *r = calloc(1, sizeof *r);
    char *m = strdup(method);
    char *p = peer != NULL ? strdup(peer) : NULL;
    if (r == NULL || m == NULL) {
        free(r);
        free(m);
        free(p);
        return;
    }
    r->node.handle = handle;
    r->method = m;
    r->peer = p;
    sw__plugin_lock(SW__PLUGIN_LOCK_GRPC);
    /* A handle of a destroyed channel or server may be reused: the newest registration wins. */
    registration_t *old = (registration_t *)sw__handle_map_take(&registrations, handle);
    sw__handle_map_add(&registrations, &r->node);
    sw__plugin_unlock(SW__PLUGIN_LOCK_GRPC);
    if (old != NULL) {
        free(old->method);
        free(old->peer);
        free(old);
    }
}

/* Copies the method and peer of a registration into the buffers ("" when unknown). A
   registration lives until its handle is registered again (one per method of a channel or
   server). */
static void registration_get(void *handle, char *method, char *peer)
{
    method[0] = peer[0] = '\0';
    sw__plugin_lock(SW__PLUGIN_LOCK_GRPC);
    registration_t *r = (registration_t *)sw__handle_map_find(&registrations, handle);
    if (r != NULL) {
        snprintf(method, METHOD_MAX, "%s", r->method);
        snprintf(peer, PEER_MAX, "%s", r->peer != NULL ? r->peer : "");
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_GRPC);
}

/* A copy of the method registered as `handle` (malloc), or NULL. */
char *sw__grpc_registered_method_copy(void *handle)
{
    sw__plugin_lock(SW__PLUGIN_LOCK_GRPC);
    registration_t *r = (registration_t *)sw__handle_map_find(&registrations, handle);
    char *m = r != NULL ? strdup(r->method) : NULL;
    sw__plugin_unlock(SW__PLUGIN_LOCK_GRPC);
    return m;
}

/* The channel's target without a "dns:///" scheme, into peer[PEER_MAX]. */
static void target_of(grpc_channel *channel, char *peer)
{
    peer[0] = '\0';
    char *t = grpc_channel_get_target(channel);
    if (t == NULL) {
        return;
    }
    const char *p = t;
    if (strncmp(p, "dns:///", 7) == 0) {
        p += 7;
    } else if (strncmp(p, "dns:", 4) == 0) {
        p += 4;
    }
    snprintf(peer, PEER_MAX, "%s", p);
    gpr_free(t);
}

void *grpc_channel_register_call(grpc_channel *channel, const char *method, const char *host,
                                 void *reserved)
{
    void *(*real)(grpc_channel *, const char *, const char *, void *);
    SW__PRELOAD_REAL(real, "grpc_channel_register_call");
    if (real == NULL) {
        return NULL;
    }
    void *handle = real(channel, method, host, reserved);
    if (handle != NULL && !sw__grpc_own_call && !sw__preload_busy) {
        char peer[PEER_MAX];
        target_of(channel, peer);
        registration_remember(handle, method, peer);
    }
    return handle;
}

void *grpc_server_register_method(grpc_server *server, const char *method, const char *host,
                                  grpc_server_register_method_payload_handling payload_handling,
                                  uint32_t flags)
{
    void *(*real)(grpc_server *, const char *, const char *,
                  grpc_server_register_method_payload_handling, uint32_t);
    SW__PRELOAD_REAL(real, "grpc_server_register_method");
    if (real == NULL) {
        return NULL;
    }
    void *handle = real(server, method, host, payload_handling, flags);
    if (handle != NULL && !sw__grpc_own_call && !sw__preload_busy) {
        registration_remember(handle, method, NULL);
    }
    return handle;
}

/* ----------------------------------------------------------------------------------------- */
/* Client calls                                                                               */
/* ----------------------------------------------------------------------------------------- */

/* Begins the exit span of a new client call and remembers the call. */
static void client_begin(grpc_call *call, grpc_completion_queue *cq, const char *method,
                         const char *peer)
{
    sw_snapshot_t snap;
    int cap = sw_capture(&snap);
    if (cap == SW_ENOTRACED) {
        return; /* the thread's trace is not sampled: the call is not either */
    }
    call_rec_t *rec = calloc(1, sizeof *rec);
    if (rec == NULL) {
        return;
    }
    if (sw_context_begin_exit(method, peer[0] != '\0' ? peer : NULL, &rec->span) != SW_OK) {
        free(rec);
        return;
    }
    if (cap == SW_OK) {
        (void)sw_span_ref_continue(rec->span, &snap);
    }
    (void)sw_span_ref_set_layer(rec->span, SW_LAYER_RPC_FRAMEWORK);
    (void)sw_span_ref_set_component(rec->span, SW__COMPONENT_GRPC);
    rec->nmd = sw__grpc_propagation_build(rec->span, rec->md);
    rec->refs = 1;
    rec->cq = cq;
    rec->callback_cq = sw__grpc_cq_is_callback(cq);
    rec->node.handle = call;
    sw__grpc_map_put(&sw__grpc_calls, &sw__grpc_calls_n, &rec->node);
}

grpc_call *grpc_channel_create_call(grpc_channel *channel, grpc_call *parent_call,
                                    uint32_t propagation_mask, grpc_completion_queue *cq,
                                    grpc_slice method, const grpc_slice *host,
                                    gpr_timespec deadline, void *reserved)
{
    grpc_call *(*real)(grpc_channel *, grpc_call *, uint32_t, grpc_completion_queue *, grpc_slice,
                       const grpc_slice *, gpr_timespec, void *);
    SW__PRELOAD_REAL(real, "grpc_channel_create_call");
    if (real == NULL) {
        return NULL;
    }
    grpc_call *call =
        real(channel, parent_call, propagation_mask, cq, method, host, deadline, reserved);
    if (call == NULL || cq == NULL ||
        reporting_method((const char *)GRPC_SLICE_START_PTR(method), GRPC_SLICE_LENGTH(method)) ||
        !sw__grpc_tracing()) {
        return call;
    }
    char m[METHOD_MAX], peer[PEER_MAX];
    snprintf(m, sizeof m, "%.*s", (int)GRPC_SLICE_LENGTH(method),
             (const char *)GRPC_SLICE_START_PTR(method));
    target_of(channel, peer);
    client_begin(call, cq, m, peer);
    return call;
}

grpc_call *grpc_channel_create_registered_call(grpc_channel *channel, grpc_call *parent_call,
                                               uint32_t propagation_mask, grpc_completion_queue *cq,
                                               void *handle, gpr_timespec deadline, void *reserved)
{
    grpc_call *(*real)(grpc_channel *, grpc_call *, uint32_t, grpc_completion_queue *, void *,
                       gpr_timespec, void *);
    SW__PRELOAD_REAL(real, "grpc_channel_create_registered_call");
    if (real == NULL) {
        return NULL;
    }
    grpc_call *call = real(channel, parent_call, propagation_mask, cq, handle, deadline, reserved);
    if (call == NULL || cq == NULL || !sw__grpc_tracing()) {
        return call;
    }
    char m[METHOD_MAX], peer[PEER_MAX];
    registration_get(handle, m, peer);
    if (m[0] == '\0' || reporting_method(m, strlen(m))) {
        return call; /* registered before this library could see it */
    }
    client_begin(call, cq, m, peer);
    return call;
}

/* Ends a client call's span with the status gRPC wrote (when `status` is not NULL). */
static void client_end(call_rec_t *rec, const grpc_status_code *status, const grpc_slice *details)
{
    if (status != NULL) {
        (void)sw_span_ref_tag(rec->span, "grpc.status_code", sw__grpc_status_name(*status));
        if (*status != GRPC_STATUS_OK) {
            (void)sw_span_ref_set_error(rec->span, true);
            char msg[512];
            size_t len = details != NULL ? GRPC_SLICE_LENGTH(*details) : 0;
            snprintf(msg, sizeof msg, "%.*s", (int)(len < sizeof msg ? len : sizeof msg - 1),
                     len ? (const char *)GRPC_SLICE_START_PTR(*details) : "");
            sw_kv_t kv[2] = {{"event", "error"}, {"message", msg}};
            (void)sw_span_ref_log(rec->span, kv, msg[0] != '\0' ? 2 : 1);
        }
    }
    (void)sw_span_ref_end(rec->span);
    slices_unref(rec->md, rec->nmd);
    free(rec);
}

/* ----------------------------------------------------------------------------------------- */
/* Batches, completions, unref                                                                */
/* ----------------------------------------------------------------------------------------- */

/* Runs a client batch with our propagation entries added to its initial metadata. */
static grpc_call_error batch_with_metadata(const real_fns_t *f, grpc_call *call, const grpc_op *ops,
                                           size_t nops, void *tag, void *reserved, size_t send_md,
                                           grpc_metadata *ours, size_t n_ours)
{
    grpc_op copy[OPS_MAX];
    const struct grpc_op_send_initial_metadata *in = &ops[send_md].data.send_initial_metadata;
    size_t total = in->count + n_ours;
    grpc_metadata stack_md[MD_STACK + SW__GRPC_PROPAGATION_MAX];
    grpc_metadata *md =
        total <= sizeof stack_md / sizeof *stack_md ? stack_md : malloc(total * sizeof *md);
    if (nops > OPS_MAX || md == NULL) {
        if (md != stack_md) {
            free(md);
        }
        return f->start_batch(call, ops, nops, tag, reserved);
    }
    if (in->count > 0) {
        memcpy(md, in->metadata, in->count * sizeof *md);
    }
    memcpy(md + in->count, ours, n_ours * sizeof *md);
    memcpy(copy, ops, nops * sizeof *copy);
    copy[send_md].data.send_initial_metadata.count = total;
    copy[send_md].data.send_initial_metadata.metadata = md;
    grpc_call_error rc = f->start_batch(call, copy, nops, tag, reserved);
    if (md != stack_md) {
        free(md);
    }
    return rc;
}

/* Whether the caller's own metadata already carries `key`. */
static bool caller_has(const grpc_op *op, const char *key)
{
    const struct grpc_op_send_initial_metadata *in = &op->data.send_initial_metadata;
    size_t klen = strlen(key);
    for (size_t i = 0; i < in->count; i++) {
        grpc_slice k = in->metadata[i].key;
        if (GRPC_SLICE_LENGTH(k) == klen && memcmp(GRPC_SLICE_START_PTR(k), key, klen) == 0) {
            return true;
        }
    }
    return false;
}

/* A client batch of a traced call: propagation headers on the initial metadata, and the batch
   that receives the status remembered for its completion. */
static grpc_call_error client_batch(const real_fns_t *f, grpc_call *call, const grpc_op *ops,
                                    size_t nops, void *tag, void *reserved)
{
    ptrdiff_t send_md = -1, recv_status = -1;
    for (size_t i = 0; i < nops; i++) {
        if (ops[i].op == GRPC_OP_SEND_INITIAL_METADATA) {
            send_md = (ptrdiff_t)i;
        } else if (ops[i].op == GRPC_OP_RECV_STATUS_ON_CLIENT) {
            recv_status = (ptrdiff_t)i;
        }
    }
    grpc_metadata ours[SW__GRPC_PROPAGATION_MAX];
    size_t n_ours = 0;
    pending_t *p = NULL;
    if (recv_status >= 0 && tag != NULL) {
        p = calloc(1, sizeof *p);
    }
    sw__plugin_lock(SW__PLUGIN_LOCK_GRPC);
    call_rec_t *rec = (call_rec_t *)sw__handle_map_find(&sw__grpc_calls, call);
    if (rec != NULL && !rec->server && send_md >= 0) {
        n_ours = rec->nmd; /* ours to send (and unref) now */
        memcpy(ours, rec->md, n_ours * sizeof *ours);
        rec->nmd = 0;
    }
    void *use = tag; /* the batch's tag for gRPC: ours on a callback queue */
    if (rec != NULL && !rec->server && p != NULL && rec->status_tag == NULL && rec->callback_cq &&
        (p->wrap = sw__grpc_functor_wrap(tag, rec->cq)) != NULL) {
        use = p->wrap;
    }
    if (rec != NULL && !rec->server && p != NULL && rec->status_tag == NULL &&
        (!rec->callback_cq || p->wrap != NULL)) {
        p->node.handle = use;
        p->kind = PEND_STATUS;
        p->call = call;
        p->status = ops[recv_status].data.recv_status_on_client.status;
        p->details = ops[recv_status].data.recv_status_on_client.status_details;
        rec->status_tag = use;
        sw__handle_map_add(&sw__grpc_pendings, &p->node);
        atomic_fetch_add_explicit(&sw__grpc_pendings_n, 1, memory_order_relaxed);
    } else {
        free(p); /* under the lock: short, and allowed (preload_lock.h) */
        p = NULL;
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_GRPC);
    grpc_call_error rc;
    if (n_ours > 0 && !caller_has(&ops[send_md], "sw8") &&
        !caller_has(&ops[send_md], "traceparent")) {
        rc = batch_with_metadata(f, call, ops, nops, use, reserved, (size_t)send_md, ours, n_ours);
    } else {
        rc = f->start_batch(call, ops, nops, use, reserved);
    }
    slices_unref(ours, n_ours); /* gRPC took its own references */
    if (rc != GRPC_CALL_OK && p != NULL) {
        sw__plugin_lock(SW__PLUGIN_LOCK_GRPC);
        pending_t *q = sw__grpc_map_take(&sw__grpc_pendings, &sw__grpc_pendings_n, use);
        call_rec_t *r = (call_rec_t *)sw__handle_map_find(&sw__grpc_calls, call);
        if (r != NULL) {
            r->status_tag = NULL;
        }
        sw__plugin_unlock(SW__PLUGIN_LOCK_GRPC);
        if (q != NULL) {
            sw__grpc_functor_discard(q->wrap); /* gRPC never got it */
        }
        sw__grpc_pending_free(q);
    }
    return rc;
}

grpc_call_error grpc_call_start_batch(grpc_call *call, const grpc_op *ops, size_t nops, void *tag,
                                      void *reserved)
{
    real_fns_t f;
    if (!reals(&f)) {
        return GRPC_CALL_ERROR;
    }
    if (sw__grpc_own_call || atomic_load_explicit(&sw__grpc_calls_n, memory_order_relaxed) == 0 ||
        ops == NULL) {
        return f.start_batch(call, ops, nops, tag, reserved);
    }
    const grpc_op *status_op = NULL;
    for (size_t i = 0; i < nops; i++) {
        if (ops[i].op == GRPC_OP_SEND_STATUS_FROM_SERVER) {
            status_op = &ops[i];
        }
    }
    if (status_op == NULL) {
        return client_batch(&f, call, ops, nops, tag, reserved);
    }
    /* The server's status: the handler is done. */
    grpc_status_code status = status_op->data.send_status_from_server.status;
    sw__plugin_lock(SW__PLUGIN_LOCK_GRPC);
    call_rec_t *rec = (call_rec_t *)sw__handle_map_find(&sw__grpc_calls, call);
    if (rec != NULL && rec->server) {
        rec = sw__grpc_map_take(&sw__grpc_calls, &sw__grpc_calls_n, call);
    } else {
        rec = NULL;
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_GRPC);
    grpc_call_error rc = f.start_batch(call, ops, nops, tag, reserved);
    if (rec != NULL) {
        sw__grpc_server_end(rec, &status);
    }
    return rc;
}

/* A completion of `cq` came back to the program: ends or begins what it completes. */
void sw__grpc_completed(grpc_completion_queue *cq, void *tag, int success)
{
    grpc_event ev = {.type = GRPC_OP_COMPLETE, .success = success, .tag = tag};
    if (tag == NULL || atomic_load_explicit(&sw__grpc_pendings_n, memory_order_relaxed) == 0) {
        return;
    }
    call_rec_t *rec = NULL;
    sw__plugin_lock(SW__PLUGIN_LOCK_GRPC);
    pending_t *p = (pending_t *)sw__handle_map_find(&sw__grpc_pendings, ev.tag);
    if (p != NULL && p->cq != cq && p->kind == PEND_REQUEST) {
        p = NULL; /* the same tag value on another queue: not ours */
    }
    if (p != NULL) {
        p = sw__grpc_map_take(&sw__grpc_pendings, &sw__grpc_pendings_n, ev.tag);
        if (p->kind == PEND_STATUS) {
            rec = sw__grpc_map_take(&sw__grpc_calls, &sw__grpc_calls_n, p->call);
        }
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_GRPC);
    if (p == NULL) {
        return;
    }
    if (p->kind == PEND_STATUS && rec != NULL) {
        client_end(rec, ev.success ? p->status : NULL, ev.success ? p->details : NULL);
    } else if (p->kind == PEND_REQUEST && ev.success) {
        sw__grpc_server_begin(p, cq);
    }
    sw__grpc_pending_free(p);
}

grpc_event grpc_completion_queue_next(grpc_completion_queue *cq, gpr_timespec deadline,
                                      void *reserved)
{
    grpc_event (*real)(grpc_completion_queue *, gpr_timespec, void *);
    SW__PRELOAD_REAL(real, "grpc_completion_queue_next");
    if (real == NULL) {
        grpc_event none = {.type = GRPC_QUEUE_TIMEOUT};
        return none;
    }
    if (sw__grpc_own_call) {
        return real(cq, deadline, reserved);
    }
    if (sw__grpc_attached_from(cq)) {
        sw__grpc_attach_end(); /* back to the server's loop: the handler returned */
    }
    grpc_event ev = real(cq, deadline, reserved);
    if (ev.type == GRPC_OP_COMPLETE) {
        sw__grpc_completed(cq, ev.tag, ev.success);
    }
    return ev;
}

grpc_event grpc_completion_queue_pluck(grpc_completion_queue *cq, void *tag, gpr_timespec deadline,
                                       void *reserved)
{
    grpc_event (*real)(grpc_completion_queue *, void *, gpr_timespec, void *);
    SW__PRELOAD_REAL(real, "grpc_completion_queue_pluck");
    if (real == NULL) {
        grpc_event none = {.type = GRPC_QUEUE_TIMEOUT};
        return none;
    }
    if (sw__grpc_own_call) {
        return real(cq, tag, deadline, reserved);
    }
    if (sw__grpc_attached_from(cq)) {
        sw__grpc_attach_end();
    }
    grpc_event ev = real(cq, tag, deadline, reserved);
    if (ev.type == GRPC_OP_COMPLETE) {
        sw__grpc_completed(cq, ev.tag, ev.success);
    }
    return ev;
}

void grpc_call_ref(grpc_call *call)
{
    void (*real)(grpc_call *);
    SW__PRELOAD_REAL(real, "grpc_call_ref");
    if (real == NULL) {
        return;
    }
    if (!sw__grpc_own_call && atomic_load_explicit(&sw__grpc_calls_n, memory_order_relaxed) != 0) {
        sw__plugin_lock(SW__PLUGIN_LOCK_GRPC);
        call_rec_t *rec = (call_rec_t *)sw__handle_map_find(&sw__grpc_calls, call);
        if (rec != NULL) {
            rec->refs++;
        }
        sw__plugin_unlock(SW__PLUGIN_LOCK_GRPC);
    }
    real(call);
}

void grpc_call_unref(grpc_call *call)
{
    real_fns_t f;
    if (!reals(&f)) {
        return;
    }
    if (sw__grpc_own_call || atomic_load_explicit(&sw__grpc_calls_n, memory_order_relaxed) == 0) {
        f.unref(call);
        return;
    }
    sw__plugin_lock(SW__PLUGIN_LOCK_GRPC);
    call_rec_t *rec = (call_rec_t *)sw__handle_map_find(&sw__grpc_calls, call);
    if (rec != NULL && --rec->refs > 0) {
        rec = NULL; /* not the last reference */
    } else if (rec != NULL) {
        rec = sw__grpc_map_take(&sw__grpc_calls, &sw__grpc_calls_n, call);
    }
    pending_t *p = NULL;
    if (rec != NULL && rec->status_tag != NULL) {
        p = sw__grpc_map_take(&sw__grpc_pendings, &sw__grpc_pendings_n, rec->status_tag);
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_GRPC);
    sw__grpc_pending_free(p);
    if (rec != NULL && rec->server) {
        sw__grpc_server_end(rec, NULL);
    } else if (rec != NULL) {
        client_end(rec, NULL, NULL);
    }
    f.unref(call);
}
