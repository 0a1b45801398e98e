/*
 * preload_curl.c - libcurl's easy interface: every curl_easy_perform becomes an exit span
 * (layer Http, peer host:port, tags url / http.method / http.status_code, error on a failed
 * transfer or a status >= 400) and the request carries sw8, sw8-correlation and sw8-x, and/or
 * traceparent and tracestate, as SW_AGENT_PROPAGATION says.
 *
 * libcurl cannot give back the header list a caller set, so curl_easy_setopt is interposed to
 * remember, per handle, the caller's CURLOPT_HTTPHEADER list and CURLOPT_URL. For a traced
 * request a temporary list (the caller's headers, then ours) is set, the transfer performed,
 * and the caller's list set back before the temporary one is freed: the caller's list is
 * never modified. The multi interface is in preload_curl_multi.c.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/core/span_instrument.h"
#include "../src/core/propagate.h"
#include "preload.h"
#include "preload_lock.h"
#include "preload_curl.h"
#include "preload_handle_map.h"

#define URL_MAX SW__CURL_URL_MAX

_Thread_local bool sw__curl_in_easy;

typedef struct handle_info {
    sw__handle_node_t node;     /* first: the map's link, keyed by the easy handle */
    struct curl_slist *headers; /* the caller's list (owned by the caller) */
    char *url;                  /* copy of CURLOPT_URL */
} handle_info_t;

/* What this library knows about each easy handle; global because libcurl gives no place to
   keep it. SW__PLUGIN_LOCK_CURL (preload_lock.h) protects the buckets and every node. */
static sw__handle_map_t handles;

/* The node of h, created when `create`; SW__PLUGIN_LOCK_CURL held. */
static handle_info_t *info_find(CURL *h, bool create)
{
    if (create) {
        return (handle_info_t *)sw__handle_map_get(&handles, h, sizeof(handle_info_t));
    }
    return (handle_info_t *)sw__handle_map_find(&handles, h);
}

/* Removes h's node; SW__PLUGIN_LOCK_CURL held. */
static void info_remove(CURL *h)
{
    handle_info_t *i = (handle_info_t *)sw__handle_map_take(&handles, h);
    if (i != NULL) {
        free(i->url);
        free(i);
    }
}

static void remember(CURL *h, CURLoption opt, void *value)
{
    if (opt != CURLOPT_HTTPHEADER && opt != CURLOPT_URL) {
        return;
    }
    sw__plugin_lock(SW__PLUGIN_LOCK_CURL);
    handle_info_t *i = info_find(h, true);
    if (i != NULL && opt == CURLOPT_HTTPHEADER) {
        i->headers = value;
    } else if (i != NULL) {
        free(i->url);
        i->url = value != NULL ? strdup(value) : NULL;
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_CURL);
}

CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
    CURLcode (*real)(CURL *, CURLoption, ...);
    SW__PRELOAD_REAL(real, "curl_easy_setopt");
    if (real == NULL) {
        return CURLE_FAILED_INIT;
    }
    va_list ap;
    va_start(ap, opt);
    CURLcode rc;
    /* The option number says the type of its one argument (curl.h's CURLOPTTYPE_*). Function
       pointers travel as void *, as libcurl itself reads them: same size and class here. */
    if (opt < CURLOPTTYPE_OBJECTPOINT) {
        long v = va_arg(ap, long);
        rc = real(h, opt, v);
    } else if (opt < CURLOPTTYPE_OFF_T || opt >= CURLOPTTYPE_BLOB) {
        void *v = va_arg(ap, void *);
        rc = real(h, opt, v);
        if (rc == CURLE_OK) {
            remember(h, opt, v);
        }
    } else {
        curl_off_t v = va_arg(ap, curl_off_t);
        rc = real(h, opt, v);
    }
    va_end(ap);
    return rc;
}

void curl_easy_cleanup(CURL *h)
{
    void (*real)(CURL *);
    SW__PRELOAD_REAL(real, "curl_easy_cleanup");
    sw__plugin_lock(SW__PLUGIN_LOCK_CURL);
    info_remove(h);
    sw__plugin_unlock(SW__PLUGIN_LOCK_CURL);
    if (real != NULL) {
        real(h);
    }
}

