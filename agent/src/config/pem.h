/*
 * pem.h - recognising X.509 certificates in PEM text (internal), so that a CA bundle named by
 * SW_AGENT_SSL_CA_FILE is checked at sw_init rather than failing every TLS handshake later.
 *
 * A certificate is a block "-----BEGIN CERTIFICATE-----" ... "-----END CERTIFICATE-----"
 * (RFC 7468) whose body is strict base64 (whitespace between lines ignored) decoding to one
 * DER SEQUENCE that spans exactly the decoded bytes. Text outside blocks (comments in a
 * bundle) is ignored. This does not verify the certificate: gRPC (OpenSSL) does that.
 */
#ifndef SW_CONFIG_PEM_H
#define SW_CONFIG_PEM_H

#include <stddef.h>

/* Returns the number of certificates in the `len` bytes at text (>= 0), or SW_EINVAL when a
   CERTIFICATE block is malformed (no END line, bad base64, not one DER SEQUENCE). Pure; any
   thread. */
long sw__pem_certificates_count(const char *text, size_t len);

#endif /* SW_CONFIG_PEM_H */
