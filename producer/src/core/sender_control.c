/*
 * sender_control.c - the sender's control requests: the ApiVersions handshake with per-API
 * version negotiation, Metadata refreshes to the least-loaded node (Java:
 * NetworkClient.maybeUpdate), and InitProducerId for idempotence; SASL connections go on to
 * sasl.c after ApiVersions. Sender thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swc_clock.h"
#include "core/producer_impl.h"
#include "core/sasl.h"
#include "wire/kafka_error.h"
#include "wire/protocol.h"

/* leastLoadedNode: the ready connection with the fewest requests in flight; else one being
 * set up (connecting, handshakes, authentication); else one that may connect now: known
 * brokers first, then the bootstrap addresses in the order listed. A connection is made for
 * one broker per call at most, not for every broker the metadata names. */
static kp__conn_t *least_loaded(kp_producer_t *p, int64_t now)
{
    kp__conn_t *best = NULL;
    for (int i = 0; i < p->n_conns; i++) {
        kp__conn_t *c = p->conns[i];
        if (c->state == KP__CONN_READY && (!best || c->in_flight.count < best->in_flight.count)) {
            best = c;
        }
    }
    if (best) {
        return best;
    }
    for (int i = 0; i < p->n_conns; i++) {
        kp__conn_t *c = p->conns[i];
        if (c->state != KP__CONN_DISCONNECTED && c->state != KP__CONN_READY) {
            return c; /* wait for it (connecting, handshakes, authentication) */
        }
    }
    for (int i = 0; i < p->md.n_nodes; i++) { /* md.nodes: written by this thread only */
        int k = kp__sender_conn_index(p, p->md.nodes[i].id);
        if (k < 0) {
            return kp__sender_conn(p, p->md.nodes[i].id); /* never tried: may connect now */
        }
        if (now >= p->conns[k]->next_connect_ms) {
            return p->conns[k];
        }
    }
    for (int i = 0; i < p->n_bootstrap; i++) { /* ids -n..-1: the first n entries */
        if (now >= p->conns[i]->next_connect_ms) {
            return p->conns[i];
        }
    }
    return NULL;
}

/* The connection for a control request (Metadata, InitProducerId): the least loaded node when
   it is ready and has room in flight; NULL otherwise (a disconnected one is connected first). */
static kp__conn_t *control_conn(kp_producer_t *p, int64_t now)
{
    kp__conn_t *c = least_loaded(p, now);
    if (!c) {
        return NULL;
    }
    if (c->state == KP__CONN_DISCONNECTED) {
        kp__sender_maybe_connect(p, c, now);
        return NULL;
    }
    if (c->state != KP__CONN_READY || c->in_flight.count >= p->conf.max_in_flight) {
        return NULL;
    }
    return c;
}

void kp__sender_maybe_update_metadata(kp_producer_t *p, int64_t now)
{
    if (p->metadata_in_flight || kp__metadata_time_to_update(&p->md, now) > 0) {
        return;
    }
    kp__conn_t *c = control_conn(p, now);
    if (!c) {
        return;
    }
    char **names = NULL;
    int n = 0;
    if (kp__metadata_topic_names(&p->md, &names, &n) != 0) {
        return;
    }
    kp_metadata_request_t req = {.topics = (const char *const *)names,
                                 .n_topics = (size_t)n,
                                 .all_topics = false,
                                 .allow_auto_topic_creation = true};
    kp_writer_t w;
    if (kp__writer_init_growable(&w, 256) == 0 &&
        kp__metadata_request_write(&w, c->metadata_version, &req) == 0 &&
        kp__sender_send(p, c, KP_API_METADATA, c->metadata_version, &w, true, NULL, 0, now) == 0) {
        p->metadata_in_flight = true;
    } else {
        kp__metadata_failed(&p->md, now);
    }
    kp__writer_free(&w);
    kp__metadata_names_free(names, n);
}

void kp__sender_maybe_init_pid(kp_producer_t *p, int64_t now)
{
    if (!p->need_pid || p->pid_in_flight || p->produce_in_flight > 0) {
        return;
    }
    kp__conn_t *c = control_conn(p, now);
    if (!c) {
        return;
    }
    kp_init_producer_id_request_t req = {.transactional_id = NULL,
                                         .transaction_timeout_ms = INT32_MAX,
                                         .producer_id = -1,
                                         .producer_epoch = -1};
    kp_writer_t w;
    if (kp__writer_init_growable(&w, 64) == 0 &&
        kp__init_producer_id_request_write(&w, c->init_pid_version, &req) == 0 &&
        kp__sender_send(p, c, KP_API_INIT_PRODUCER_ID, c->init_pid_version, &w, true, NULL, 0,
                        now) == 0) {
        p->pid_in_flight = true;
    }
    kp__writer_free(&w);
}