void curl_easy_reset(CURL *h)
{
    void (*real)(CURL *);
    SW__PRELOAD_REAL(real, "curl_easy_reset");
    sw__plugin_lock(SW__PLUGIN_LOCK_CURL);
    info_remove(h);
    sw__plugin_unlock(SW__PLUGIN_LOCK_CURL);
    if (real != NULL) {
        real(h);
    }
}

CURL *curl_easy_duphandle(CURL *h)
{
    CURL *(*real)(CURL *);
    SW__PRELOAD_REAL(real, "curl_easy_duphandle");
    if (real == NULL) {
        return NULL;
    }
    CURL *dup = real(h);
    if (dup == NULL) {
        return NULL;
    }
    sw__plugin_lock(SW__PLUGIN_LOCK_CURL);
    handle_info_t *from = info_find(h, false);
    if (from != NULL) {
        handle_info_t *to = info_find(dup, true);
        if (to != NULL) {
            to->headers = from->headers; /* libcurl's copy shares the caller's list too */
            to->url = from->url != NULL ? strdup(from->url) : NULL;
        }
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_CURL);
    return dup;
}

void sw__curl_url_split(char *url, char *path, size_t path_len, char *peer, size_t peer_len)
{
    char *p = strstr(url, "://");
    bool https = strncmp(url, "https:", 6) == 0;
    char *host = p != NULL ? p + 3 : url;
    char *at = host + strcspn(host, "/?#");
    const char *cred = memchr(host, '@', (size_t)(at - host));
    if (cred != NULL) {
        memmove(host, cred + 1, strlen(cred + 1) + 1);
        at -= cred + 1 - host;
    }
    size_t hlen = (size_t)(at - host);
    const char *colon;
    if (host[0] == '[') { /* IPv6 literal: a port follows the ']' */
        const char *rb = memchr(host, ']', hlen);
        colon = rb != NULL && rb + 1 < at && rb[1] == ':' ? rb + 1 : NULL;
    } else {
        colon = memchr(host, ':', hlen);
    }
    /* host part without the port; an empty port (host:) takes the scheme's default */
    size_t name_len = colon != NULL ? (size_t)(colon - host) : hlen;
    bool has_port = colon != NULL && colon + 1 < at;
    if (name_len == 0) {
        peer[0] = '\0'; /* no host: no peer is written */
    } else if (has_port) {
        snprintf(peer, peer_len, "%.*s", (int)hlen, host);
    } else {
        snprintf(peer, peer_len, "%.*s:%d", (int)name_len, host, https ? 443 : 80);
    }
    size_t plen = strcspn(at, "?#");
    snprintf(path, path_len, "%.*s", (int)plen, plen ? at : "/");
}

struct curl_slist *sw__curl_handle_get(CURL *h, char *url, size_t url_len)
{
    struct curl_slist *caller = NULL;
    url[0] = '\0';
    sw__plugin_lock(SW__PLUGIN_LOCK_CURL);
    handle_info_t *i = info_find(h, false);
    if (i != NULL) {
        caller = i->headers;
        snprintf(url, url_len, "%s", i->url != NULL ? i->url : "");
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_CURL);
    return caller;
}

void sw__curl_span_tags(const char *url)
{
    sw__span_set_layer_component(SW_LAYER_HTTP, SW__COMPONENT_CURL);
    sw__span_tag_static("url", url);
}

/* Whether the caller's list already carries a header `name` ("traceparent:"): the caller's
   own trace context is then left alone. */
static bool caller_has(const struct curl_slist *caller, const char *name)
{
    size_t n = strlen(name);
    for (const struct curl_slist *c = caller; c != NULL; c = c->next) {
        if (c->data != NULL && strncasecmp(c->data, name, n) == 0) {
            return true;
        }
    }
    return false;
}

