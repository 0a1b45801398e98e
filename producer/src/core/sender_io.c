/*
 * sender_io.c - the Selector of the sender thread: epoll over one connection per broker,
 * the wakeup eventfd, request framing, and response dispatch through each request kind's
 * handler (kp__request_handler_t: sender_control.c, sender_produce.c), request timeouts and
 * idle connections. Sender thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "swc_clock.h"
#include "core/producer_impl.h"
#include "core/sasl.h"
#include "core/tls.h"
#include "wire/protocol.h"

static void epoll_update(kp_producer_t *p, kp__conn_t *c, bool add)
{
    struct epoll_event ev = {.events = EPOLLIN | (c->want_write ? EPOLLOUT : 0),
                             .data.u64 = kp__epoll_key_conn(c->node_id)};
    epoll_ctl(p->epfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c->fd, &ev);
}

static void set_want_write(kp_producer_t *p, kp__conn_t *c, bool want)
{
    if (c->fd < 0 || c->want_write == want) {
        return;
    }
    c->want_write = want;
    epoll_update(p, c, false);
}

static int16_t our_max(int16_t api)
{
    int16_t lo = 0, hi = 0;
    kp__api_supported_range(api, &lo, &hi);
    return hi;
}

static void send_api_versions(kp_producer_t *p, kp__conn_t *c, int64_t now)
{
    kp_writer_t w;
    if (kp__writer_init_growable(&w, 64) != 0 ||
        kp__api_versions_request_write(&w, c->api_versions_version, NULL, NULL) != 0 ||
        kp__sender_send(p, c, KP_API_API_VERSIONS, c->api_versions_version, &w, true, NULL, 0,
                        now) != 0) {
        kp__sender_disconnect(p, c, now);
    }
    kp__writer_free(&w);
}

void kp__sender_maybe_connect(kp_producer_t *p, kp__conn_t *c, int64_t now)
{
    if (c->state != KP__CONN_DISCONNECTED || now < c->next_connect_ms) {
        return;
    }
    if (!kp__sender_conn_room(p, now)) {
        return; /* KP_MAX_CONNECTIONS open and none idle: a later pass tries again */
    }
    if (kp__conn_connect(c, now, p->conf.reconnect_backoff_ms, p->conf.reconnect_backoff_max_ms) !=
        0) {
        return;
    }
    c->want_write = true; /* writable = connected */
    c->api_versions_version = our_max(KP_API_API_VERSIONS);
    epoll_update(p, c, true);
}

static void on_written(kp__conn_t *c, kp__request_t *r, void *arg)
{
    (void)c;
    if (!r->expect_response) {
        kp_producer_t *p = arg;
        kp__in_flight_remove(&c->in_flight, r);
        const kp__request_handler_t *h = kp__sender_handler(p, r->api_key);
        if (h->written != NULL) {
            h->written(p, r);
        }
        kp__request_free(r);
    }
}

static void flush_writes(kp_producer_t *p, kp__conn_t *c, int64_t now)
{
    long n = kp__conn_write(c, on_written, p);
    if (n < 0) {
        kp__sender_disconnect(p, c, now);
        return;
    }
    if (n > 0) {
        c->last_activity_ms = now;
        atomic_fetch_add_explicit(&p->st_bytes, (unsigned long long)n, memory_order_relaxed);
    }
    set_want_write(p, c, kp__conn_has_unsent(c));
}

