/*
 * sasl.c - SASL PLAIN / SCRAM over SaslHandshake + SaslAuthenticate, and KIP-368
 * re-authentication (see sasl.h).
 */
#include "core/sasl.h"

#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf.h"
#include "wire/kafka_error.h"

/* ---- the exchange -------------------------------------------------------------------- */

/* Records a failed authentication of c, for kp_last_error and the metadata waiters. */
static int auth_failed(kp_producer_t *p, kp__conn_t *c, const char *why, const char *detail,
                       size_t detail_len)
{
    char clean[200];
    size_t n = 0;
    for (size_t i = 0; detail && i < detail_len && n + 1 < sizeof clean; i++) {
        char ch = detail[i];
        clean[n++] = (ch >= 0x20 && ch < 0x7f) ? ch : '?';
    }
    clean[n] = '\0';
    char msg[512];
    snprintf(msg, sizeof msg, "SASL %s authentication at broker %s:%d failed: %s%s%s",
             kp__conf_mechanism_name(p->conf.sasl_mechanism), c->host, (int)c->port, why,
             n ? ": " : "", clean);
    kp__sender_set_error(p, KP_EAUTH, msg);
    kp__metadata_fail_waiters(&p->md, KP_EAUTH);
    return KP_EAUTH;
}

static int send_handshake(kp_producer_t *p, kp__conn_t *c, int64_t now)
{
    kp_writer_t w;
    int rc = kp__writer_init_growable(&w, 32);
    if (rc == 0) {
        rc = kp__sasl_handshake_request_write(&w, 1,
                                              kp__conf_mechanism_name(p->conf.sasl_mechanism));
    }
    if (rc == 0) {
        rc = kp__sender_send(p, c, KP_API_SASL_HANDSHAKE, 1, &w, true, NULL, 0, now);
    }
    kp__writer_free(&w);
    c->sasl_step = 1;
    return rc; /* 0, or the writer's or kp__sender_send's code */
}

static int send_authenticate(kp_producer_t *p, kp__conn_t *c, const void *auth, size_t len,
                             int64_t now)
{
    kp_writer_t w;
    int rc = kp__writer_init_growable(&w, len + 16); /* room enough: never reallocated */
    if (rc == 0) {
        rc = kp__sasl_authenticate_request_write(&w, c->sasl_authenticate_version, auth, len);
    }
    if (rc == 0) {
        rc = kp__sender_send(p, c, KP_API_SASL_AUTHENTICATE, c->sasl_authenticate_version, &w, true,
                             NULL, 0, now);
    }
    if (w.buf) {
        OPENSSL_cleanse(w.buf, w.cap); /* PLAIN's password, SCRAM's proof */
    }
    kp__writer_free(&w);
    c->sasl_step++;
    return rc; /* 0, or the writer's or kp__sender_send's code */
}

int kp__sasl_begin(kp_producer_t *p, kp__conn_t *c, const kp_api_version_range_t *apis,
                   size_t n_apis, int64_t now)
{
    int16_t v = 0;
    if (kp__api_version_pick(apis, n_apis, KP_API_SASL_HANDSHAKE, &v) != 0 ||
        kp__api_version_pick(apis, n_apis, KP_API_SASL_AUTHENTICATE,
                             &c->sasl_authenticate_version) != 0) {
        return auth_failed(p, c, "the broker offers no SaslHandshake v1 / SaslAuthenticate v1+",
                           NULL, 0);
    }
    c->state = KP__CONN_AUTHENTICATING;
    return send_handshake(p, c, now);
}

/* The first SaslAuthenticate of the mechanism: PLAIN's whole message, SCRAM's client-first. */
static int first_message(kp_producer_t *p, kp__conn_t *c, int64_t now)
{
    char buf[1024]; /* PLAIN: 2 + 255 + 255; SCRAM: a user name of 255 escaped to 765 */
    size_t len;
    if (p->conf.sasl_mechanism == KP__SASL_PLAIN) {
        /* RFC 4616: [authzid] NUL authcid NUL passwd */
        size_t ul = strlen(p->sasl_username), pl = strlen(p->sasl_password);
        buf[0] = '\0';
        memcpy(buf + 1, p->sasl_username, ul);
        buf[1 + ul] = '\0';
        memcpy(buf + 2 + ul, p->sasl_password, pl);
        len = 2 + ul + pl;
    } else {
        int sha = p->conf.sasl_mechanism == KP__SASL_SCRAM_SHA_512 ? 512 : 256;
        if (kp__scram_client_first(&c->scram, sha, p->sasl_username, NULL, buf, sizeof buf) != 0) {
            return auth_failed(p, c, "cannot build the SCRAM client-first message", NULL, 0);
        }
        len = strlen(buf);
    }
    int rc = send_authenticate(p, c, buf, len, now);
    OPENSSL_cleanse(buf, sizeof buf);
    return rc;
}

