/*
 * ngx_http_skywalking_upstream.c - one exit span per upstream attempt (proxy_pass, grpc_pass,
 * fastcgi_pass, uwsgi_pass, ... to a server of an upstream{} block or a literal address), and
 * the trace headers that attempt carries.
 *
 * At configuration time every upstream's peer.init is wrapped. For a traced request ours runs
 * the balancer's init, then takes over u->peer's callbacks (keeping the balancer's, as
 * ngx_http_upstream_keepalive_module does):
 *   get   the balancer picks a peer; the attempt's exit span begins (peer = the server's
 *         host:port); its sw8 (and traceparent, as SW_AGENT_PROPAGATION says) are set in the
 *         request's header list, in place of any the client sent, and the upstream request is
 *         built again (u->create_request), so that every attempt, a retry too, names its own
 *         exit span;
 *   free  the attempt is over: status, timings and error go on the span, which ends (a failed
 *         attempt's at the next get or the end of the request: nginx writes its status, 502
 *         or 504, just after it frees the peer).
 * Every call runs on the worker's event loop.
 */
#include "ngx_http_skywalking.h"

#include <string.h>

static ngx_int_t ngx_http_sw_peer_init(ngx_http_request_t *r, ngx_http_upstream_srv_conf_t *us);
static void exit_end(ngx_http_sw_upstream_t *up);

ngx_int_t ngx_http_sw_upstream_wrap(ngx_conf_t *cf, ngx_http_sw_main_conf_t *smcf)
{
    ngx_http_upstream_main_conf_t *umcf =
        ngx_http_conf_get_module_main_conf(cf, ngx_http_upstream_module);
    if (umcf == NULL) {
        return NGX_OK;
    }
    ngx_http_upstream_srv_conf_t **uscfp = umcf->upstreams.elts;
    smcf->wrapped = ngx_array_create(cf->pool, umcf->upstreams.nelts + 1, sizeof(ngx_sw_wrapped_t));
    if (smcf->wrapped == NULL) {
        return NGX_ERROR;
    }
    for (ngx_uint_t i = 0; i < umcf->upstreams.nelts; i++) {
        if (uscfp[i]->peer.init == NULL || uscfp[i]->peer.init == ngx_http_sw_peer_init) {
            continue;
        }
        ngx_sw_wrapped_t *w = ngx_array_push(smcf->wrapped);
        if (w == NULL) {
            return NGX_ERROR;
        }
        w->uscf = uscfp[i];
        w->init = uscfp[i]->peer.init;
        uscfp[i]->peer.init = ngx_http_sw_peer_init;
    }
    return NGX_OK;
}

/* The value of one header element in r's pool. */
static ngx_int_t header_set(ngx_http_sw_upstream_t *up, ngx_uint_t k, const char *value)
{
    ngx_http_request_t *r = up->request;
    if (up->out[k] == NULL) {
        if (r != r->main && !up->own_list) {
            /* a subrequest's list shares its parts with the main request's: copy it first */
            if (ngx_http_sw_headers_strip(r, &r->headers_in.headers) != NGX_OK) {
                return NGX_ERROR;
            }
            up->own_list = 1;
        }
        ngx_table_elt_t *h = ngx_list_push(&r->headers_in.headers);
        if (h == NULL) {
            return NGX_ERROR;
        }
        ngx_memzero(h, sizeof(*h));
        h->key = ngx_http_sw_header_names[k];
        h->lowcase_key = h->key.data; /* already lower case */
        h->hash = ngx_hash_key(h->key.data, h->key.len);
        up->out[k] = h;
    }
    size_t n = strlen(value);
    u_char *p = ngx_pnalloc(r->pool, n);
    if (p == NULL) {
        return NGX_ERROR;
    }
    ngx_memcpy(p, value, n);
    up->out[k]->value.data = p;
    up->out[k]->value.len = n;
    return NGX_OK;
}

/* Sets the attempt's trace headers and builds the upstream request again. Returns NGX_OK,
   NGX_DECLINED (nothing to send: the request is left as built) or NGX_ERROR. */
