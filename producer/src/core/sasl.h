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

#endif /* KP_CORE_SASL_H */
