/*
 * preload_grpc_server.c - the server half of the gRPC plugin (preload_grpc.c has the overview):
 * requests awaited (grpc_server_request_call / _registered_call, and the allocations of
 * libgrpc++'s server, preload_grpc_sync.cpp), the entry span their completion begins, the
 * attach of its context to the thread that received it, and its end with the status sent.
 */
#include <grpc/grpc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/grpc/grpc_reporter_call.h"
#include "preload.h"
#include "preload_grpc_calls.h"
#include "preload_lock.h"

/* The server call whose context is attached to this thread. */
static _Thread_local struct {
    bool on;
    grpc_call *call;
    grpc_completion_queue *cq; /* the queue that delivered it */
    sw_attach_t saved;
} tls_attach;

void sw__grpc_attach_end(void)
{
    if (tls_attach.on) {
        tls_attach.on = false;
        (void)sw_context_detach(&tls_attach.saved);
    }
}

void sw__grpc_server_begin(pending_t *p, grpc_completion_queue *cq)
{
    grpc_call *call = *p->callp;
    if (call == NULL) {
        return;
    }
    char method[METHOD_MAX];
    if (p->method != NULL) {
        snprintf(method, sizeof method, "%s", p->method);
    } else {
        grpc_slice s = p->call_details->method;
        snprintf(method, sizeof method, "%.*s", (int)GRPC_SLICE_LENGTH(s),
                 (const char *)GRPC_SLICE_START_PTR(s));
    }
    sw__grpc_headers_t *h = malloc(sizeof *h); /* ~4 KiB: off the host's stack */
    if (h == NULL) {
        return;
    }
    sw__grpc_headers_from_metadata(p->md, h);
    call_rec_t *rec = calloc(1, sizeof *rec);
    if (rec == NULL || sw_context_begin_entry(method, &h->in, &rec->span) != SW_OK) {
        free(h);
        free(rec);
        return;
    }
    free(h);
    rec->server = true;
    rec->refs = 1;
    (void)sw_span_ref_set_layer(rec->span, SW_LAYER_RPC_FRAMEWORK);
    (void)sw_span_ref_set_component(rec->span, SW__COMPONENT_GRPC);
    rec->node.handle = call;
    sw__grpc_map_put(&sw__grpc_calls, &sw__grpc_calls_n, &rec->node);
    sw__grpc_attach_end();
    int rc = sw_context_attach(rec->span, &tls_attach.saved);
    if (rc == SW_OK || rc == SW_ENOTRACED) { /* both are paired with a detach */
        tls_attach.on = true;
        tls_attach.call = call;
        tls_attach.cq = cq;
    }
}

void sw__grpc_server_end(call_rec_t *rec, const grpc_status_code *status)
{
    if (tls_attach.on && tls_attach.call == rec->node.handle) {
        sw__grpc_attach_end();
    }
    if (status != NULL) {
        (void)sw_span_ref_tag(rec->span, "grpc.status_code", sw__grpc_status_name(*status));
        if (*status != GRPC_STATUS_OK) {
            (void)sw_span_ref_set_error(rec->span, true);
        }
    }
    (void)sw_span_ref_end(rec->span);
    free(rec);
}

static grpc_call_error request_track(grpc_call_error rc, pending_t *p)
{
    if (rc != GRPC_CALL_OK) {
        pending_t *q =
            sw__grpc_map_take_locked(&sw__grpc_pendings, &sw__grpc_pendings_n, p->node.handle);
        if (q != NULL) { /* p itself, unless another request used the same (unwrapped) tag */
            sw__grpc_functor_discard(q->wrap);
        }
        sw__grpc_pending_free(q);
    }
    return rc;
}

static pending_t *request_pending(grpc_call **callp, grpc_metadata_array *md,
                                  grpc_completion_queue *cq, void *tag)
{
    if (tag == NULL || callp == NULL || md == NULL || !sw__grpc_tracing()) {
        return NULL;
    }
    pending_t *p = calloc(1, sizeof *p);
    if (p == NULL) {
        return NULL;
    }
    p->node.handle = tag; /* the tag gRPC gets: this, or on a callback queue our functor */
    p->kind = PEND_REQUEST;
    p->cq = cq;
    p->callp = callp;
    p->md = md;
    if (sw__grpc_cq_is_callback(cq)) {
        p->wrap = sw__grpc_functor_wrap(tag, cq);
        if (p->wrap == NULL) {
            free(p);
            return NULL;
        }
        p->node.handle = p->wrap;
    }
    return p;
}