int64_t kp__sasl_reauth_at(int64_t now, int64_t lifetime_ms, unsigned seed)
{
    if (lifetime_ms <= 0) {
        return 0;
    }
    const int64_t max_lifetime = 30LL * 24 * 3600 * 1000;
    if (lifetime_ms > max_lifetime) {
        lifetime_ms = max_lifetime;
    }
    int64_t pct = 85 + rand_r(&seed) % 11;
    int64_t delay = lifetime_ms * pct / 100;
    return now + (delay < KP_SASL_REAUTH_MIN_MS ? KP_SASL_REAUTH_MIN_MS : delay);
}

/* Authenticated: READY, and the KIP-368 deadline (kp__sasl_reauth_at), jittered so that
 * connections do not re-authenticate together. */
static int authenticated(kp_producer_t *p, kp__conn_t *c, int64_t lifetime_ms, int64_t now)
{
    c->state = KP__CONN_READY;
    c->sasl_step = 0;
    c->failures = 0;
    OPENSSL_cleanse(&c->scram, sizeof c->scram);
    c->reauth_at_ms =
        kp__sasl_reauth_at(now, lifetime_ms, (unsigned)(now ^ (c->node_id * 2654435761u)));
    kp__sender_set_error(p, 0, NULL);
    return 0;
}

static int handle_authenticate(kp_producer_t *p, kp__conn_t *c, kp_reader_t *body, int16_t version,
                               int64_t now)
{
    kp_sasl_authenticate_response_t resp;
    if (kp__sasl_authenticate_response_read(body, version, &resp) != 0) {
        return auth_failed(p, c, "malformed SaslAuthenticate response", NULL, 0);
    }
    if (resp.error_code != 0) {
        char why[64];
        snprintf(why, sizeof why, "%s (error %d)", kp__kafka_error_name(resp.error_code),
                 (int)resp.error_code);
        return auth_failed(p, c, why, resp.error_message, resp.error_message_len);
    }
    if (p->conf.sasl_mechanism == KP__SASL_PLAIN || c->sasl_step >= 3) {
        if (p->conf.sasl_mechanism != KP__SASL_PLAIN) {
            char err[128] = "";
            if (kp__scram_verify_server_final(&c->scram, (const char *)resp.auth, resp.auth_len,
                                              err, sizeof err) != 0) {
                return auth_failed(p, c, err, NULL, 0);
            }
        }
        return authenticated(p, c, resp.session_lifetime_ms, now);
    }
    char final[512], err[128] = "";
    int rc = kp__scram_client_final(&c->scram, p->sasl_password, (const char *)resp.auth,
                                    resp.auth_len, final, sizeof final, err, sizeof err);
    if (rc != 0) {
        OPENSSL_cleanse(final, sizeof final);
        return auth_failed(p, c, err, NULL, 0);
    }
    rc = send_authenticate(p, c, final, strlen(final), now);
    OPENSSL_cleanse(final, sizeof final); /* the client proof */
    return rc;
}

int kp__sasl_handle(kp_producer_t *p, kp__conn_t *c, kp__request_t *r, kp_reader_t *body,
                    int64_t now)
{
    if (c->state != KP__CONN_AUTHENTICATING) {
        return KP_EMALFORMED; /* no SASL exchange is going on: not an answer to us */
    }
    if (r->api_key == KP_API_SASL_AUTHENTICATE) {
        return handle_authenticate(p, c, body, r->version, now);
    }
    kp_sasl_handshake_response_t hs;
    if (kp__sasl_handshake_response_read(body, r->version, &hs) != 0) {
        return auth_failed(p, c, "malformed SaslHandshake response", NULL, 0);
    }
    if (hs.error_code != 0) {
        char why[320];
        snprintf(why, sizeof why, "the broker does not enable this mechanism (%s; enabled: %s)",
                 kp__kafka_error_name(hs.error_code), hs.mechanisms);
        return auth_failed(p, c, why, NULL, 0);
    }
    return first_message(p, c, now);
}

void kp__sasl_maybe_reauth(kp_producer_t *p, kp__conn_t *c, int64_t now)
{
    if (c->state == KP__CONN_READY && c->reauth_at_ms > 0 && now >= c->reauth_at_ms) {
        c->state = KP__CONN_AUTHENTICATING; /* no new requests from here */
        c->reauth_waiting = true;
        c->reauth_at_ms = 0;
    }
    if (c->state == KP__CONN_AUTHENTICATING && c->reauth_waiting && c->in_flight.head == NULL) {
        c->reauth_waiting = false;
        if (send_handshake(p, c, now) != 0) {
            kp__sender_disconnect(p, c, now);
        }
    }
}
