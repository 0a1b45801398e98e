/*
 * in_flight.c - the per-connection FIFO of requests (see in_flight.h).
 */
#include "core/in_flight.h"

#include <openssl/crypto.h>
#include <stdlib.h>

void kp__in_flight_push(kp__in_flight_t *q, kp__request_t *r)
{
    r->next = NULL;
    if (q->tail) {
        q->tail->next = r;
    } else {
        q->head = r;
    }
    q->tail = r;
    if (!q->unsent) {
        q->unsent = r;
    }
    q->count++;
}

kp__request_t *kp__in_flight_pop(kp__in_flight_t *q)
{
    kp__request_t *r = q->head;
    if (!r) {
        return NULL;
    }
    kp__in_flight_remove(q, r);
    return r;
}

void kp__in_flight_remove(kp__in_flight_t *q, kp__request_t *r)
{
    kp__request_t *prev = NULL;
    for (kp__request_t *it = q->head; it && it != r; it = it->next) {
        prev = it;
    }
    if (prev) {
        prev->next = r->next;
    } else {
        q->head = r->next;
    }
    if (q->tail == r) {
        q->tail = prev;
    }
    if (q->unsent == r) {
        q->unsent = r->next;
    }
    r->next = NULL;
    q->count--;
}

void kp__request_buf_free(kp__request_t *r)
{
    if (r->buf && r->secret) {
        OPENSSL_cleanse(r->buf, r->len);
    }
    free(r->buf);
    r->buf = NULL;
}

void kp__request_free(kp__request_t *r)
{
    if (!r) {
        return;
    }
    kp__request_buf_free(r);
    free(r->batches);
    free(r);
}
