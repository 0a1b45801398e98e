/*
 * sasl.h - SASL authentication of broker connections (security.protocol SASL_PLAINTEXT and
 * SASL_SSL): SaslHandshake v1 then SaslAuthenticate (KIP-152) with PLAIN (RFC 4616) or
 * SCRAM-SHA-256/512 (scram.h), re-authentication before the broker's session_lifetime_ms
 * runs out (KIP-368); credentials from jaas.c. Sender thread only.
 */
#ifndef KP_CORE_SASL_H
#define KP_CORE_SASL_H

#include <stddef.h>
#include <stdint.h>

#include "core/producer_impl.h"
#include "wire/protocol.h"

/* After the ApiVersions handshake of a SASL connection: checks the broker's SASL API
 * versions and sends SaslHandshake (state AUTHENTICATING). Returns 0, or (close) KP_EAUTH or
 * the code of a failed send. */
int kp__sasl_begin(kp_producer_t *p, kp__conn_t *c, const kp_api_version_range_t *apis,
                   size_t n_apis, int64_t now);

/* Handles a SaslHandshake / SaslAuthenticate response. Returns 0, or (close the connection)
 * KP_EAUTH when authentication failed (recorded with kp__sender_set_error) or KP_EMALFORMED for
 * a response to no exchange of this connection. */
int kp__sasl_handle(kp_producer_t *p, kp__conn_t *c, kp__request_t *r, kp_reader_t *body,
                    int64_t now);

/* KIP-368: a READY connection whose session is about to expire stops taking requests, and
 * re-authenticates once its requests in flight are answered. Called every sender loop. */
void kp__sasl_maybe_reauth(kp_producer_t *p, kp__conn_t *c, int64_t now);

/* When to re-authenticate a session authenticated at `now` whose broker gave it lifetime_ms
 * (SaslAuthenticate v1+): 0 for none (lifetime <= 0); else now + 85..95% of the lifetime (as
 * the Java client; `seed` picks the share), the lifetime clamped to 30 days (no overflow),
 * and never sooner than now + KP_SASL_REAUTH_MIN_MS (a broker's tiny lifetime must not make
 * the sender re-authenticate in a loop: a session that expires earlier is closed by the
 * broker and reconnected with backoff). Pure: any thread. */
int64_t kp__sasl_reauth_at(int64_t now, int64_t lifetime_ms, unsigned seed);

#endif /* KP_CORE_SASL_H */
