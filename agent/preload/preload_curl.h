/*
 * preload_curl.h - what preload_curl.c (the easy interface) shares with preload_curl_multi.c
 * (internal): the per-handle record of the caller's URL and header list, the span tags of a
 * transfer and the sw8 header list.
 */
#ifndef SW_PRELOAD_CURL_H
#define SW_PRELOAD_CURL_H

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

#define SW__CURL_URL_MAX 2048

typedef struct sw__curl_fns {
    struct curl_slist *(*append)(struct curl_slist *, const char *);
    void (*free_all)(struct curl_slist *);
    CURLcode (*getinfo)(CURL *, CURLINFO, ...);
    CURLcode (*setopt)(CURL *, CURLoption, ...);
    const char *(*strerror)(CURLcode);
} sw__curl_fns_t;

/* Resolves the libcurl functions the plugins call; false when one is missing. Any thread. */
bool sw__curl_fns_resolve(sw__curl_fns_t *f);

/* Set while this thread is inside the real curl_easy_perform, which drives a multi handle of
   its own: the multi interposers then only forward. */
extern _Thread_local bool sw__curl_in_easy;

/* Copies the URL the caller set on h (or "") into url and returns the caller's
   CURLOPT_HTTPHEADER list (NULL when none). Any thread; takes the handles lock briefly. */
struct curl_slist *sw__curl_handle_get(CURL *h, char *url, size_t url_len);

/*
 * Splits url into the span's operation (its path, without the query) and peer (host:port; the
 * scheme's default port when the URL has none or an empty one; "" when the URL has no host),
 * and removes any user:password@ from url in place (it must not reach the trace).
 */
void sw__curl_url_split(char *url, char *path, size_t path_len, char *peer, size_t peer_len);

/* Sets layer Http, component cURL and the url tag on the active span. */
void sw__curl_span_tags(const char *url);

/* The caller's headers plus, for the active exit span, sw8, sw8-correlation and sw8-x and/or
   traceparent and tracestate (as SW_AGENT_PROPAGATION says; no traceparent when the caller set
   one), or NULL (not traced, or out of memory). Free with f->free_all. */
struct curl_slist *sw__curl_headers_build(const sw__curl_fns_t *f, const struct curl_slist *caller);

/* Tags the outcome of a transfer on the active span: http.method, http.status_code, error
   for a failed transfer (with a log of curl's message) or a status >= 400. */
void sw__curl_outcome_tag(const sw__curl_fns_t *f, CURL *h, CURLcode rc);

#endif /* SW_PRELOAD_CURL_H */
