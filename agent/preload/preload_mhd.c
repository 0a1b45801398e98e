/*
 * preload_mhd.c - libmicrohttpd: each call of the application's access handler that queues a
 * response (or makes a traced call) becomes an entry span: operation = the URL path, sw8 /
 * sw8-correlation / sw8-x taken from the request headers, tags http.method, url and
 * http.status_code, peer = the client's address, error for a status >= 400. traceparent and
 * tracestate are read too (sw_entry_span_begin_w3c: SW_AGENT_PROPAGATION decides which wins).
 *
 * libmicrohttpd calls the handler several times per request (headers, upload chunks, the final
 * call) and may serve many connections on one thread, so a span cannot stay open between calls:
 * each call opens one, and a call that neither queued a response nor had anything attached
 * removes it again (span_mark.h). MHD_queue_response is interposed to see the status code.
 *
 * MHD_start_daemon is variadic: both it and MHD_start_daemon_va forward the caller's options
 * unchanged to the real MHD_start_daemon_va, with the handler wrapped.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../src/core/span_instrument.h"
#include "../src/segment/ids.h"
#include "../src/core/propagate.h"
#include "preload.h"
#include "preload_lock.h"

typedef struct handler_wrap {
    struct handler_wrap *next;
    struct MHD_Daemon *daemon;
    MHD_AccessHandlerCallback handler;
    void *handler_cls;
} handler_wrap_t;

/* The wrappers of running daemons, freed by MHD_stop_daemon; global because libmicrohttpd
   offers no per-daemon slot for it. SW__PLUGIN_LOCK_MHD (preload_lock.h) protects the list. */
static handler_wrap_t *wraps;

/* The handler call running on this thread, for MHD_queue_response. */
typedef struct handler_call {
    struct MHD_Connection *connection;
    unsigned int status;
    bool queued;
} handler_call_t;

static _Thread_local handler_call_t *tls_call;

#define REAL(var, name)                                    \
    do {                                                   \
        static _Atomic(void *) slot_;                      \
        void *sym_ = sw__preload_real(&slot_, name, NULL); \
        memcpy(&(var), &sym_, sizeof sym_);                \
    } while (0)

static const char *header_get(struct MHD_Connection *c, const char *name)
{
    const char *(*lookup)(struct MHD_Connection *, enum MHD_ValueKind, const char *);
    REAL(lookup, "MHD_lookup_connection_value");
    return lookup != NULL ? lookup(c, MHD_HEADER_KIND, name) : NULL;
}

/* The propagation headers of a request (NULL: absent; the first of repeated ones). */
typedef struct headers {
    const char *sw8;
    const char *correlation;
    const char *x;
    const char *traceparent;
    const char *tracestate;
    bool w3c; /* traceparent and tracestate are wanted */
} headers_t;

/* ASCII case-insensitive equality of n bytes, as libmicrohttpd compares header names. */
static bool name_is(const char *key, const char *name, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char k = (unsigned char)key[i];
        if ((k >= 'A' && k <= 'Z' ? k + 32u : k) != (unsigned char)name[i]) {
            return false;
        }
    }
    return true;
}

static enum MHD_Result header_pick(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    (void)value_size;
    headers_t *h = cls;
    const char **slot = NULL;
    switch (key_size) { /* the name's length picks the one candidate */
    case 3:
        slot = name_is(key, "sw8", 3) ? &h->sw8 : NULL;
        break;
    case 5:
        slot = name_is(key, "sw8-x", 5) ? &h->x : NULL;
        break;
    case 15:
        slot = name_is(key, "sw8-correlation", 15) ? &h->correlation : NULL;
        break;
    case 11:
        slot = h->w3c && name_is(key, "traceparent", 11) ? &h->traceparent : NULL;
        break;
    case 10:
        slot = h->w3c && name_is(key, "tracestate", 10) ? &h->tracestate : NULL;
        break;
    default:
        break;
    }
    if (slot != NULL && *slot == NULL) {
        *slot = value;
    }
    return MHD_YES;
}

/* Reads the propagation headers in one pass over the request's headers (one lookup each when
   this libmicrohttpd lacks MHD_get_connection_values_n). */
static void headers_read(struct MHD_Connection *c, headers_t *h)
{
    int (*each)(struct MHD_Connection *, enum MHD_ValueKind, MHD_KeyValueIteratorN, void *);
    REAL(each, "MHD_get_connection_values_n");
    if (each != NULL) {
        (void)each(c, MHD_HEADER_KIND, header_pick, h);
        return;
    }
    h->sw8 = header_get(c, "sw8");
    h->correlation = header_get(c, "sw8-correlation");
    h->x = header_get(c, "sw8-x");
    if (h->w3c) {
        h->traceparent = header_get(c, "traceparent");
        h->tracestate = header_get(c, "tracestate");
    }
}

