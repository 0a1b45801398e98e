/*
 * sasl.h - SASL authentication of broker connections (security.protocol SASL_PLAINTEXT and
 * SASL_SSL): SaslHandshake v1 then SaslAuthenticate (KIP-152) with PLAIN (RFC 4616) or
 * SCRAM-SHA-256/512 (scram.h), re-authentication before the broker's session_lifetime_ms
 * runs out (KIP-368), and the sasl.jaas.config parser. Sender thread only, except
 * kp__jaas_parse (pure).
 */
#ifndef KP_CORE_SASL_H
#define KP_CORE_SASL_H

#include <stddef.h>
#include <stdint.h>

#include "core/producer_impl.h"
#include "wire/protocol.h"

/* Parses a Java JAAS entry: `<LoginModule class> <required|requisite|sufficient|optional>
 * [name=value]... ;` where a value is a double-quoted string (\" and \\ escapes) or a bare
 * word, and takes its username and password options. The class must fit the mechanism
 * (PlainLoginModule for PLAIN, ScramLoginModule for SCRAM-*). Returns 0 or KP_ECONF with a
 * message that names an offset or an option name, never the text or a value. Fuzzed by
 * fuzz_scram. */
int kp__jaas_parse(const char *text, int mechanism, char *user, size_t user_len, char *pass,
                   size_t pass_len, char *errbuf, size_t errlen);

/* After the ApiVersions handshake of a SASL connection: checks the broker's SASL API
 * versions and sends SaslHandshake (state AUTHENTICATING). Returns 0 or -1 (close). */
int kp__sasl_begin(kp_producer_t *p, kp__conn_t *c, const kp_api_version_range_t *apis,
                   size_t n_apis, int64_t now);

/* Handles a SaslHandshake / SaslAuthenticate response. Returns 0 or -1 (close; a failed
 * authentication was recorded as KP_EAUTH with kp__sender_set_error). */
int kp__sasl_handle(kp_producer_t *p, kp__conn_t *c, kp__request_t *r, kp_reader_t *body,
                    int64_t now);

/* KIP-368: a READY connection whose session is about to expire stops taking requests, and
 * re-authenticates once its requests in flight are answered. Called every sender loop. */
void kp__sasl_maybe_reauth(kp_producer_t *p, kp__conn_t *c, int64_t now);

#endif /* KP_CORE_SASL_H */