int kp__sender_send(kp_producer_t *p, kp__conn_t *c, int16_t api, int16_t version,
                    kp_writer_t *body, bool expect_response, kp__batch_t **batches, int n,
                    int64_t now)
{
    kp_writer_t w;
    int rc = kp__writer_init_growable(&w, body->len + 64 + strlen(p->conf.client_id));
    size_t start = 0;
    int32_t corr = p->next_correlation++;
    if (p->next_correlation < 0) {
        p->next_correlation = 0;
    }
    if (rc == 0) {
        rc = kp__request_begin(&w, api, version, corr, p->conf.client_id, &start);
    }
    if (rc == 0) {
        kp__write_raw(&w, body->buf, body->len);
        rc = kp__request_end(&w, start);
    }
    kp__request_t *r = rc == 0 ? calloc(1, sizeof(*r)) : NULL;
    if (!r) {
        kp__writer_free(&w);
        return rc ? rc : KP_ENOMEM;
    }
    r->correlation_id = corr;
    r->api_key = api;
    r->version = version;
    r->expect_response = expect_response;
    r->created_ms = now;
    r->secret = api == KP_API_SASL_AUTHENTICATE; /* PLAIN's password, SCRAM's proof */
    r->buf = kp__writer_detach(&w, &r->len);
    r->batches = batches;
    r->n_batches = n;
    kp__in_flight_push(&c->in_flight, r);
    flush_writes(p, c, now);
    return 0;
}

static int on_frame(kp__conn_t *c, uint8_t *frame, size_t len, void *arg)
{
    kp_producer_t *p = arg;
    int64_t now = swc__monotonic_ms();
    kp_reader_t rd;
    kp__reader_init(&rd, frame, len);
    kp__request_t *r = kp__conn_response_request(c, &rd);
    if (!r) {
        return KP_EMALFORMED; /* a response to nothing, or with a wrong correlation id */
    }
    kp__in_flight_pop(&c->in_flight);
    c->last_activity_ms = now;
    int rc = kp__sender_handler(p, r->api_key)->response(p, c, r, &rd, now);
    kp__request_free(r);
    return rc;
}

/* A TLS failure: recorded for kp_last_error, the metadata waiters (kp_send) fail at once
 * (the Java client's SslAuthenticationException), and the connection closes with backoff. */
static void tls_failed(kp_producer_t *p, kp__conn_t *c, int code, const char *msg, int64_t now)
{
    kp__sender_set_error(p, code, msg);
    kp__metadata_fail_waiters(&p->md, code);
    kp__sender_disconnect(p, c, now);
}

/* Drives the TLS handshake (tls.c) in the epoll loop; on completion the ApiVersions one
 * starts. */
static void tls_step(kp_producer_t *p, kp__conn_t *c, int64_t now)
{
    bool want_write = false;
    char err[400];
    int rc = kp__tls_handshake(c, &want_write, err, sizeof err);
    if (rc == 0) {
        set_want_write(p, c, want_write);
        return;
    }
    if (rc < 0) {
        tls_failed(p, c, rc, err, now);
        return;
    }
    c->state = KP__CONN_HANDSHAKE;
    c->last_activity_ms = now;
    set_want_write(p, c, false);
    send_api_versions(p, c, now);
}

static void handle_event(kp_producer_t *p, kp__conn_t *c, uint32_t events, int64_t now)
{
    if (c->fd < 0) {
        return; /* closed earlier in this batch of events */
    }
    if (c->state == KP__CONN_CONNECTING) {
        if (kp__conn_finish_connect(c) != 0 || (events & (EPOLLERR | EPOLLHUP))) {
            kp__sender_disconnect(p, c, now);
            return;
        }
        c->last_activity_ms = now;
        if (p->tls_ctx) {
            if (kp__tls_start(c, p->tls_ctx, p->conf.ssl_verify_hostname) != 0) {
                kp__sender_disconnect(p, c, now);
                return;
            }
            c->state = KP__CONN_TLS_HANDSHAKE;
            tls_step(p, c, now);
            return;
        }
        c->state = KP__CONN_HANDSHAKE;
        set_want_write(p, c, false);
        send_api_versions(p, c, now);
        return;
    }
    if (c->state == KP__CONN_TLS_HANDSHAKE) {
        tls_step(p, c, now);
        return;
    }
    if (events & EPOLLIN) {
        long rc = kp__conn_read(c, on_frame, p);
        if (rc == KP_ELIMIT && c->fd >= 0 && c->size_got == 4) { /* the size prefix */
            char msg[512];
            snprintf(msg, sizeof msg,
                     "broker %.256s:%d announced an answer of %zu bytes; at most %zu are "
                     "accepted for it (kproducer.h, KP_MAX_*_FRAME)",
                     c->host, (int)c->port, c->frame_len, kp__conn_frame_limit(c));
            kp__sender_limit_error(p, msg);
        }
        if (rc < 0) {
            if (c->fd >= 0 && c->tls_error[0] != '\0' && c->state == KP__CONN_HANDSHAKE) {
                char msg[512];
                snprintf(msg, sizeof msg,
                         "TLS connection to broker %.256s:%d refused after the "
                         "handshake: %s",
                         c->host, (int)c->port, c->tls_error);
                tls_failed(p, c, KP_ETLS, msg, now);
                return;
            }
            kp__sender_disconnect(p, c, now);
            return;
        }
    } else if (events & (EPOLLERR | EPOLLHUP)) {
        kp__sender_disconnect(p, c, now);
        return;
    }
    if (c->fd >= 0 && (events & EPOLLOUT)) {
        flush_writes(p, c, now);
    }
}