/* Writes a.b.c.d for an IPv4 address in network order; returns the length (at most 15). glibc's
   inet_ntop formats IPv4 with sprintf, which is most of this function's cost per request. */
static size_t ipv4_format(const struct in_addr *addr, char *out)
{
    const unsigned char *b = (const unsigned char *)&addr->s_addr;
    size_t n = 0;
    for (int i = 0; i < 4; i++) {
        if (i != 0) {
            out[n++] = '.';
        }
        n += sw__u64_to_dec(b[i], out + n);
    }
    return n;
}

/* The last client address formatted on this thread: a keep-alive connection sends many
   requests from one address and port. */
typedef struct peer_cache {
    struct sockaddr_in6 addr; /* the bytes compared: sizeof of the family's sockaddr */
    socklen_t len;
    char text[INET6_ADDRSTRLEN + 32];
} peer_cache_t;

static _Thread_local peer_cache_t tls_peer;

/* The client's address as "host:port" ("[host]:port" for IPv6), set as the span's peer. Formatted
   by hand (IPv4) or with inet_ntop (IPv6) rather than getnameinfo and snprintf, and only when it
   differs from the last one on this thread: this runs on every request. */
static void peer_set(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *(*info)(struct MHD_Connection *, enum MHD_ConnectionInfoType,
                                            ...);
    REAL(info, "MHD_get_connection_info");
    const union MHD_ConnectionInfo *ci =
        info != NULL ? info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS) : NULL;
    if (ci == NULL || ci->client_addr == NULL) {
        return;
    }
    const struct sockaddr *sa = ci->client_addr;
    socklen_t sa_len = sa->sa_family == AF_INET    ? (socklen_t)sizeof(struct sockaddr_in)
                       : sa->sa_family == AF_INET6 ? (socklen_t)sizeof(struct sockaddr_in6)
                                                   : 0;
    peer_cache_t *cache = &tls_peer;
    if (sa_len != 0 && cache->len == sa_len && memcmp(&cache->addr, sa, sa_len) == 0) {
        sw_span_set_peer(cache->text);
        return;
    }
    /* Room: "[" + 45 + "]:" + 21 (sw__u64_to_dec writes up to 20 digits and a NUL). */
    char peer[INET6_ADDRSTRLEN + 32];
    size_t n = 0;
    uint16_t port;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        n = ipv4_format(&in->sin_addr, peer);
        port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        peer[n++] = '[';
        if (inet_ntop(AF_INET6, &in6->sin6_addr, peer + n, sizeof peer - n) == NULL) {
            return;
        }
        n += strlen(peer + n);
        peer[n++] = ']';
        port = ntohs(in6->sin6_port);
    } else {
        return;
    }
    peer[n++] = ':';
    sw__u64_to_dec(port, peer + n);
    _Static_assert(sizeof peer == sizeof cache->text, "the cache holds a formatted peer");
    memcpy(&cache->addr, sa, sa_len);
    cache->len = sa_len;
    memcpy(cache->text, peer, sizeof peer);
    sw_span_set_peer(peer);
}

/* The method as one of the agent's literals (a tag value that needs no copy), or NULL. */
static const char *method_literal(const char *m)
{
    static const char *const known[] = {"GET",   "POST",    "PUT",     "DELETE", "HEAD",
                                        "PATCH", "OPTIONS", "CONNECT", "TRACE"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        if (m[0] == known[i][0] && strcmp(m, known[i]) == 0) {
            return known[i];
        }
    }
    return NULL;
}

