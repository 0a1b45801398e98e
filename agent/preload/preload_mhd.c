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
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../src/core/ids.h"
#include "../src/core/propagate.h"
#include "preload.h"

typedef struct handler_wrap {
    struct handler_wrap *next;
    struct MHD_Daemon *daemon;
    MHD_AccessHandlerCallback handler;
    void *handler_cls;
} handler_wrap_t;

/* The wrappers of running daemons, freed by MHD_stop_daemon; global because libmicrohttpd
   offers no per-daemon slot for it. wraps_lock protects the list. */
static pthread_mutex_t wraps_lock = PTHREAD_MUTEX_INITIALIZER;
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

/* The client's address as "host:port" ("[host]:port" for IPv6), set as the span's peer. Formatted
   by hand (IPv4) or with inet_ntop (IPv6) rather than getnameinfo and snprintf: this runs on
   every request. */
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
    sw_span_set_peer(peer);
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
    bool w3c = sw__propagation_w3c(); /* W3C headers are looked up only when they are read */
    sw__span_begin_entry_marked(
        url, header_get(connection, "sw8"), header_get(connection, "sw8-correlation"),
        header_get(connection, "sw8-x"), w3c ? header_get(connection, "traceparent") : NULL,
        w3c ? header_get(connection, "tracestate") : NULL, &mark);
    sw__preload_pending_apply(&mark, false);
    handler_call_t call = {connection, 0, false};
    tls_call = &call;
    enum MHD_Result r = w->handler(w->handler_cls, connection, url, method, version, upload_data,
                                   upload_data_size, con_cls);
    tls_call = NULL;
    if (!call.queued && sw__span_discard_marked(&mark)) {
        return r;
    }
    sw_span_set_layer(SW_LAYER_HTTP);
    sw_span_set_component(SW__COMPONENT_HTTP);
    peer_set(connection);
    sw_span_tag("http.method", method);
    sw_span_tag("url", url);
    if (call.queued) {
        char digits[24];
        sw__u64_to_dec(call.status, digits);
        sw_span_tag("http.status_code", digits);
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
    pthread_mutex_lock(&wraps_lock);
    w->next = wraps;
    wraps = w;
    pthread_mutex_unlock(&wraps_lock);
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
    pthread_mutex_lock(&wraps_lock);
    for (handler_wrap_t **pp = &wraps; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->daemon == daemon) {
            found = *pp;
            *pp = found->next;
            break;
        }
    }
    pthread_mutex_unlock(&wraps_lock);
    free(found);
}
