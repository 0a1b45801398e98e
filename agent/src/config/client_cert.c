/*
 * client_cert.c - the client certificate of gRPC mutual TLS: SW_AGENT_SSL_KEY_PATH and
 * SW_AGENT_SSL_CERT_CHAIN_PATH (the names of SkyWalking's agents: agent.ssl_key_path,
 * agent.ssl_cert_chain_path). See config.h.
 */
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "swc_errbuf.h"
#include "../log/log.h"
#include "config.h"
#include "file_open.h"
#include "pem.h"

/* A key or a chain is a few KiB; a bundle of intermediates stays far below this. */
#define CLIENT_FILE_MAX (1u << 20)

void sw__config_secret_wipe(void *secret, size_t len)
{
    /* OpenSSL's: never optimised away as a dead store (the agent links libcrypto through the
       producer's TLS and SCRAM). */
    OPENSSL_cleanse(secret, len);
}

void sw__config_secret_free(char *secret)
{
    if (secret == NULL) {
        return;
    }
    sw__config_secret_wipe(secret, strlen(secret));
    free(secret);
}

/* Whether text holds a PEM private key block ("-----BEGIN [RSA |EC |ENCRYPTED ]PRIVATE
   KEY-----"). Only the markers are looked at; OpenSSL (in gRPC) parses the key. */
static bool has_private_key(const char *text)
{
    const char *begin = strstr(text, "-----BEGIN ");
    while (begin != NULL) {
        const char *eol = strstr(begin + 11, "-----");
        if (eol == NULL) {
            return false;
        }
        size_t n = (size_t)(eol - begin);
        if (n >= 11 + 11 && memcmp(eol - 11, "PRIVATE KEY", 11) == 0) {
            return true;
        }
        begin = strstr(eol + 5, "-----BEGIN ");
    }
    return false;
}

int sw__config_client_cert_read(const sw_config_t *cfg, char **key, char **chain, char *errbuf,
                                size_t errlen)
{
    *key = *chain = NULL;
    bool has_key = cfg->grpc_ssl_key_path[0] != '\0';
    bool has_chain = cfg->grpc_ssl_cert_chain_path[0] != '\0';
    if (!has_key && !has_chain) {
        return 0;
    }
    if (has_key != has_chain) {
        swc__errbuf_printf(errbuf, errlen,
                           "%s is set but %s is not: mutual TLS needs both the private key and "
                           "its certificate chain",
                           has_key ? "SW_AGENT_SSL_KEY_PATH" : "SW_AGENT_SSL_CERT_CHAIN_PATH",
                           has_key ? "SW_AGENT_SSL_CERT_CHAIN_PATH" : "SW_AGENT_SSL_KEY_PATH");
        return SW_ECONFIG;
    }
    char esc[SW__LOG_ESCAPED_SIZE];
    size_t len;
    int rc = sw__file_read("SW_AGENT_SSL_KEY_PATH", cfg->grpc_ssl_key_path, CLIENT_FILE_MAX, key,
                           &len, errbuf, errlen);
    if (rc == 0 && !has_private_key(*key)) {
        swc__errbuf_printf(errbuf, errlen,
                           "SW_AGENT_SSL_KEY_PATH: '%s' holds no PEM private key (-----BEGIN "
                           "PRIVATE KEY-----); its content is not shown",
                           SW__LOG_ESC(esc, cfg->grpc_ssl_key_path));
        rc = SW_ECONFIG;
    }
    if (rc == 0) {
        rc = sw__file_read("SW_AGENT_SSL_CERT_CHAIN_PATH", cfg->grpc_ssl_cert_chain_path,
                           CLIENT_FILE_MAX, chain, &len, errbuf, errlen);
    }
    if (rc == 0 && sw__pem_certificates_count(*chain, len) < 1) {
        swc__errbuf_printf(errbuf, errlen,
                           "SW_AGENT_SSL_CERT_CHAIN_PATH: '%s' holds no well-formed PEM "
                           "certificate",
                           SW__LOG_ESC(esc, cfg->grpc_ssl_cert_chain_path));
        rc = SW_ECONFIG;
    }
    if (rc != 0) {
        sw__config_secret_free(*key);
        free(*chain);
        *key = *chain = NULL;
    }
    return rc;
}