static enum MHD_Result handler_traced(void *cls, struct MHD_Connection *connection, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls)
{
    handler_wrap_t *w = cls;
    if (sw__preload_busy || tls_call != NULL || !sw__preload_agent_ready()) {
        return w->handler(w->handler_cls, connection, url, method, version, upload_data,
                          upload_data_size, con_cls);
    }
    sw__span_mark_t mark;
    /* A later call of a request whose earlier call set its entry span aside (below) goes on
       with that span: *con_cls is what the application set for this request (NULL at the
       first call of every request, so a new request never resumes an older one's span). */
    const void *request = con_cls != NULL ? *con_cls : NULL;
    if (request == NULL || !sw__span_resume_marked(connection, request, &mark)) {
        /* W3C headers are looked up only when they are read. */
        headers_t h = {.w3c = sw__propagation_w3c()};
        headers_read(connection, &h);
        sw__span_begin_entry_marked(url, h.sw8, h.correlation, h.x, h.traceparent, h.tracestate,
                                    &mark);
        sw__preload_pending_apply(&mark, false);
    }
    handler_call_t call = {connection, 0, false};
    tls_call = &call;
    enum MHD_Result r = w->handler(w->handler_cls, connection, url, method, version, upload_data,
                                   upload_data_size, con_cls);
    tls_call = NULL;
    /* A call that queued no response and did nothing traced: the usual first call of a request
       (it only sets *con_cls) or a chunk of an upload. The span is set aside for the request's
       next call on this thread, or removed again. */
    request = con_cls != NULL ? *con_cls : NULL;
    if (!call.queued && ((request != NULL && sw__span_stash_marked(&mark, connection, request)) ||
                         sw__span_discard_marked(&mark))) {
        return r;
    }
    sw__span_set_layer_component(SW_LAYER_HTTP, SW__COMPONENT_HTTP);
    peer_set(connection);
    /* The keys are literals and the url is the operation name already in the arena: only the
       strings that come from libmicrohttpd's buffers are copied. */
    const char *method_kept = method != NULL ? method_literal(method) : NULL;
    if (method_kept != NULL) {
        sw__span_tag_kept_("http.method", 11, method_kept, SIZE_MAX);
    } else {
        sw__span_tag_static("http.method", method);
    }
    uint32_t op_len;
    const char *op = sw__span_operation(&op_len);
    if (op != NULL && url != NULL && strcmp(op, url) == 0) {
        sw__span_tag_kept_("url", 3, op, op_len);
    } else {
        sw__span_tag_static("url", url);
    }
    if (call.queued) {
        sw__preload_status_tag((long)call.status);
        if (call.status >= 400) {
            sw_span_set_error(true);
        }
    }
    sw_span_end();
    return r;
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                   struct MHD_Response *response)
{
    enum MHD_Result (*real)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
    REAL(real, "MHD_queue_response");
    if (real == NULL) {
        return MHD_NO;
    }
    enum MHD_Result r = real(connection, status_code, response);
    handler_call_t *call = tls_call;
    if (call != NULL && call->connection == connection && r == MHD_YES) {
        call->queued = true;
        call->status = status_code;
    }
    return r;
}

typedef struct MHD_Daemon *(*start_va_fn)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                          MHD_AccessHandlerCallback, void *, va_list);

static struct MHD_Daemon *daemon_start(unsigned int flags, uint16_t port,
                                       MHD_AcceptPolicyCallback apc, void *apc_cls,
                                       MHD_AccessHandlerCallback dh, void *dh_cls, va_list ap)
{
    start_va_fn real;
    REAL(real, "MHD_start_daemon_va");
    if (real == NULL) {
        return NULL;
    }
    handler_wrap_t *w = NULL;
    if (dh != NULL && !sw__preload_busy && sw__preload_agent_ready()) {
        w = malloc(sizeof *w);
    }
    if (w == NULL) {
        return real(flags, port, apc, apc_cls, dh, dh_cls, ap);
    }
    w->handler = dh;
    w->handler_cls = dh_cls;
    struct MHD_Daemon *d = real(flags, port, apc, apc_cls, handler_traced, w, ap);
    if (d == NULL) {
        free(w);
        return NULL;
    }
    w->daemon = d;
    sw__plugin_lock(SW__PLUGIN_LOCK_MHD);
    w->next = wraps;
    wraps = w;
    sw__plugin_unlock(SW__PLUGIN_LOCK_MHD);
    return d;
}

struct MHD_Daemon *MHD_start_daemon_va(unsigned int flags, uint16_t port,
                                       MHD_AcceptPolicyCallback apc, void *apc_cls,
                                       MHD_AccessHandlerCallback dh, void *dh_cls, va_list ap)
{
    return daemon_start(flags, port, apc, apc_cls, dh, dh_cls, ap);
}

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
                                    void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
    va_list ap;
    va_start(ap, dh_cls);
    struct MHD_Daemon *d = daemon_start(flags, port, apc, apc_cls, dh, dh_cls, ap);
    va_end(ap);
    return d;
}

void MHD_stop_daemon(struct MHD_Daemon *daemon)
{
    void (*real)(struct MHD_Daemon *);
    REAL(real, "MHD_stop_daemon");
    if (real != NULL) {
        real(daemon); /* its threads are gone when it returns: the wrapper is unused */
    }
    handler_wrap_t *found = NULL;
    sw__plugin_lock(SW__PLUGIN_LOCK_MHD);
    for (handler_wrap_t **pp = &wraps; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->daemon == daemon) {
            found = *pp;
            *pp = found->next;
            break;
        }
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_MHD);
    free(found);
}