struct curl_slist *sw__curl_headers_build(const sw__curl_fns_t *f, const struct curl_slist *caller)
{
    enum { N = 5 };
    static const char *const names[N] = {
        "sw8: ", "sw8-correlation: ", "sw8-x: ", "traceparent: ", "tracestate: "};
    char sw8[SW_SW8_MAX], corr[SW_CORRELATION_HEADER_MAX], x[SW_SW8_X_MAX];
    char tp[SW_TRACEPARENT_MAX], ts[SW_TRACESTATE_MAX];
    sw8[0] = corr[0] = x[0] = tp[0] = ts[0] = '\0';
    /* SW_AGENT_PROPAGATION: the formats it names; nothing when the span is not traced. */
    if (sw__propagation_sw8() && sw_inject(sw8, sizeof sw8, corr, sizeof corr, x, sizeof x) != 0) {
        return NULL;
    }
    if (sw__propagation_w3c() && !caller_has(caller, "traceparent:") &&
        sw_inject_w3c(tp, sizeof tp, ts, sizeof ts) != 0 && sw8[0] == '\0') {
        return NULL;
    }
    if (sw8[0] == '\0' && tp[0] == '\0') {
        return NULL;
    }
    const char *values[N] = {sw8, corr, x, tp, ts};
    struct curl_slist *list = NULL;
    for (const struct curl_slist *c = caller; c != NULL; c = c->next) {
        struct curl_slist *grown = f->append(list, c->data);
        if (grown == NULL) {
            goto fail;
        }
        list = grown;
    }
    for (int i = 0; i < N; i++) {
        if (values[i][0] == '\0') {
            continue;
        }
        char line[SW_SW8_MAX + SW_TRACESTATE_MAX + 32];
        snprintf(line, sizeof line, "%s%s", names[i], values[i]);
        struct curl_slist *grown = f->append(list, line);
        if (grown == NULL) {
            goto fail;
        }
        list = grown;
    }
    return list;
fail:
    f->free_all(list);
    return NULL;
}

void sw__curl_outcome_tag(const sw__curl_fns_t *f, CURL *h, CURLcode rc)
{
    char *method = NULL;
    if (f->getinfo(h, CURLINFO_EFFECTIVE_METHOD, &method) == CURLE_OK && method != NULL) {
        sw__span_tag_static("http.method", method);
    }
    long status = 0;
    if (f->getinfo(h, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status != 0) {
        sw__preload_status_tag(status);
    }
    if (rc != CURLE_OK) {
        sw_span_set_error(true);
        sw_kv_t kv[2] = {{"event", "error"}, {"message", f->strerror(rc)}};
        sw_span_log(kv, 2);
    } else if (status >= 400) {
        sw_span_set_error(true);
    }
}

bool sw__curl_fns_resolve(sw__curl_fns_t *f)
{
    SW__PRELOAD_REAL(f->append, "curl_slist_append");
    SW__PRELOAD_REAL(f->free_all, "curl_slist_free_all");
    SW__PRELOAD_REAL(f->getinfo, "curl_easy_getinfo");
    SW__PRELOAD_REAL(f->setopt, "curl_easy_setopt");
    SW__PRELOAD_REAL(f->strerror, "curl_easy_strerror");
    return f->append && f->free_all && f->getinfo && f->setopt && f->strerror;
}

CURLcode curl_easy_perform(CURL *h)
{
    CURLcode (*real)(CURL *);
    SW__PRELOAD_REAL(real, "curl_easy_perform");
    if (real == NULL) {
        return CURLE_FAILED_INIT;
    }
    sw__curl_fns_t f;
    if (sw__preload_busy || sw__curl_in_easy || !sw__curl_fns_resolve(&f) ||
        !sw__preload_agent_ready()) {
        bool outer = sw__curl_in_easy;
        sw__curl_in_easy = true;
        CURLcode rc = real(h);
        sw__curl_in_easy = outer;
        return rc;
    }
    char url[URL_MAX];
    struct curl_slist *caller = sw__curl_handle_get(h, url, sizeof url);
    char path[URL_MAX], peer[512];
    sw__curl_url_split(url, path, sizeof path, peer, sizeof peer);
    sw__span_mark_t mark;
    sw__span_begin_exit_marked(path, peer[0] != '\0' ? peer : NULL, &mark);
    sw__preload_pending_apply(&mark, true);
    sw__curl_span_tags(url);
    struct curl_slist *ours = sw__curl_headers_build(&f, caller);
    if (ours != NULL && f.setopt(h, CURLOPT_HTTPHEADER, ours) != CURLE_OK) {
        f.free_all(ours);
        ours = NULL;
    }
    sw__curl_in_easy = true;
    CURLcode rc = real(h);
    sw__curl_in_easy = false;
    if (ours != NULL) {
        (void)f.setopt(h, CURLOPT_HTTPHEADER, caller);
        f.free_all(ours);
    }
    sw__curl_outcome_tag(&f, h, rc);
    sw_span_end();
    return rc;
}
