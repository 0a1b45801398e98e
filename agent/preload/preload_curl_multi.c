/*
 * preload_curl_multi.c - libcurl's multi interface: each transfer is an exit span, with the
 * conventions of the easy interface (preload_curl.c: peer, url, http.method, http.status_code,
 * sw8 injected into the request headers, component cURL).
 *
 * curl_multi_add_handle begins the span under the thread's active span, sets the header list
 * with sw8 on the easy handle and detaches the span from the thread's stack (span_async.h), so
 * that several transfers in flight on one thread are sibling spans of one segment.
 * curl_multi_info_read's CURLMSG_DONE for the handle ends the span with the transfer's result,
 * in completion order; curl_multi_remove_handle ends a span still open (a transfer removed
 * before it completed, not an error by itself). Either puts the caller's header list back.
 *
 * A transfer is ended by the thread that added it; libcurl allows a multi handle to move
 * between threads, and a transfer that completes on another thread has its span left open
 * (its segment is then never reported; the README's limits of the preload).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../src/instrument/span_async.h"
#include "preload.h"
#include "preload_lock.h"
#include "preload_curl.h"
#include "preload_handle_map.h"

typedef struct transfer {
    sw__handle_node_t node;    /* first: the map's link, keyed by the easy handle */
    struct curl_slist *caller; /* the caller's list (owned by the caller) */
    struct curl_slist *ours;   /* the list set for the transfer (ours to free) */
    sw__span_async_t span;
} transfer_t;

/* Traced transfers in flight, by easy handle; global because libcurl gives no slot for them.
   SW__PLUGIN_LOCK_CURL_MULTI (preload_lock.h) protects the buckets and every node. */
static sw__handle_map_t transfers;

/* Removes and returns the transfer of easy, or NULL. */
static transfer_t *transfer_take(CURL *easy)
{
    sw__plugin_lock(SW__PLUGIN_LOCK_CURL_MULTI);
    transfer_t *t = (transfer_t *)sw__handle_map_take(&transfers, easy);
    sw__plugin_unlock(SW__PLUGIN_LOCK_CURL_MULTI);
    return t;
}

static void transfer_put(transfer_t *t)
{
    sw__plugin_lock(SW__PLUGIN_LOCK_CURL_MULTI);
    sw__handle_map_add(&transfers, &t->node);
    sw__plugin_unlock(SW__PLUGIN_LOCK_CURL_MULTI);
}

/* Ends the span of easy's transfer (with rc when `done`) and puts the caller's headers back. */
static void transfer_finish(CURL *easy, CURLcode rc, bool done)
{
    transfer_t *t = transfer_take(easy);
    sw__curl_fns_t f;
    if (t == NULL || !sw__curl_fns_resolve(&f)) {
        free(t);
        return;
    }
    (void)f.setopt(easy, CURLOPT_HTTPHEADER, t->caller);
    f.free_all(t->ours);
    sw__span_async_saved_t saved;
    if (sw__span_async_resume(&t->span, &saved)) {
        sw__curl_outcome_tag(&f, easy, done ? rc : CURLE_OK);
    }
    (void)sw__span_async_end(&t->span, &saved); /* false: another thread's span, left open */
    free(t);
}

CURLMcode curl_multi_add_handle(CURLM *multi, CURL *easy)
{
    CURLMcode (*real)(CURLM *, CURL *);
    SW__PRELOAD_REAL(real, "curl_multi_add_handle");
    if (real == NULL) {
        return CURLM_INTERNAL_ERROR;
    }
    sw__curl_fns_t f;
    transfer_t *t = NULL;
    if (easy != NULL && !sw__preload_busy && !sw__curl_in_easy && sw__curl_fns_resolve(&f) &&
        sw__preload_agent_ready()) {
        t = calloc(1, sizeof *t);
    }
    if (t == NULL) {
        return real(multi, easy);
    }
    /* A handle added twice without removal: the first span is ended here. */
    transfer_finish(easy, CURLE_OK, false);
    char url[SW__CURL_URL_MAX], path[SW__CURL_URL_MAX], peer[512];
    t->node.handle = easy;
    t->caller = sw__curl_handle_get(easy, url, sizeof url);
    sw__curl_url_split(url, path, sizeof path, peer, sizeof peer);
    sw__span_mark_t mark;
    sw__span_async_begin_exit(path, peer[0] != '\0' ? peer : NULL, &t->span, &mark);
    sw__preload_pending_apply(&mark, true);
    sw__curl_span_tags(url);
    t->ours = sw__curl_headers_build(&f, t->caller);
    if (t->ours != NULL && f.setopt(easy, CURLOPT_HTTPHEADER, t->ours) != CURLE_OK) {
        f.free_all(t->ours);
        t->ours = NULL;
    }
    sw__span_async_detach(&t->span);
    CURLMcode rc = real(multi, easy);
    transfer_put(t);
    if (rc != CURLM_OK) {
        transfer_finish(easy, CURLE_OK, false);
        /* the span ended without a status; curl_multi_strerror(rc) is the caller's to read */
    }
    return rc;
}

CURLMsg *curl_multi_info_read(CURLM *multi, int *msgs_in_queue)
{
    CURLMsg *(*real)(CURLM *, int *);
    SW__PRELOAD_REAL(real, "curl_multi_info_read");
    if (real == NULL) {
        return NULL;
    }
    CURLMsg *m = real(multi, msgs_in_queue);
    if (m != NULL && m->msg == CURLMSG_DONE && !sw__curl_in_easy) {
        transfer_finish(m->easy_handle, m->data.result, true);
    }
    return m;
}

CURLMcode curl_multi_remove_handle(CURLM *multi, CURL *easy)
{
    CURLMcode (*real)(CURLM *, CURL *);
    SW__PRELOAD_REAL(real, "curl_multi_remove_handle");
    if (real == NULL) {
        return CURLM_INTERNAL_ERROR;
    }
    if (!sw__curl_in_easy) {
        transfer_finish(easy, CURLE_OK, false);
    }
    return real(multi, easy);
}
