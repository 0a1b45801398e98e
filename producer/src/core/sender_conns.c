/*
 * sender_conns.c - the sender's connection table: p->conns sorted by node id (bootstrap
 * addresses first, with negative ids in the order they were listed), p->drain aligned with it
 * index by index; lookup by binary search, a connection made on first use from the metadata,
 * connections of brokers gone from the metadata dropped once closed and idle, and at most
 * KP_MAX_CONNECTIONS sockets open at once. A broker's answer can name up to
 * KP_METADATA_MAX_BROKERS brokers and name new ones on every refresh: neither the table nor
 * the sockets grow with what it says. Closing a connection (kp__sender_disconnect, which
 * fails what was in flight on it through the requests' handlers, and kp__sender_close_idle)
 * is here too, below the I/O (sender_io.c) and the epoll set (sender_epoll.c) that call it.
 * Sender thread only.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "core/producer_impl.h"
#include "core/tls.h"

/* The index of node_id in p->conns, or -1 - (where it would be inserted). */
static int conn_search(const kp_producer_t *p, int32_t node_id)
{
    int lo = 0, hi = p->n_conns;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int32_t id = p->conns[mid]->node_id;
        if (id == node_id) {
            return mid;
        }
        if (id < node_id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return -1 - lo;
}

int kp__sender_conn_index(const kp_producer_t *p, int32_t node_id)
{
    int i = conn_search(p, node_id);
    return i >= 0 ? i : -1;
}

kp__conn_t *kp__sender_conn(kp_producer_t *p, int32_t node_id)
{
    int at = conn_search(p, node_id);
    if (at >= 0) {
        return p->conns[at];
    }
    at = -1 - at;
    const kp__node_t *n = node_id >= 0 ? kp__metadata_node(&p->md, node_id) : NULL;
    if (!n) {
        return NULL;
    }
    kp__conn_t **v = realloc(p->conns, (size_t)(p->n_conns + 1) * sizeof(*v));
    if (!v) {
        return NULL;
    }
    p->conns = v;
    kp__drain_list_t *d = realloc(p->drain, (size_t)(p->n_conns + 1) * sizeof(*d));
    if (!d) {
        return NULL;
    }
    p->drain = d;
    kp__conn_t *c = calloc(1, sizeof(*c));
    if (!c) {
        return NULL;
    }
    c->node_id = node_id;
    c->fd = -1;
    memcpy(c->host, n->host, sizeof(c->host));
    c->port = n->port;
    size_t tail = (size_t)(p->n_conns - at);
    memmove(&p->conns[at + 1], &p->conns[at], tail * sizeof(*v));
    memmove(&p->drain[at + 1], &p->drain[at], tail * sizeof(*d));
    memset(&p->drain[at], 0, sizeof(*d));
    p->conns[at] = c;
    p->n_conns++;
    return c;
}

/* A connection that may be closed without losing anything: ready, nothing queued or
 * drained for it. */
static bool conn_idle(const kp_producer_t *p, int i)
{
    const kp__conn_t *c = p->conns[i];
    return c->fd >= 0 && c->state == KP__CONN_READY && c->in_flight.head == NULL &&
           p->drain[i].n == 0;
}

bool kp__sender_conn_room(kp_producer_t *p, int64_t now)
{
    int open = 0, victim = -1;
    for (int i = 0; i < p->n_conns; i++) {
        if (p->conns[i]->fd < 0) {
            continue;
        }
        open++;
        if (conn_idle(p, i) &&
            (victim < 0 || p->conns[i]->last_activity_ms < p->conns[victim]->last_activity_ms)) {
            victim = i;
        }
    }
    if (open < KP_MAX_CONNECTIONS) {
        return true;
    }
    if (victim < 0) {
        return false; /* every open connection is busy: wait for one to become idle */
    }
    kp__sender_close_idle(p, p->conns[victim], now);
    return true;
}

void kp__sender_conns_prune(kp_producer_t *p)
{
    int k = 0;
    for (int i = 0; i < p->n_conns; i++) {
        kp__conn_t *c = p->conns[i];
        if (c->node_id >= 0 && c->fd < 0 && c->in_flight.head == NULL && p->drain[i].n == 0 &&
            !kp__metadata_node(&p->md, c->node_id)) {
            free(c->frame);
            free(p->drain[i].v);
            free(c);
            continue;
        }
        p->conns[k] = c;
        p->drain[k] = p->drain[i];
        k++;
    }
    p->n_conns = k;
}

/* Fails (retries) everything queued on c. */
static void fail_requests(kp_producer_t *p, kp__conn_t *c, int64_t now)
{
    kp__request_t *r;
    while ((r = kp__in_flight_pop(&c->in_flight))) {
        kp__sender_handler(p, r->api_key)->failed(p, r, now);
        kp__request_free(r);
    }
}

void kp__sender_disconnect(kp_producer_t *p, kp__conn_t *c, int64_t now)
{
    if (c->fd >= 0) {
        epoll_ctl(p->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    }
    kp__conn_close(c, now, p->conf.reconnect_backoff_ms, p->conf.reconnect_backoff_max_ms);
    fail_requests(p, c, now);
    kp__metadata_request_update(&p->md); /* a disconnect forces a refresh */
}

void kp__sender_close_idle(kp_producer_t *p, kp__conn_t *c, int64_t now)
{
    if (c->fd >= 0) {
        epoll_ctl(p->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    }
    kp__conn_close(c, now, p->conf.reconnect_backoff_ms, p->conf.reconnect_backoff_max_ms);
    c->failures = 0; /* closed as idle, not failed: may connect again at once */
    c->next_connect_ms = now;
}
