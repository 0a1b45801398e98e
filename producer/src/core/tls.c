/*
 * tls.c - OpenSSL client sessions for broker connections (see tls.h).
 */
#include "core/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

#include "core/conf.h"
#include "core/connection.h"

static int fail_conf(char *errbuf, size_t errlen, const char *what, const char *path)
{
    char detail[256] = "";
    unsigned long e = ERR_peek_last_error();
    if (e != 0) {
        ERR_error_string_n(e, detail, sizeof detail);
    }
    ERR_clear_error();
    if (errbuf && errlen > 0) {
        snprintf(errbuf, errlen, "%s '%s': %s", what, path, detail[0] ? detail : "unreadable");
    }
    return KP_ECONF;
}

/* Hands OpenSSL ssl.key.password for an encrypted private key. */
static int key_password(char *buf, int size, int rwflag, void *userdata)
{
    (void)rwflag;
    const char *pw = userdata;
    size_t n = strlen(pw);
    if (size <= 0 || n >= (size_t)size) {
        return 0;
    }
    memcpy(buf, pw, n);
    return (int)n;
}

int kp__tls_ctx_new(const struct kp_conf *conf, void **out, char *errbuf, size_t errlen)
{
    *out = NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        return fail_conf(errbuf, errlen, "TLS", "context");
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    int rc = 0;
    const char *ca = conf->ssl_truststore_location;
    if (ca[0] != '\0') {
        if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
            rc = fail_conf(errbuf, errlen, "ssl.truststore.location: cannot load", ca);
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        rc = fail_conf(errbuf, errlen, "TLS: cannot load the system's CA store", "default");
    }
    const char *cert = conf->ssl_keystore_location;
    if (rc == 0 && cert[0] != '\0') {
        const char *key = conf->ssl_key_location[0] ? conf->ssl_key_location : cert;
        /* The callback reads the conf's copy, which lives as long as the producer. */
        SSL_CTX_set_default_passwd_cb(ctx, key_password);
        SSL_CTX_set_default_passwd_cb_userdata(ctx, (void *)conf->ssl_key_password);
        if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
            rc = fail_conf(errbuf, errlen, "ssl.keystore.location: no certificate chain in", cert);
        } else if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
            rc = fail_conf(errbuf, errlen,
                           "ssl.keystore.location / ssl.key.location: no private key (or "
                           "ssl.key.password does not decrypt it) in",
                           key);
        } else if (SSL_CTX_check_private_key(ctx) != 1) {
            rc = fail_conf(errbuf, errlen, "ssl.keystore.location: the key does not match", key);
        }
    }
    if (rc != 0) {
        SSL_CTX_free(ctx);
        return rc;
    }
    *out = ctx;
    return 0;
}

void kp__tls_ctx_free(void *ctx)
{
    SSL_CTX_free(ctx);
}

/* ---- a socket BIO that never raises SIGPIPE --------------------------------------------
 * OpenSSL's socket BIO writes with write(2): a broker that resets the connection (a TLS
 * client at a plaintext listener, say) would kill the host process with SIGPIPE. This one
 * sends with MSG_NOSIGNAL, like the plaintext path (connection.c). */

static int nosig_write(BIO *b, const char *buf, int len)
{
    ssize_t n;
    do {
        n = send(BIO_get_fd(b, NULL), buf, (size_t)len, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    BIO_clear_retry_flags(b);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        BIO_set_retry_write(b);
    }
    return (int)n;
}

static int nosig_read(BIO *b, char *buf, int len)
{
    ssize_t n;
    do {
        n = recv(BIO_get_fd(b, NULL), buf, (size_t)len, 0);
    } while (n < 0 && errno == EINTR);
    BIO_clear_retry_flags(b);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        BIO_set_retry_read(b);
    }
    return (int)n;
}

static long nosig_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    switch (cmd) {
    case BIO_C_SET_FD:
        BIO_set_data(b, (void *)(intptr_t)(*(int *)ptr));
        BIO_set_init(b, 1);
        (void)num;
        return 1;
    case BIO_C_GET_FD:
        if (ptr) {
            *(int *)ptr = (int)(intptr_t)BIO_get_data(b);
        }
        return (int)(intptr_t)BIO_get_data(b);
    case BIO_CTRL_FLUSH:
        return 1;
    default:
        return 0;
    }
}

static int nosig_create(BIO *b)
{
    BIO_set_data(b, (void *)(intptr_t)-1);
    return 1;
}

