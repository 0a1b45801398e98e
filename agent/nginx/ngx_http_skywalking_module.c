/*
 * ngx_http_skywalking_module.c - SkyWalking traces through nginx: the directives, the agent of
 * each worker, the entry span of each main request and the $sw_* variables. The upstream
 * attempts' exit spans are in ngx_http_skywalking_upstream.c.
 *
 * Processes: the master parses the configuration and builds the agent's settings (from
 * skywalking_config, the environment the master was started with, and
 * skywalking_service_name), so that `nginx -t` reports a bad one; it never starts an agent.
 * Each worker starts its own agent in init_process and stops it (flushing what it holds) in
 * exit_process, logging its counters to the error log. The variables are in
 * ngx_http_skywalking_variables.c.
 */
#include "ngx_http_skywalking.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static ngx_int_t ngx_http_sw_init(ngx_conf_t *cf);
static void *ngx_http_sw_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_sw_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_sw_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_sw_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child);
static char *ngx_http_sw_enable(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_sw_service(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_sw_config(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_sw_ignore(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static ngx_int_t ngx_http_sw_init_process(ngx_cycle_t *cycle);
static void ngx_http_sw_exit_process(ngx_cycle_t *cycle);

static ngx_command_t ngx_http_sw_commands[] = {
    {ngx_string("skywalking"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_FLAG, ngx_http_sw_enable,
     NGX_HTTP_LOC_CONF_OFFSET, offsetof(ngx_http_sw_loc_conf_t, enable), NULL},

    {ngx_string("skywalking_service_name"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
     ngx_http_sw_service, NGX_HTTP_MAIN_CONF_OFFSET, 0, NULL},

    {ngx_string("skywalking_config"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_http_sw_config,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, NULL},

    {ngx_string("skywalking_operation_name"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1,
     ngx_http_set_complex_value_slot, NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_sw_loc_conf_t, opname), NULL},

    {ngx_string("skywalking_propagate"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_FLAG,
     ngx_conf_set_flag_slot, NGX_HTTP_LOC_CONF_OFFSET, offsetof(ngx_http_sw_loc_conf_t, propagate),
     NULL},

    {ngx_string("skywalking_ignore"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_1MORE,
     ngx_http_sw_ignore, NGX_HTTP_LOC_CONF_OFFSET, 0, NULL},

    ngx_null_command};

static ngx_http_module_t ngx_http_sw_module_ctx = {
    ngx_http_sw_add_variables,    /* preconfiguration */
    ngx_http_sw_init,             /* postconfiguration */
    ngx_http_sw_create_main_conf, /* create main configuration */
    ngx_http_sw_init_main_conf,   /* init main configuration */
    NULL,                         /* create server configuration */
    NULL,                         /* merge server configuration */
    ngx_http_sw_create_loc_conf,  /* create location configuration */
    ngx_http_sw_merge_loc_conf    /* merge location configuration */
};

ngx_module_t ngx_http_skywalking_module = {NGX_MODULE_V1,
                                           &ngx_http_sw_module_ctx,
                                           ngx_http_sw_commands,
                                           NGX_HTTP_MODULE,
                                           NULL,                     /* init master */
                                           NULL,                     /* init module */
                                           ngx_http_sw_init_process, /* init process */
                                           NULL,                     /* init thread */
                                           NULL,                     /* exit thread */
                                           ngx_http_sw_exit_process, /* exit process */
                                           NULL,                     /* exit master */
                                           NGX_MODULE_V1_PADDING};

const ngx_str_t ngx_http_sw_header_names[NGX_SW_HEADERS] = {
    ngx_string("sw8"), ngx_string("sw8-correlation"), ngx_string("sw8-x"),
    ngx_string("traceparent"), ngx_string("tracestate")};

char *ngx_http_sw_cstr(ngx_pool_t *pool, const ngx_str_t *s)
{
    char *p = ngx_pnalloc(pool, s->len + 1);
    if (p != NULL) {
        ngx_memcpy(p, s->data, s->len);
        p[s->len] = '\0';
    }
    return p;
}

/* ---------------------------------------------------------------------------------------- */
/* Configuration                                                                             */
/* ---------------------------------------------------------------------------------------- */

static void *ngx_http_sw_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_sw_main_conf_t *smcf = ngx_pcalloc(cf->pool, sizeof(*smcf));
    if (smcf == NULL) {
        return NULL;
    }
    smcf->used = NGX_CONF_UNSET;
    return smcf;
}

static void *ngx_http_sw_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_sw_loc_conf_t *lcf = ngx_pcalloc(cf->pool, sizeof(*lcf));
    if (lcf == NULL) {
        return NULL;
    }
    lcf->enable = NGX_CONF_UNSET;
    lcf->propagate = NGX_CONF_UNSET;
    lcf->ignore = NGX_CONF_UNSET_PTR;
    /* opname: NULL (unset) from pcalloc, as ngx_http_set_complex_value_slot expects */
    return lcf;
}

static char *ngx_http_sw_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    (void)cf;
    ngx_http_sw_loc_conf_t *prev = parent;
    ngx_http_sw_loc_conf_t *conf = child;
    ngx_conf_merge_value(conf->enable, prev->enable, 0);
    ngx_conf_merge_value(conf->propagate, prev->propagate, 1);
    ngx_conf_merge_ptr_value(conf->ignore, prev->ignore, NULL);
    if (conf->opname == NULL) {
        conf->opname = prev->opname;
    }
    return NGX_CONF_OK;
}

/* `skywalking on|off`; an `on` anywhere makes the workers start the agent. */
static char *ngx_http_sw_enable(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    char *rv = ngx_conf_set_flag_slot(cf, cmd, conf);
    if (rv != NGX_CONF_OK) {
        return rv;
    }
    ngx_http_sw_loc_conf_t *lcf = conf;
    if (lcf->enable) {
        ngx_http_sw_main_conf_t *smcf =
            ngx_http_conf_get_module_main_conf(cf, ngx_http_skywalking_module);
        smcf->used = 1;
    }
    return NGX_CONF_OK;
}

static char *ngx_http_sw_service(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    (void)cmd;
    ngx_http_sw_main_conf_t *smcf = conf;
    ngx_str_t *value = cf->args->elts;
    if (smcf->service.data != NULL) {
        return "is duplicate";
    }
    /* Checked as the agent checks SW_AGENT_NAME, on a scratch configuration. */
    sw_config_t *scratch = ngx_palloc(cf->temp_pool, sizeof(*scratch));
    char *name = ngx_http_sw_cstr(cf->temp_pool, &value[1]);
    if (scratch == NULL || name == NULL) {
        return NGX_CONF_ERROR;
    }
    sw_config_init(scratch);
    char msg[512];
    if (value[1].len == 0 || strlen(name) != value[1].len ||
        sw_config_set(scratch, "SW_AGENT_NAME", name, msg, sizeof msg) != SW_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid value \"%V\" in \"%V\": %s", &value[1],
                           &cmd->name, value[1].len == 0 ? "empty" : msg);
        return NGX_CONF_ERROR;
    }
    smcf->service = value[1];
    return NGX_CONF_OK;
}

/*
 * Applies the file named by `file` (NULL: SW_AGENT_CONFIG of the environment, if any), then
 * the environment, to cfg: sw_config_load with SW_AGENT_CONFIG pointing at the file for the
 * call. The master is single-threaded while it reads its configuration, so changing its
 * environment for the call is safe; the previous value is put back.
 */
static int sw_config_from(sw_config_t *cfg, const char *file, char *msg, size_t len)
{
    if (file == NULL) {
        return sw_config_load(cfg, msg, len);
    }
    const char *was = getenv("SW_AGENT_CONFIG");
    char *saved = was != NULL ? strdup(was) : NULL;
    if (was != NULL && saved == NULL) {
        ngx_cpystrn((u_char *)msg, (u_char *)"out of memory", len);
        return SW_ENOMEM;
    }
    int rc = setenv("SW_AGENT_CONFIG", file, 1) == 0 ? sw_config_load(cfg, msg, len) : SW_ENOMEM;
    if (saved != NULL) {
        (void)setenv("SW_AGENT_CONFIG", saved, 1);
        free(saved);
    } else {
        (void)unsetenv("SW_AGENT_CONFIG");
    }
    return rc;
}

static char *ngx_http_sw_config(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_sw_main_conf_t *smcf = conf;
    ngx_str_t *value = cf->args->elts;
    if (smcf->config_file.data != NULL) {
        return "is duplicate";
    }
    ngx_str_t file = value[1];
    if (file.len == 0 || ngx_conf_full_name(cf->cycle, &file, 1) != NGX_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid file name \"%V\" in \"%V\"", &value[1],
                           &cmd->name);
        return NGX_CONF_ERROR;
    }
    /* Read now, so that the error names this line; read again with the environment in
       init_main_conf. */
    sw_config_t *scratch = ngx_palloc(cf->temp_pool, sizeof(*scratch));
    char *path = ngx_http_sw_cstr(cf->pool, &file);
    if (scratch == NULL || path == NULL) {
        return NGX_CONF_ERROR;
    }
    sw_config_init(scratch);
    char msg[1024];
    if (strlen(path) != file.len || sw_config_from(scratch, path, msg, sizeof msg) != SW_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"%V\" \"%V\": %s", &cmd->name, &value[1],
                           strlen(path) != file.len ? "NUL byte in the name" : msg);
        return NGX_CONF_ERROR;
    }
    smcf->config_file.data = (u_char *)path;
    smcf->config_file.len = file.len;
    return NGX_CONF_OK;
}

/* `skywalking_ignore /prefix ...`: requests whose URI starts with one of them are not traced. */
static char *ngx_http_sw_ignore(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_sw_loc_conf_t *lcf = conf;
    if (lcf->ignore != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }
    ngx_str_t *value = cf->args->elts;
    lcf->ignore = ngx_array_create(cf->pool, cf->args->nelts - 1, sizeof(ngx_str_t));
    if (lcf->ignore == NULL) {
        return NGX_CONF_ERROR;
    }
    for (ngx_uint_t i = 1; i < cf->args->nelts; i++) {
        if (value[i].len == 0 || value[i].data[0] != '/') {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid value \"%V\" in \"%V\": a URI prefix starting with \"/\"",
                               &value[i], &cmd->name);
            return NGX_CONF_ERROR;
        }
        ngx_str_t *p = ngx_array_push(lcf->ignore);
        if (p == NULL) {
            return NGX_CONF_ERROR;
        }
        *p = value[i];
    }
    return NGX_CONF_OK;
}

/* Builds the agent's settings when some scope traces: skywalking_config (or SW_AGENT_CONFIG),
   the master's environment, then skywalking_service_name. */
static char *ngx_http_sw_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_sw_main_conf_t *smcf = conf;
    if (smcf->used == NGX_CONF_UNSET) {
        smcf->used = 0;
    }
    if (!smcf->used) {
        return NGX_CONF_OK;
    }
    smcf->agent = ngx_palloc(cf->pool, sizeof(*smcf->agent));
    if (smcf->agent == NULL) {
        return NGX_CONF_ERROR;
    }
    sw_config_init(smcf->agent);
    char msg[1024];
    const char *file = smcf->config_file.data != NULL ? (const char *)smcf->config_file.data : NULL;
    if (sw_config_from(smcf->agent, file, msg, sizeof msg) != SW_OK) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "skywalking: the agent's settings%s%s: %s",
                      file != NULL ? " of skywalking_config " : " (environment)",
                      file != NULL ? file : "", msg);
        return NGX_CONF_ERROR;
    }
    if (smcf->service.data != NULL) {
        char *name = ngx_http_sw_cstr(cf->temp_pool, &smcf->service);
        if (name == NULL ||
            sw_config_set(smcf->agent, "SW_AGENT_NAME", name, msg, sizeof msg) != SW_OK) {
            return NGX_CONF_ERROR; /* checked by the directive already */
        }
    } else if (getenv("SW_AGENT_NAME") == NULL && smcf->agent->service_name[0] == '\0') {
        (void)sw_config_set(smcf->agent, "SW_AGENT_NAME", "nginx", NULL, 0);
    }
    return NGX_CONF_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Workers                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static ngx_int_t ngx_http_sw_init_process(ngx_cycle_t *cycle)
{
    if (ngx_process != NGX_PROCESS_WORKER && ngx_process != NGX_PROCESS_SINGLE) {
        return NGX_OK; /* cache manager and loader: no requests, no agent */
    }
    ngx_http_sw_main_conf_t *smcf =
        ngx_http_cycle_get_module_main_conf(cycle, ngx_http_skywalking_module);
    if (smcf == NULL || !smcf->used || smcf->agent == NULL) {
        return NGX_OK;
    }
    /* The agent's threads start with every signal blocked (they inherit this thread's mask),
       so that a signal sent to the worker (SIGQUIT, SIGHUP, SIGUSR1, ...) reaches nginx's
       own thread and interrupts its event loop at once. */
    sigset_t all, old;
    sigfillset(&all);
    int masked = pthread_sigmask(SIG_BLOCK, &all, &old) == 0;
    int rc = sw_init(smcf->agent);
    if (masked) {
        (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (rc != SW_OK) {
        /* the agent logged why (to stderr: the error log); nginx serves untraced */
        ngx_log_error(NGX_LOG_ERR, cycle->log, 0,
                      "skywalking: the agent did not start (%s): requests are not traced",
                      sw_err_name(rc));
    }
    return NGX_OK;
}

static void ngx_http_sw_exit_process(ngx_cycle_t *cycle)
{
    if (!sw_enabled()) {
        return;
    }
    (void)sw_shutdown();
    sw_stats_t st;
    sw_stats(&st);
    ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                  "skywalking: worker %P stopped: segments finished %uL reported %uL dropped %uL "
                  "failed %uL, contexts open %uL",
                  ngx_pid, (uint64_t)st.segments_finished, (uint64_t)st.segments_reported,
                  (uint64_t)st.segments_dropped, (uint64_t)st.segments_failed,
                  (uint64_t)st.contexts_open);
}

/* ---------------------------------------------------------------------------------------- */
/* The request context and its entry span                                                   */
/* ---------------------------------------------------------------------------------------- */

/* Ends whatever the request left open; runs when r->pool is destroyed (after the log phase,
   which normally ended everything). */
static void ngx_http_sw_cleanup(void *data)
{
    ngx_http_sw_ctx_t *ctx = data;
    ngx_http_sw_upstream_finish(ctx);
    if (ctx->entry_open) {
        ctx->entry_open = 0;
        (void)sw_span_ref_end(ctx->entry);
    }
}

ngx_http_sw_ctx_t *ngx_http_sw_ctx_get(ngx_http_request_t *r)
{
    r = r->main;
    ngx_http_sw_ctx_t *ctx = ngx_http_get_module_ctx(r, ngx_http_skywalking_module);
    if (ctx != NULL) {
        return ctx;
    }
    /* An internal redirect cleared r->ctx: the pool cleanup still holds it. */
    for (ngx_pool_cleanup_t *c = r->pool->cleanup; c != NULL; c = c->next) {
        if (c->handler == ngx_http_sw_cleanup) {
            ctx = c->data;
            ngx_http_set_ctx(r, ctx, ngx_http_skywalking_module);
            return ctx;
        }
    }
    return NULL;
}

static ngx_int_t ngx_http_sw_ignored(ngx_http_sw_loc_conf_t *lcf, ngx_http_request_t *r)
{
    if (lcf->ignore == NULL) {
        return 0;
    }
    ngx_str_t *p = lcf->ignore->elts;
    for (ngx_uint_t i = 0; i < lcf->ignore->nelts; i++) {
        if (r->uri.len >= p[i].len && ngx_strncmp(r->uri.data, p[i].data, p[i].len) == 0) {
            return 1;
        }
    }
    return 0;
}

ngx_int_t ngx_http_sw_is_propagation(const ngx_str_t *name)
{
    for (ngx_uint_t i = 0; i < NGX_SW_HEADERS; i++) {
        const ngx_str_t *n = &ngx_http_sw_header_names[i];
        if (name->len == n->len && ngx_strncasecmp(name->data, n->data, n->len) == 0) {
            return 1;
        }
    }
    return 0;
}

ngx_int_t ngx_http_sw_headers_strip(ngx_http_request_t *r, ngx_list_t *list)
{
    ngx_list_t copy;
    if (ngx_list_init(&copy, r->pool, 20, sizeof(ngx_table_elt_t)) != NGX_OK) {
        return NGX_ERROR;
    }
    for (ngx_list_part_t *part = &list->part; part != NULL; part = part->next) {
        ngx_table_elt_t *h = part->elts;
        for (ngx_uint_t i = 0; i < part->nelts; i++) {
            if (ngx_http_sw_is_propagation(&h[i].key)) {
                continue;
            }
            ngx_table_elt_t *e = ngx_list_push(&copy);
            if (e == NULL) {
                return NGX_ERROR;
            }
            *e = h[i];
        }
    }
    *list = copy;
    if (copy.last == &copy.part) { /* the inline first part moved with the struct */
        list->last = &list->part;
    }
    return NGX_OK;
}

/* Fills in with the request's propagation headers (the first of each name, NUL-terminated
   copies); sets *found when there is any. */
static ngx_int_t ngx_http_sw_headers_read(ngx_http_request_t *r, sw_headers_t *in,
                                          ngx_uint_t *found)
{
    const char **slot[NGX_SW_HEADERS] = {&in->sw8, &in->sw8_correlation, &in->sw8_x,
                                         &in->traceparent, &in->tracestate};
    for (ngx_list_part_t *part = &r->headers_in.headers.part; part != NULL; part = part->next) {
        ngx_table_elt_t *h = part->elts;
        for (ngx_uint_t i = 0; i < part->nelts; i++) {
            for (ngx_uint_t k = 0; k < NGX_SW_HEADERS; k++) {
                const ngx_str_t *n = &ngx_http_sw_header_names[k];
                if (h[i].key.len != n->len ||
                    ngx_strncasecmp(h[i].key.data, n->data, n->len) != 0) {
                    continue;
                }
                *found = 1;
                if (*slot[k] == NULL) {
                    *slot[k] = ngx_http_sw_cstr(r->pool, &h[i].value);
                    if (*slot[k] == NULL) {
                        return NGX_ERROR;
                    }
                }
            }
        }
    }
    return NGX_OK;
}

/* The tags and peer of a recorded entry span. */
static void ngx_http_sw_entry_describe(ngx_http_request_t *r, sw_span_ref_t entry)
{
    (void)sw_span_ref_set_layer(entry, SW_LAYER_HTTP);
    (void)sw_span_ref_set_component(entry, NGX_SW_COMPONENT_NGINX);
    char *method = ngx_http_sw_cstr(r->pool, &r->method_name);
    ngx_str_t host = r->headers_in.host != NULL ? r->headers_in.host->value : r->headers_in.server;
    if (host.len == 0) {
        ngx_http_core_srv_conf_t *cscf = ngx_http_get_module_srv_conf(r, ngx_http_core_module);
        host = cscf->server_name;
    }
#if (NGX_HTTP_SSL)
    const char *scheme = r->connection->ssl != NULL ? "https" : "http";
#else
    const char *scheme = "http";
#endif
    size_t len = 8 + host.len + r->unparsed_uri.len + 1;
    u_char *url = ngx_pnalloc(r->pool, len);
    if (url != NULL) {
        *ngx_snprintf(url, len - 1, "%s://%V%V", scheme, &host, &r->unparsed_uri) = '\0';
    }
    u_char peer[NGX_SOCKADDR_STRLEN + 1];
    size_t n = ngx_sock_ntop(r->connection->sockaddr, r->connection->socklen, peer,
                             NGX_SOCKADDR_STRLEN, 1);
    peer[n] = '\0';
    (void)sw_span_ref_tag(entry, "http.method", method != NULL ? method : "");
    (void)sw_span_ref_tag(entry, "url", url != NULL ? (char *)url : "");
    (void)sw_span_ref_set_peer(entry, (char *)peer);
}

/* The operation name: skywalking_operation_name, else the location's name. */
static char *ngx_http_sw_operation(ngx_http_request_t *r, ngx_http_sw_loc_conf_t *lcf)
{
    ngx_str_t name = ngx_null_string;
    if (lcf->opname != NULL && ngx_http_complex_value(r, lcf->opname, &name) != NGX_OK) {
        name.len = 0;
    }
    if (name.len == 0) {
        ngx_http_core_loc_conf_t *clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);
        name = clcf->name.len != 0 ? clcf->name : r->uri;
    }
    return ngx_http_sw_cstr(r->pool, &name);
}

