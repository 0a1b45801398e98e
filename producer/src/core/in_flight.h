/*
 * in_flight.h - InFlightRequests of one connection: the FIFO of requests queued for or written
 * to a broker and not yet answered, at most max.in.flight.requests.per.connection of them.
 *
 * Kafka answers the requests of one connection in order, so a response always belongs to the
 * oldest request that expects one. Owned and used by the sender thread only: no locking.
 */
#ifndef KP_CORE_IN_FLIGHT_H
#define KP_CORE_IN_FLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kp__batch;

typedef struct kp__request {
    struct kp__request *next;
    int32_t correlation_id;
    int16_t api_key;
    int16_t version;
    bool expect_response; /* false for Produce with acks=0 */
    int64_t created_ms;   /* when it was queued; request.timeout.ms counts from here */
    uint8_t *buf;         /* framed request bytes (heap), freed once written */
    size_t len;
    bool secret; /* buf holds a credential (SaslAuthenticate): cleansed before it is freed */
    size_t off;  /* bytes already written */
    struct kp__batch **batches; /* Produce: the batches it carries (heap array) */
    int n_batches;
} kp__request_t;

typedef struct kp__in_flight {
    kp__request_t *head; /* oldest */
    kp__request_t *tail;
    kp__request_t *unsent; /* first request not completely written, or NULL */
    int count;
} kp__in_flight_t;

/* Appends a request (ownership passes to the queue). */
void kp__in_flight_push(kp__in_flight_t *q, kp__request_t *r);
/* Removes and returns the oldest request, or NULL. */
kp__request_t *kp__in_flight_pop(kp__in_flight_t *q);
/* Removes a specific request (acks=0 Produce once written). */
void kp__in_flight_remove(kp__in_flight_t *q, kp__request_t *r);
/* Frees a request's buffers (not its batches). */
/* Frees r->buf (cleansed first when r->secret) and sets it NULL. */
void kp__request_buf_free(kp__request_t *r);
void kp__request_free(kp__request_t *r);

#endif /* KP_CORE_IN_FLIGHT_H */