/* The method table, made once (pthread_once) and kept for the process's life. */
static BIO_METHOD *nosig_method;
static pthread_once_t nosig_once = PTHREAD_ONCE_INIT;

static void nosig_init(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                 "kproducer socket");
    if (m && BIO_meth_set_write(m, nosig_write) == 1 && BIO_meth_set_read(m, nosig_read) == 1 &&
        BIO_meth_set_ctrl(m, nosig_ctrl) == 1 && BIO_meth_set_create(m, nosig_create) == 1) {
        nosig_method = m;
    } else {
        BIO_meth_free(m);
    }
}

static BIO *nosig_bio(int fd)
{
    pthread_once(&nosig_once, nosig_init);
    BIO *b = nosig_method ? BIO_new(nosig_method) : NULL;
    if (b) {
        BIO_set_fd(b, fd, BIO_NOCLOSE);
    }
    return b;
}

static bool is_ip_literal(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

int kp__tls_start(kp__conn_t *c, void *ctx, bool verify_host)
{
    SSL *ssl = SSL_new(ctx);
    if (!ssl) {
        ERR_clear_error();
        return KP_ENOMEM;
    }
    bool ip = is_ip_literal(c->host);
    BIO *bio = nosig_bio(c->fd);
    int ok = bio ? 1 : 0;
    if (bio) {
        SSL_set_bio(ssl, bio, bio); /* ssl owns it now */
    }
    if (ok == 1 && !ip) {
        ok = (int)SSL_set_tlsext_host_name(ssl, c->host); /* SNI names hosts, never addresses */
    }
    if (ok == 1 && verify_host) {
        ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), c->host)
                : SSL_set1_host(ssl, c->host);
    }
    if (ok != 1) {
        ERR_clear_error();
        SSL_free(ssl);
        return KP_ENOMEM;
    }
    SSL_set_connect_state(ssl);
    c->tls = ssl;
    return 0;
}

int kp__tls_handshake(kp__conn_t *c, bool *want_write, char *err, size_t errlen)
{
    SSL *ssl = c->tls;
    ERR_clear_error();
    int r = SSL_do_handshake(ssl);
    if (r == 1) {
        return 1;
    }
    int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        *want_write = e == SSL_ERROR_WANT_WRITE;
        return 0;
    }
    long v = SSL_get_verify_result(ssl);
    int code = KP_ETLS;
    char detail[320] = "";
    if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH) {
        code = KP_ETLS_HOSTNAME;
        snprintf(
            detail, sizeof detail,
            "the certificate does not name %.180s (ssl.endpoint.identification.algorithm=https)",
            c->host);
    } else if (v != X509_V_OK) {
        code = KP_ETLS_UNTRUSTED;
        snprintf(detail, sizeof detail, "certificate not trusted: %s",
                 X509_verify_cert_error_string(v));
    } else if (ERR_peek_last_error() != 0) {
        ERR_error_string_n(ERR_peek_last_error(), detail, sizeof detail);
    } else {
        snprintf(detail, sizeof detail, "connection closed during the handshake");
    }
    ERR_clear_error();
    snprintf(err, errlen, "TLS handshake with broker %s:%d failed: %s", c->host, (int)c->port,
             detail);
    return code;
}

/* 0 for "try again when the socket is ready", KP_ENETWORK for everything else (the reason goes to
 * c->tls_error: a TLS 1.3 server refuses a client certificate only after the handshake). */
static ssize_t io_result(kp__conn_t *c, int r)
{
    if (r > 0) {
        return r;
    }
    int e = SSL_get_error(c->tls, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        ERR_clear_error();
        return 0;
    }
    unsigned long why = ERR_peek_last_error();
    if (why != 0) {
        ERR_error_string_n(why, c->tls_error, sizeof c->tls_error);
    }
    ERR_clear_error();
    return KP_ENETWORK;
}

ssize_t kp__tls_read(kp__conn_t *c, void *dst, size_t n)
{
    int len = n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
    ERR_clear_error();
    return io_result(c, SSL_read(c->tls, dst, len));
}

ssize_t kp__tls_write(kp__conn_t *c, const void *src, size_t n)
{
    int len = n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
    ERR_clear_error();
    return io_result(c, SSL_write(c->tls, src, len));
}

void kp__tls_free(kp__conn_t *c)
{
    if (c->tls) {
        SSL_free(c->tls);
        c->tls = NULL;
    }
    c->tls_error[0] = '\0';
}