/* Rewrite phase: the first location of a main request with `skywalking on` begins its entry
   span (an internal redirect runs this phase again and finds the context). */
static ngx_int_t ngx_http_sw_rewrite_handler(ngx_http_request_t *r)
{
    if (r != r->main || !sw_enabled()) {
        return NGX_DECLINED;
    }
    ngx_http_sw_loc_conf_t *lcf = ngx_http_get_module_loc_conf(r, ngx_http_skywalking_module);
    if (!lcf->enable || ngx_http_sw_ignored(lcf, r) || ngx_http_sw_ctx_get(r) != NULL) {
        return NGX_DECLINED;
    }
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(r->pool, sizeof(ngx_http_sw_ctx_t));
    if (cln == NULL) {
        return NGX_DECLINED; /* no memory: served untraced */
    }
    ngx_http_sw_ctx_t *ctx = cln->data;
    ngx_memzero(ctx, sizeof(*ctx));
    ctx->request = r;
    ctx->propagate = lcf->propagate ? 1 : 0;
    cln->handler = ngx_http_sw_cleanup;
    ngx_http_set_ctx(r, ctx, ngx_http_skywalking_module);

    sw_headers_t in = {0};
    ngx_uint_t found = 0;
    char *op = ngx_http_sw_operation(r, lcf);
    if (op == NULL || ngx_http_sw_headers_read(r, &in, &found) != NGX_OK) {
        return NGX_DECLINED;
    }
    ctx->operation = op;
    if (found && ctx->propagate) {
        /* the upstreams get ours instead */
        (void)ngx_http_sw_headers_strip(r, &r->headers_in.headers);
    }
    int rc = sw_context_begin_entry(op, &in, &ctx->entry);
    ctx->entry_open = 1;
    ctx->recorded = rc == SW_OK;
    if (ctx->recorded) {
        ngx_http_sw_entry_describe(r, ctx->entry);
    }
    return NGX_DECLINED;
}

