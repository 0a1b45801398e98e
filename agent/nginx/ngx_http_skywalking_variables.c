/*
 * ngx_http_skywalking_variables.c - $sw_trace_id, $sw_segment_id, $sw_span_id and $sw8, for
 * log_format, add_header, proxy_set_header and the like. They read the main request's context
 * (ngx_http_sw_ctx_get); none is cached by nginx, as the upstream attempt of $sw8 changes.
 */
#include "ngx_http_skywalking.h"

#include <string.h>

enum { VAR_TRACE_ID, VAR_SEGMENT_ID, VAR_SPAN_ID, VAR_SW8 };

/* Fills ctx->trace_id and segment_id from the entry span (once). */
static ngx_int_t ngx_http_sw_ids(ngx_http_request_t *r, ngx_http_sw_ctx_t *ctx)
{
    if (ctx->trace_id.len != 0) {
        return NGX_OK;
    }
    sw_snapshot_t snap;
    if (sw_span_ref_capture(ctx->entry, &snap) != SW_OK) {
        return NGX_DECLINED;
    }
    ngx_str_t t = {strlen(snap.trace_id), (u_char *)snap.trace_id};
    ngx_str_t s = {strlen(snap.segment_id), (u_char *)snap.segment_id};
    ctx->trace_id.data = (u_char *)ngx_http_sw_cstr(r->pool, &t);
    ctx->segment_id.data = (u_char *)ngx_http_sw_cstr(r->pool, &s);
    if (ctx->trace_id.data == NULL || ctx->segment_id.data == NULL) {
        return NGX_ERROR;
    }
    ctx->trace_id.len = t.len;
    ctx->segment_id.len = s.len;
    return NGX_OK;
}

/* $sw8: the current upstream attempt's exit span, else one exit span of the request begun for
   the variable (ended with the request). */
static ngx_int_t ngx_http_sw_var_sw8(ngx_http_request_t *r, ngx_http_sw_ctx_t *ctx,
                                     ngx_http_variable_value_t *v)
{
    sw_span_ref_t *span = ngx_http_sw_upstream_current(ctx, r);
    if (span == NULL && ngx_http_sw_upstream_pending(r)) {
        v->not_found = 1; /* proxy_set_header sw8 $sw8: the attempt sets it again */
        return NGX_OK;
    }
    if (span == NULL && ctx->entry_open) {
        if (!ctx->var_open) {
            (void)sw_span_ref_begin_exit(ctx->entry, ctx->operation, "", &ctx->var_exit);
            (void)sw_span_ref_set_layer(ctx->var_exit, SW_LAYER_HTTP);
            (void)sw_span_ref_set_component(ctx->var_exit, NGX_SW_COMPONENT_HTTP);
            ctx->var_open = 1;
        }
        span = &ctx->var_exit;
    }
    char buf[SW_SW8_MAX];
    if (span == NULL || sw_span_ref_inject(*span, buf, sizeof buf, NULL, 0, NULL, 0) != SW_OK) {
        v->not_found = 1;
        return NGX_OK;
    }
    size_t n = strlen(buf);
    v->data = ngx_pnalloc(r->pool, n);
    if (v->data == NULL) {
        return NGX_ERROR;
    }
    ngx_memcpy(v->data, buf, n);
    v->len = n;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    return NGX_OK;
}

static ngx_int_t ngx_http_sw_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
                                      uintptr_t data)
{
    ngx_http_sw_ctx_t *ctx = ngx_http_sw_ctx_get(r);
    v->not_found = 1;
    if (ctx == NULL || !ctx->recorded) {
        return NGX_OK;
    }
    if (data == VAR_SW8) {
        return ngx_http_sw_var_sw8(r, ctx, v);
    }
    ngx_str_t s;
    if (data == VAR_SPAN_ID) {
        ngx_str_set(&s, "0"); /* the entry span is the first of its segment */
    } else {
        ngx_int_t rc = ngx_http_sw_ids(r, ctx);
        if (rc != NGX_OK) {
            return rc == NGX_ERROR ? NGX_ERROR : NGX_OK;
        }
        s = data == VAR_TRACE_ID ? ctx->trace_id : ctx->segment_id;
    }
    v->data = s.data;
    v->len = s.len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    return NGX_OK;
}

static ngx_http_variable_t ngx_http_sw_vars[] = {
    {ngx_string("sw_trace_id"), NULL, ngx_http_sw_variable, VAR_TRACE_ID, NGX_HTTP_VAR_NOCACHEABLE,
     0},
    {ngx_string("sw_segment_id"), NULL, ngx_http_sw_variable, VAR_SEGMENT_ID,
     NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("sw_span_id"), NULL, ngx_http_sw_variable, VAR_SPAN_ID, NGX_HTTP_VAR_NOCACHEABLE,
     0},
    {ngx_string("sw8"), NULL, ngx_http_sw_variable, VAR_SW8, NGX_HTTP_VAR_NOCACHEABLE, 0},
    ngx_http_null_variable};

ngx_int_t ngx_http_sw_add_variables(ngx_conf_t *cf)
{
    for (ngx_http_variable_t *v = ngx_http_sw_vars; v->name.len != 0; v++) {
        ngx_http_variable_t *var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }
        var->get_handler = v->get_handler;
        var->data = v->data;
    }
    return NGX_OK;
}
