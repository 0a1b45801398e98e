/*
 * tls.h - TLS for broker connections (security.protocol SSL and SASL_SSL) with OpenSSL.
 *
 * One client context per producer (kp__tls_ctx_new: TLS 1.2 or later, the trust store, the
 * optional client certificate and key), one session per connection (kp__tls_start: SNI for
 * a host name, host name or IP address verification when
 * ssl.endpoint.identification.algorithm=https). The handshake is driven by the sender's
 * epoll loop (kp__tls_handshake never blocks); afterwards kp__tls_read / kp__tls_write stand
 * in for recv / send. Sender thread only, except kp__tls_ctx_new / _free (producer creation
 * and destruction).
 */
#ifndef KP_CORE_TLS_H
#define KP_CORE_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct kp_conf;
struct kp__conn;

/* Creates the client context from conf. Returns 0 or KP_ECONF (a file that cannot be read,
 * a key that does not match its certificate or cannot be decrypted) with a message naming
 * the property and the file, never the key password. */
int kp__tls_ctx_new(const struct kp_conf *conf, void **ctx, char *errbuf, size_t errlen);
void kp__tls_ctx_free(void *ctx);

/* Starts a client session on c's connected socket for c->host. Returns 0 or KP_ENOMEM. */
int kp__tls_start(struct kp__conn *c, void *ctx, bool verify_host);

/* Advances the handshake. Returns 1 when it is complete, 0 while it needs the socket
 * (*want_write: wait for writability, else readability), or a negative KP_ETLS* code with a
 * message in err: KP_ETLS_UNTRUSTED (the chain does not lead to a trusted CA),
 * KP_ETLS_HOSTNAME (the certificate does not name the host), KP_ETLS (anything else). */
int kp__tls_handshake(struct kp__conn *c, bool *want_write, char *err, size_t errlen);

/* Like recv / send on a non-blocking socket: bytes moved (> 0), 0 when it would block,
 * KP_ENETWORK on EOF or an error (the OpenSSL reason in c->tls_error). */
ssize_t kp__tls_read(struct kp__conn *c, void *dst, size_t n);
ssize_t kp__tls_write(struct kp__conn *c, const void *src, size_t n);

/* Frees c's session (no close_notify: the socket is closed right after). NULL-safe. */
void kp__tls_free(struct kp__conn *c);

#endif /* KP_CORE_TLS_H */