/* Log phase of the main request: the status, and the end of the entry span. */
static ngx_int_t ngx_http_sw_log_handler(ngx_http_request_t *r)
{
    if (r != r->main) {
        return NGX_OK;
    }
    ngx_http_sw_ctx_t *ctx = ngx_http_sw_ctx_get(r);
    if (ctx == NULL || !ctx->entry_open) {
        return NGX_OK;
    }
    ngx_http_sw_upstream_finish(ctx);
    if (ctx->var_open) {
        ctx->var_open = 0;
        (void)sw_span_ref_end(ctx->var_exit);
    }
    ngx_uint_t status = r->headers_out.status;
    if (status == 0) {
        status = r->err_status;
    }
    if (ctx->recorded) {
        char buf[NGX_INT_T_LEN + 1];
        *ngx_sprintf((u_char *)buf, "%ui", status) = '\0';
        (void)sw_span_ref_tag(ctx->entry, "http.status_code", buf);
        if (status >= 500) {
            (void)sw_span_ref_set_error(ctx->entry, true);
        }
    }
    ctx->entry_open = 0;
    (void)sw_span_ref_end(ctx->entry);
    return NGX_OK;
}

static ngx_int_t ngx_http_sw_init(ngx_conf_t *cf)
{
    ngx_http_core_main_conf_t *cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    ngx_http_handler_pt *h = ngx_array_push(&cmcf->phases[NGX_HTTP_REWRITE_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }
    *h = ngx_http_sw_rewrite_handler;
    h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }
    *h = ngx_http_sw_log_handler;
    ngx_http_sw_main_conf_t *smcf =
        ngx_http_conf_get_module_main_conf(cf, ngx_http_skywalking_module);
    return smcf->used ? ngx_http_sw_upstream_wrap(cf, smcf) : NGX_OK;
}