/* Resends ApiVersions at a version the broker named, or picks every API's version. */
static int handle_api_versions(kp_producer_t *p, kp__conn_t *c, kp_reader_t *body, int16_t version,
                               int64_t now)
{
    kp_api_versions_response_t resp;
    memset(&resp, 0, sizeof(resp));
    int rc = kp__api_versions_response_read(body, version, &resp);
    if (rc == 0 && resp.error_code == KP_KAFKA_ERR_UNSUPPORTED_VERSION) {
        int16_t v = 0;
        rc = kp__api_version_pick(resp.apis, resp.n_apis, KP_API_API_VERSIONS, &v);
        kp__api_versions_response_free(&resp);
        if (rc != 0 || v == version) {
            return KP_EUNSUPPORTED_VERSION;
        }
        c->api_versions_version = v;
        kp_writer_t w;
        rc = kp__writer_init_growable(&w, 64);
        if (rc == 0) {
            rc = kp__api_versions_request_write(&w, v, NULL, NULL);
        }
        if (rc == 0) {
            rc = kp__sender_send(p, c, KP_API_API_VERSIONS, v, &w, true, NULL, 0, now);
        }
        kp__writer_free(&w);
        return rc;
    }
    if (rc == 0 && resp.error_code == 0 &&
        kp__api_version_pick(resp.apis, resp.n_apis, KP_API_PRODUCE, &c->produce_version) == 0 &&
        kp__api_version_pick(resp.apis, resp.n_apis, KP_API_METADATA, &c->metadata_version) == 0) {
        if (kp__api_version_pick(resp.apis, resp.n_apis, KP_API_INIT_PRODUCER_ID,
                                 &c->init_pid_version) != 0) {
            c->init_pid_version = -1;
        }
        if (kp__conf_sasl(&p->conf)) {
            rc = kp__sasl_begin(p, c, resp.apis, resp.n_apis, now);
            kp__api_versions_response_free(&resp);
            return rc; /* READY (and failures reset) once authenticated */
        }
        c->state = KP__CONN_READY;
        c->failures = 0;
        kp__sender_set_error(p, 0, NULL);
        kp__api_versions_response_free(&resp);
        return 0;
    }
    /* Undecodable (the read's code), a broker error, or no common Produce/Metadata version. */
    rc = rc != 0 ? rc : resp.error_code != 0 ? KP_EBROKER : KP_EUNSUPPORTED_VERSION;
    kp__api_versions_response_free(&resp);
    return rc;
}

/* Returns a KP_E* code (close the connection) for a response that cannot be decoded or is not
 * a possible answer (kp__metadata_update refused it). One beyond kproducer.h's limits is
 * reported (kp_last_error) and fails the waiters of unknown topics (KP_ELIMIT). */
static int handle_metadata(kp_producer_t *p, kp__conn_t *c, kp_reader_t *body, int16_t version,
                           int64_t now)
{
    kp_metadata_response_t resp;
    memset(&resp, 0, sizeof(resp));
    p->metadata_in_flight = false;
    int rc = kp__metadata_response_read(body, version, &resp);
    if (rc == 0 && kp__reader_remaining(body) != 0) {
        rc = KP_EMALFORMED; /* bytes left over: not the response it claims to be */
    }
    if (rc == 0) {
        rc = kp__metadata_update(&p->md, &resp, now);
    }
    if (rc == KP_ELIMIT) {
        char msg[512];
        snprintf(msg, sizeof msg,
                 "Metadata answer of broker %.256s:%d refused: %zu %s, more than the %zu this "
                 "library accepts (kproducer.h, KP_METADATA_MAX_*)",
                 c->host, (int)c->port, resp.over_count, resp.over_what, resp.over_limit);
        kp__sender_limit_error(p, msg);
    } else if (rc == 0) {
        kp__sender_clear_limit_error(p);
    }
    if (rc != 0) {
        kp__metadata_failed(&p->md, now);
    }
    kp__metadata_response_free(&resp);
    return rc;
}

/* Returns the decoder's KP_E* code (close the connection) for a response that cannot be
 * decoded. */
static int handle_init_pid(kp_producer_t *p, kp_reader_t *body, int16_t version)
{
    kp_init_producer_id_response_t resp;
    memset(&resp, 0, sizeof(resp));
    p->pid_in_flight = false;
    int rc = kp__init_producer_id_response_read(body, version, &resp);
    if (rc != 0) {
        return rc;
    }
    if (resp.error_code != 0 || resp.producer_id < 0) {
        return 0; /* retried on the next loop */
    }
    p->producer_id = resp.producer_id;
    p->producer_epoch = resp.producer_epoch;
    p->need_pid = false;
    /* A new producer id starts every partition's sequence at 0. The topic table may grow
     * under application threads: read it under the accumulator lock. */
    pthread_mutex_lock(&p->acc.lock);
    for (int i = 0; i < p->acc.n_topics; i++) {
        kp__topic_acc_t *t = p->acc.topics[i];
        for (int32_t k = 0; k < t->n_partitions; k++) {
            t->parts[k]->next_sequence = 0;
            t->parts[k]->acked_under_pid = false;
        }
    }
    pthread_mutex_unlock(&p->acc.lock);
    return 0;
}

int kp__sender_handle_control(kp_producer_t *p, kp__conn_t *c, kp__request_t *r, kp_reader_t *body,
                              int64_t now)
{
    switch (r->api_key) {
    case KP_API_API_VERSIONS:
        return handle_api_versions(p, c, body, r->version, now);
    case KP_API_METADATA:
        return handle_metadata(p, c, body, r->version, now);
    case KP_API_INIT_PRODUCER_ID:
        return handle_init_pid(p, body, r->version);
    case KP_API_SASL_HANDSHAKE:
    case KP_API_SASL_AUTHENTICATE:
        return kp__sasl_handle(p, c, r, body, now);
    default:
        return KP_EMALFORMED; /* a response to a request this sender never sends */
    }
}

/* A control request lost with its connection: its answer will not come. */
static void control_failed(kp_producer_t *p, kp__request_t *r, int64_t now)
{
    if (r->api_key == KP_API_METADATA) {
        p->metadata_in_flight = false;
        kp__metadata_failed(&p->md, now);
    } else if (r->api_key == KP_API_INIT_PRODUCER_ID) {
        p->pid_in_flight = false;
    }
}

const kp__request_handler_t kp__sender_control_handler = {
    .response = kp__sender_handle_control,
    .written = NULL,
    .failed = control_failed,
};