/* Frees a pending request that was never given to gRPC. */
static void request_drop(pending_t *p)
{
    if (p != NULL) {
        sw__grpc_functor_discard(p->wrap);
        sw__grpc_pending_free(p);
    }
}

bool sw__grpc_server_tracing(void)
{
    return sw__grpc_tracing();
}

void *sw__grpc_request_note(void *tag, grpc_call **callp, grpc_metadata_array *md,
                            grpc_call_details *details, void *method_tag, grpc_completion_queue *cq)
{
    pending_t *p = request_pending(callp, md, cq, tag);
    if (p == NULL) {
        return tag;
    }
    if (method_tag != NULL) {
        p->method = sw__grpc_registered_method_copy(method_tag);
    }
    p->call_details = details;
    if (p->method == NULL && details == NULL) {
        request_drop(p);
        return tag;
    }
    void *use = (void *)p->node.handle;
    sw__grpc_map_put(&sw__grpc_pendings, &sw__grpc_pendings_n, &p->node);
    return use; /* p may be gone already: the call can complete at once */
}

grpc_call_error grpc_server_request_call(grpc_server *server, grpc_call **call,
                                         grpc_call_details *details,
                                         grpc_metadata_array *request_metadata,
                                         grpc_completion_queue *cq_bound_to_call,
                                         grpc_completion_queue *cq_for_notification, void *tag)
{
    grpc_call_error (*real)(grpc_server *, grpc_call **, grpc_call_details *, grpc_metadata_array *,
                            grpc_completion_queue *, grpc_completion_queue *, void *);
    SW__PRELOAD_REAL(real, "grpc_server_request_call");
    if (real == NULL) {
        return GRPC_CALL_ERROR;
    }
    pending_t *p =
        details != NULL ? request_pending(call, request_metadata, cq_for_notification, tag) : NULL;
    if (p == NULL) {
        return real(server, call, details, request_metadata, cq_bound_to_call, cq_for_notification,
                    tag);
    }
    p->call_details = details;
    void *use = (void *)p->node.handle;
    sw__grpc_map_put(&sw__grpc_pendings, &sw__grpc_pendings_n, &p->node);
    return request_track(
        real(server, call, details, request_metadata, cq_bound_to_call, cq_for_notification, use),
        p);
}

grpc_call_error grpc_server_request_registered_call(
    grpc_server *server, void *registered_method, grpc_call **call, gpr_timespec *deadline,
    grpc_metadata_array *request_metadata, grpc_byte_buffer **optional_payload,
    grpc_completion_queue *cq_bound_to_call, grpc_completion_queue *cq_for_notification, void *tag)
{
    grpc_call_error (*real)(grpc_server *, void *, grpc_call **, gpr_timespec *,
                            grpc_metadata_array *, grpc_byte_buffer **, grpc_completion_queue *,
                            grpc_completion_queue *, void *);
    SW__PRELOAD_REAL(real, "grpc_server_request_registered_call");
    if (real == NULL) {
        return GRPC_CALL_ERROR;
    }
    pending_t *p = request_pending(call, request_metadata, cq_for_notification, tag);
    if (p != NULL && (p->method = sw__grpc_registered_method_copy(registered_method)) == NULL) {
        request_drop(p);
        p = NULL;
    }
    if (p == NULL) {
        return real(server, registered_method, call, deadline, request_metadata, optional_payload,
                    cq_bound_to_call, cq_for_notification, tag);
    }
    void *use = (void *)p->node.handle;
    sw__grpc_map_put(&sw__grpc_pendings, &sw__grpc_pendings_n, &p->node);
    return request_track(real(server, registered_method, call, deadline, request_metadata,
                              optional_payload, cq_bound_to_call, cq_for_notification, use),
                         p);
}

void sw__grpc_handler_done(grpc_completion_queue *cq)
{
    if (tls_attach.on && tls_attach.cq == cq) {
        sw__grpc_attach_end();
    }
}

bool sw__grpc_attached_from(const grpc_completion_queue *cq)
{
    return tls_attach.on && tls_attach.cq == cq;
}