static ngx_int_t ngx_http_sw_inject(ngx_http_sw_upstream_t *up, ngx_http_upstream_t *u)
{
    ngx_http_sw_main_conf_t *smcf =
        ngx_http_get_module_main_conf(up->request, ngx_http_skywalking_module);
    uint32_t prop = smcf->agent != NULL ? smcf->agent->propagation : SW_PROPAGATION_SW8;
    ngx_uint_t with_sw8 = prop != SW_PROPAGATION_TRACECONTEXT;
    ngx_uint_t with_w3c = prop != SW_PROPAGATION_SW8;
    char sw8[SW_SW8_MAX], corr[SW_CORRELATION_HEADER_MAX], x[SW_SW8_X_MAX];
    char tp[SW_TRACEPARENT_MAX], ts[SW_TRACESTATE_MAX];
    const char *values[NGX_SW_HEADERS] = {NULL, NULL, NULL, NULL, NULL};
    if (with_sw8 &&
        sw_span_ref_inject(up->exit, sw8, sizeof sw8, corr, sizeof corr, x, sizeof x) == SW_OK) {
        values[0] = sw8;
        values[1] = corr[0] != '\0' ? corr : NULL;
        values[2] = x[0] != '\0' ? x : NULL;
    }
    if (with_w3c && sw_span_ref_inject_w3c(up->exit, tp, sizeof tp, ts, sizeof ts) == SW_OK) {
        values[3] = tp;
        values[4] = ts[0] != '\0' ? ts : NULL;
    }
    ngx_uint_t any = 0;
    for (ngx_uint_t k = 0; k < NGX_SW_HEADERS; k++) {
        if (values[k] == NULL) {
            continue;
        }
        if (header_set(up, k, values[k]) != NGX_OK) {
            return NGX_ERROR;
        }
        any = 1;
    }
    if (!any) {
        return NGX_DECLINED;
    }
    ngx_http_request_t *r = up->request;
    u->request_bufs = r->request_body != NULL ? r->request_body->bufs : NULL;
    return u->create_request(r);
}

/* The upstream that holds pc (u->peer). */
static ngx_http_upstream_t *upstream_of(ngx_peer_connection_t *pc)
{
    return (ngx_http_upstream_t *)((u_char *)pc - offsetof(ngx_http_upstream_t, peer));
}

static ngx_int_t ngx_http_sw_peer_get(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_sw_upstream_t *up = data;
    ngx_int_t rc = up->get(pc, up->data);
    if ((rc != NGX_OK && rc != NGX_DONE) || !up->ctx->entry_open) {
        return rc;
    }
    if (up->exit_open) { /* the previous attempt failed: its status is known now */
        exit_end(up);
    }
    ngx_http_request_t *r = up->request;
    char *peer = pc->name != NULL ? ngx_http_sw_cstr(r->pool, pc->name) : NULL;
    (void)sw_span_ref_begin_exit(up->ctx->entry, up->ctx->operation, peer != NULL ? peer : "",
                                 &up->exit);
    up->exit_open = 1;
    up->state = upstream_of(pc)->state;
    (void)sw_span_ref_set_layer(up->exit, SW_LAYER_HTTP);
    ngx_http_upstream_t *u = upstream_of(pc);
    ngx_uint_t grpc = u->conf != NULL && u->conf->module.len == 4 &&
                      ngx_strncmp(u->conf->module.data, "grpc", 4) == 0;
    (void)sw_span_ref_set_component(up->exit, grpc ? NGX_SW_COMPONENT_GRPC : NGX_SW_COMPONENT_HTTP);
    if (up->ctx->propagate && up->ctx->recorded) {
        if (ngx_http_sw_inject(up, u) == NGX_ERROR) {
            ngx_log_error(NGX_LOG_ERR, pc->log, 0,
                          "skywalking: cannot add the trace headers to the upstream request");
            return NGX_ERROR;
        }
    }
    return rc;
}

/* "123" into buf. */
static const char *msec_text(char *buf, size_t cap, ngx_msec_t ms)
{
    *ngx_snprintf((u_char *)buf, cap - 1, "%M", ms) = '\0';
    return buf;
}

/* Ends the attempt's exit span with its status, timings and error. */
static void exit_end(ngx_http_sw_upstream_t *up)
{
    up->exit_open = 0;
    ngx_http_upstream_state_t *st = up->state;
    ngx_uint_t status = st != NULL ? st->status : 0;
    if (up->ctx->recorded && st != NULL) {
        char buf[NGX_INT64_LEN + 1];
        if (status != 0) {
            (void)sw_span_ref_tag(up->exit, "http.status_code",
                                  msec_text(buf, sizeof buf, (ngx_msec_t)status));
        }
        if (st->connect_time != (ngx_msec_t)-1) {
            (void)sw_span_ref_tag(up->exit, "upstream.connect_time_ms",
                                  msec_text(buf, sizeof buf, st->connect_time));
        }
        if (st->header_time != (ngx_msec_t)-1) {
            (void)sw_span_ref_tag(up->exit, "upstream.header_time_ms",
                                  msec_text(buf, sizeof buf, st->header_time));
        }
    }
    if (up->failed || status >= 500 || status == 0) {
        (void)sw_span_ref_set_error(up->exit, true);
    }
    up->failed = 0;
    (void)sw_span_ref_end(up->exit);
}