/* request.timeout.ms per request, and connections.max.idle.ms. */
static void check_timeouts(kp_producer_t *p, int64_t now)
{
    for (int i = 0; i < p->n_conns; i++) {
        kp__conn_t *c = p->conns[i];
        if (c->fd < 0) {
            continue;
        }
        kp__request_t *r = c->in_flight.head;
        if (r && now - r->created_ms >= p->conf.request_timeout_ms) {
            kp__sender_disconnect(p, c, now);
        } else if ((c->state == KP__CONN_CONNECTING || c->state == KP__CONN_TLS_HANDSHAKE) &&
                   now - c->last_activity_ms >= p->conf.request_timeout_ms) {
            kp__sender_disconnect(p, c, now);
        } else if (!r && c->state == KP__CONN_READY && p->conf.connections_max_idle_ms >= 0 &&
                   now - c->last_activity_ms >= p->conf.connections_max_idle_ms) {
            kp__sender_disconnect(p, c, now);
            c->failures = 0;
            c->next_connect_ms = now;
        } else {
            kp__sasl_maybe_reauth(p, c, now);
        }
    }
}

void kp__sender_poll(kp_producer_t *p, int64_t timeout_ms)
{
    struct epoll_event ev[64];
    if (timeout_ms > 1000) {
        timeout_ms = 1000;
    }
    int n = epoll_wait(p->epfd, ev, 64, (int)timeout_ms);
    int64_t now = swc__monotonic_ms();
    if (n < 0) {
        if (errno == EBADF || errno == EINVAL) {
            kp__sender_epoll_recover(p, now, timeout_ms); /* the program closed it */
        }
        n = 0; /* EINTR: nothing happened */
    }
    for (int i = 0; i < n; i++) {
        uint64_t key = ev[i].data.u64;
        if (key != KP__EPOLL_KEY_WAKE &&
            (key & UINT64_C(0xffffffff00000000)) != KP__EPOLL_TAG_CONN) {
            /* Not from our set: the number names the program's own epoll set now. */
            kp__sender_epoll_recover(p, now, 0);
            break;
        }
        if (key == KP__EPOLL_KEY_WAKE) {
            /* Release: a kp_send that sets wake_pending after this store writes the eventfd
             * again (partner: the exchange in kp__producer_wake). */
            atomic_store_explicit(&p->wake_pending, false, memory_order_release);
            uint64_t v;
            int wakefd = atomic_load_explicit(&p->wakefd, memory_order_relaxed); /* ours */
            while (read(wakefd, &v, sizeof(v)) < 0 && errno == EINTR)
                ;
            continue;
        }
        int at = kp__sender_conn_index(p, (int32_t)(uint32_t)key); /* gone since: -1 */
        if (at >= 0 && p->conns[at]->fd >= 0) {
            handle_event(p, p->conns[at], ev[i].events, now);
        }
    }
    check_timeouts(p, now);
}
