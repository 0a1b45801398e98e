/*
 * conf.h - the producer's configuration, parsed (internal view of kp_conf_t).
 *
 * A kp_conf_t is plain data: kp_producer_new() takes a copy, after which the producer reads it
 * from every thread without a lock because nothing writes it again.
 */
#ifndef KP_CORE_CONF_H
#define KP_CORE_CONF_H

#include <stdbool.h>
#include <stdint.h>

#include "kproducer.h"

/* Values are the RecordBatch attributes' codec numbers. */
enum {
    KP__COMPRESSION_NONE = 0,
    KP__COMPRESSION_GZIP = 1,
    KP__COMPRESSION_LZ4 = 3,
    KP__COMPRESSION_ZSTD = 4
};

/* security.protocol */
enum { KP__SEC_PLAINTEXT = 0, KP__SEC_SSL, KP__SEC_SASL_PLAINTEXT, KP__SEC_SASL_SSL };
/* sasl.mechanism */
enum { KP__SASL_PLAIN = 0, KP__SASL_SCRAM_SHA_256, KP__SASL_SCRAM_SHA_512 };

#define KP__PATH_MAX   1024
#define KP__SECRET_MAX 256

struct kp_conf {
    char bootstrap_servers[1024];
    char client_id[256];
    int acks; /* -1 (all), 0 or 1 */
    bool idempotence;
    int32_t batch_size;
    /* KIP-782's batch.max.size: a batch grows in blocks of batch_size up to this while its
     * partition has a backlog; <= batch_size: no growth. Bounded by max_request_size. */
    int32_t batch_max_size;
    int32_t linger_ms;
    int64_t buffer_memory;
    int64_t max_block_ms;
    int32_t max_in_flight;
    int32_t max_request_size;
    int32_t retries;
    int64_t retry_backoff_ms;
    int64_t retry_backoff_max_ms;
    int32_t delivery_timeout_ms;
    int32_t request_timeout_ms;
    int compression;
    int64_t metadata_max_age_ms;
    int64_t connections_max_idle_ms;
    int64_t reconnect_backoff_ms;
    int64_t reconnect_backoff_max_ms;
    /* Security. TLS for SSL and SASL_SSL, SASL for SASL_PLAINTEXT and SASL_SSL. */
    int security_protocol;
    char ssl_truststore_location[KP__PATH_MAX];
    char ssl_keystore_location[KP__PATH_MAX];
    char ssl_key_location[KP__PATH_MAX];
    char ssl_key_password[KP__SECRET_MAX];
    bool ssl_verify_hostname; /* ssl.endpoint.identification.algorithm=https */
    int sasl_mechanism;
    char sasl_username[KP__SECRET_MAX];
    char sasl_password[KP__SECRET_MAX];
    char sasl_jaas_config[2048];
    /* Which properties the user set explicitly: a default enable.idempotence yields to an
     * explicit acks != all (as in the Java client), an explicit one is an error. */
    bool set_idempotence;
    bool set_acks;
    bool set_delivery_timeout;
};

/* Fills *conf with the defaults. */
void kp__conf_defaults(struct kp_conf *conf);

/* The effective idempotence after kp_conf_validate(): false when enable.idempotence was left
 * at its default and acks or max.in.flight say otherwise. */
bool kp__conf_idempotent(const struct kp_conf *conf);

/* True for SSL and SASL_SSL / SASL_PLAINTEXT and SASL_SSL. */
bool kp__conf_tls(const struct kp_conf *conf);
bool kp__conf_sasl(const struct kp_conf *conf);

/* The SASL credentials: from sasl.jaas.config when set (kp__jaas_parse, jaas.c),
 * else sasl.username / sasl.password. Returns 0 or KP_ECONF with a message that never holds
 * the password or the JAAS text. */
int kp__conf_sasl_credentials(const struct kp_conf *conf, char *user, size_t user_len, char *pass,
                              size_t pass_len, char *errbuf, size_t errlen);

/* Overwrites the secret settings (key password, SASL password, JAAS text) before a conf is
 * freed. */
void kp__conf_wipe_secrets(struct kp_conf *conf);

/* "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512". */
const char *kp__conf_mechanism_name(int mechanism);

#endif /* KP_CORE_CONF_H */