static void ngx_http_sw_peer_free(ngx_peer_connection_t *pc, void *data, ngx_uint_t state)
{
    ngx_http_sw_upstream_t *up = data;
    up->free(pc, up->data, state);
    if (!up->exit_open) {
        return;
    }
    if ((state & NGX_PEER_FAILED) && (up->state == NULL || up->state->status == 0)) {
        /* ngx_http_upstream_next: the status (502, 504) is written right after this call,
           before the next attempt's get or the end of the request, which end the span */
        up->failed = 1;
        return;
    }
    up->failed = (state & NGX_PEER_FAILED) ? 1 : 0;
    exit_end(up);
}

static void ngx_http_sw_peer_notify(ngx_peer_connection_t *pc, void *data, ngx_uint_t type)
{
    ngx_http_sw_upstream_t *up = data;
    up->notify(pc, up->data, type);
}

#if (NGX_HTTP_SSL)
static ngx_int_t ngx_http_sw_peer_set_session(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_sw_upstream_t *up = data;
    return up->set_session(pc, up->data);
}

static void ngx_http_sw_peer_save_session(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_sw_upstream_t *up = data;
    up->save_session(pc, up->data);
}
#endif

static ngx_int_t ngx_http_sw_peer_init(ngx_http_request_t *r, ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_sw_main_conf_t *smcf = ngx_http_get_module_main_conf(r, ngx_http_skywalking_module);
    ngx_sw_wrapped_t *w = smcf->wrapped->elts;
    ngx_uint_t i = 0;
    while (i < smcf->wrapped->nelts && w[i].uscf != us) {
        i++;
    }
    if (i == smcf->wrapped->nelts) {
        return NGX_ERROR; /* cannot happen: only wrapped upstreams call this */
    }
    ngx_int_t rc = w[i].init(r, us);
    ngx_http_sw_ctx_t *ctx = rc == NGX_OK ? ngx_http_sw_ctx_get(r) : NULL;
    if (ctx == NULL || !ctx->entry_open) {
        return rc;
    }
    ngx_http_sw_upstream_t **prev = ctx->upstreams.elts;
    for (ngx_uint_t k = 0; k < ctx->upstreams.nelts; k++) {
        if (prev[k]->request == r && prev[k]->exit_open) {
            exit_end(prev[k]); /* a failed last attempt of r's previous upstream (error_page) */
        }
    }
    if (ctx->upstreams.elts == NULL &&
        ngx_array_init(&ctx->upstreams, r->pool, 2, sizeof(ngx_http_sw_upstream_t *)) != NGX_OK) {
        return NGX_OK; /* no memory: this upstream is not traced */
    }
    ngx_http_sw_upstream_t **slot = ngx_array_push(&ctx->upstreams);
    ngx_http_sw_upstream_t *up = ngx_pcalloc(r->pool, sizeof(*up));
    if (slot == NULL || up == NULL) {
        if (slot != NULL) {
            ctx->upstreams.nelts--;
        }
        return NGX_OK;
    }
    *slot = up;
    ngx_http_upstream_t *u = r->upstream;
    up->ctx = ctx;
    up->request = r;
    up->data = u->peer.data;
    up->get = u->peer.get;
    up->free = u->peer.free;
    up->notify = u->peer.notify;
    u->peer.data = up;
    u->peer.get = ngx_http_sw_peer_get;
    u->peer.free = ngx_http_sw_peer_free;
    if (u->peer.notify != NULL) {
        u->peer.notify = ngx_http_sw_peer_notify;
    }
#if (NGX_HTTP_SSL)
    up->set_session = u->peer.set_session;
    up->save_session = u->peer.save_session;
    if (u->peer.set_session != NULL) {
        u->peer.set_session = ngx_http_sw_peer_set_session;
    }
    if (u->peer.save_session != NULL) {
        u->peer.save_session = ngx_http_sw_peer_save_session;
    }
#endif
    return NGX_OK;
}

ngx_int_t ngx_http_sw_upstream_pending(ngx_http_request_t *r)
{
    ngx_http_upstream_t *u = r->upstream;
    return u != NULL && u->peer.get == NULL && u->resolved == NULL && u->conf != NULL &&
           u->conf->upstream != NULL && u->conf->upstream->peer.init == ngx_http_sw_peer_init;
}

sw_span_ref_t *ngx_http_sw_upstream_current(ngx_http_sw_ctx_t *ctx, ngx_http_request_t *r)
{
    ngx_http_sw_upstream_t **up = ctx->upstreams.elts;
    for (ngx_uint_t i = ctx->upstreams.nelts; i > 0; i--) {
        if (up[i - 1]->request == r && up[i - 1]->exit_open) {
            return &up[i - 1]->exit;
        }
    }
    return NULL;
}

void ngx_http_sw_upstream_finish(ngx_http_sw_ctx_t *ctx)
{
    ngx_http_sw_upstream_t **up = ctx->upstreams.elts;
    for (ngx_uint_t i = 0; i < ctx->upstreams.nelts; i++) {
        if (up[i]->exit_open) {
            exit_end(up[i]);
        }
    }
}
