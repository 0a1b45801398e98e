/*
 * ngx_http_skywalking.h - what the two files of ngx_http_skywalking_module share: the
 * configuration, the per-request state and the upstream hooks.
 *
 * The module is a thin adapter over the agent's request contexts (skywalking.h, "Request
 * contexts"): one context per main request, whose entry span begins in the rewrite phase and
 * ends in the log phase, and one exit span per upstream attempt, begun when the balancer picks
 * a peer and ended when nginx frees that peer. nginx runs one thread per worker: every call
 * below runs on the worker's event loop, so no lock is taken and the agent's thread-local span
 * stack is never used.
 */
#ifndef NGX_HTTP_SKYWALKING_H
#define NGX_HTTP_SKYWALKING_H

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <skywalking.h>

/* Component ids of SkyWalking's component-libraries.yml. Entry spans are Nginx (the OAP treats
   it as a gateway; skywalking-nginx-lua uses the same). Exit spans are not: the OAP's
   noUpstreamRealAddressAgents (6000, 9000) keeps exit spans of those components out of the
   client-side instance relations, for agents that cannot see the upstream's real address,
   while this module names the very server of each attempt. */
#define NGX_SW_COMPONENT_NGINX 6000
/* exits of proxy_pass, fastcgi_pass, uwsgi_pass, scgi_pass, and $sw8's */
#define NGX_SW_COMPONENT_HTTP 49
/* exits of grpc_pass */
#define NGX_SW_COMPONENT_GRPC 23

/* The propagation headers the module reads on entry and writes to upstreams. */
#define NGX_SW_HEADERS 5

typedef struct {
    sw_config_t *agent;    /* built at configuration time in the master, used by workers */
    ngx_flag_t used;       /* some scope says `skywalking on`: workers start the agent */
    ngx_str_t service;     /* skywalking_service_name */
    ngx_str_t config_file; /* skywalking_config */
    ngx_array_t *wrapped;  /* ngx_sw_wrapped_t: upstreams whose peer.init is ours */
} ngx_http_sw_main_conf_t;

typedef struct {
    ngx_flag_t enable;                /* skywalking */
    ngx_flag_t propagate;             /* skywalking_propagate */
    ngx_http_complex_value_t *opname; /* skywalking_operation_name; NULL: the location */
    ngx_array_t *ignore;              /* ngx_str_t URI prefixes; NULL: none */
} ngx_http_sw_loc_conf_t;

/* An upstream's own peer.init, which ours calls first. */
typedef struct {
    ngx_http_upstream_srv_conf_t *uscf;
    ngx_http_upstream_init_peer_pt init;
} ngx_sw_wrapped_t;

/* One upstream attempt sequence (r->upstream of the main request or of a subrequest). Ours
   are u->peer.get, free, notify, set_session, save_session and data; they call the balancer's
   own with its data, kept here (as ngx_http_upstream_keepalive_module does). */
typedef struct ngx_http_sw_ctx_s ngx_http_sw_ctx_t;

typedef struct {
    ngx_http_sw_ctx_t *ctx;
    ngx_http_request_t *request; /* the (sub)request that owns the upstream */
    void *data;
    ngx_event_get_peer_pt get;
    ngx_event_free_peer_pt free;
    ngx_event_notify_peer_pt notify;
#if (NGX_HTTP_SSL)
    ngx_event_set_peer_session_pt set_session;
    ngx_event_save_peer_session_pt save_session;
#endif
    sw_span_ref_t exit;               /* the current attempt's exit span */
    ngx_http_upstream_state_t *state; /* the current attempt's ($upstream_status etc.) */
    unsigned exit_open : 1;
    unsigned failed : 1;   /* the attempt failed; nginx writes its status (502, 504) after it
                              frees the peer: the span ends at the next attempt or the end */
    unsigned own_list : 1; /* request->headers_in.headers no longer shares memory with the
                              main request's (a subrequest starts with a copy) */
    /* The header elements added to request->headers_in.headers (sw8, sw8-correlation, sw8-x,
       traceparent, tracestate), NULL until first sent. */
    ngx_table_elt_t *out[NGX_SW_HEADERS];
} ngx_http_sw_upstream_t;

/* The state of one main request, kept in r->pool (found again after an internal redirect,
   which clears module contexts, through the pool cleanup that holds it). */
struct ngx_http_sw_ctx_s {
    ngx_http_request_t *request; /* the main request */
    sw_span_ref_t entry;
    char *operation;        /* the entry's operation, also the exit spans' */
    sw_span_ref_t var_exit; /* the exit span $sw8 made outside an upstream attempt */
    ngx_array_t upstreams;  /* ngx_http_sw_upstream_t *; elts NULL until the first */
    ngx_str_t trace_id;     /* filled by the first $sw_trace_id / $sw_segment_id */
    ngx_str_t segment_id;
    unsigned entry_open : 1; /* `entry` has begun and not ended */
    unsigned var_open : 1;   /* `var_exit` has begun and not ended */
    unsigned recorded : 1;   /* the context is recorded (sampled) */
    unsigned propagate : 1;  /* skywalking_propagate of the entry's location */
};

/* The propagation headers, lower case, in the order of ngx_http_sw_upstream_t.out. */
extern const ngx_str_t ngx_http_sw_header_names[NGX_SW_HEADERS];

extern ngx_module_t ngx_http_skywalking_module;

/* The request's context: created when `create` (and the location has `skywalking on`), else
   NULL. r may be a subrequest: the main request's context is returned. */
ngx_http_sw_ctx_t *ngx_http_sw_ctx_get(ngx_http_request_t *r);

/* Wraps the peer.init of every upstream{} (and implicit upstream) known at configuration time,
   so that each attempt gets an exit span. Returns NGX_OK or NGX_ERROR. */
ngx_int_t ngx_http_sw_upstream_wrap(ngx_conf_t *cf, ngx_http_sw_main_conf_t *smcf);

/* Ends the open exit spans of the request (at the end of the request). */
void ngx_http_sw_upstream_finish(ngx_http_sw_ctx_t *ctx);

/* The open exit span of r's current upstream attempt, or NULL. */
sw_span_ref_t *ngx_http_sw_upstream_current(ngx_http_sw_ctx_t *ctx, ngx_http_request_t *r);

/* True while r's upstream request is built before its first attempt, for an upstream whose
   attempts the module wraps: the attempt rebuilds it with its own exit span. */
ngx_int_t ngx_http_sw_upstream_pending(ngx_http_request_t *r);

/* True when `name` (any case) is one of ngx_http_sw_header_names. */
ngx_int_t ngx_http_sw_is_propagation(const ngx_str_t *name);

/* Replaces list (r->headers_in.headers) by a copy in r's pool without the propagation
   headers. Returns NGX_OK or NGX_ERROR (no memory; the list is then unchanged). */
ngx_int_t ngx_http_sw_headers_strip(ngx_http_request_t *r, ngx_list_t *list);

/* Registers the $sw_* variables (preconfiguration). Returns NGX_OK or NGX_ERROR. */
ngx_int_t ngx_http_sw_add_variables(ngx_conf_t *cf);

/* Copies s into a NUL-terminated string of r's pool; NULL on no memory. */
char *ngx_http_sw_cstr(ngx_pool_t *pool, const ngx_str_t *s);

#endif
