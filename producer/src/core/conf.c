/*
 * conf.c - kp_conf_t: the Java producer's property names, defaults and checks.
 *
 * Every property is a row of one table (name, kind, field offset, range); kp_conf_set() looks
 * the name up, parses the value in full (no trailing garbage, no overflow) and checks the
 * range before it writes anything, so a failed set leaves the conf unchanged.
 */
#include "core/conf.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/jaas.h"
#include "swc_errbuf.h"

enum kind {
    KIND_STRING,
    KIND_SECRET, /* a string never quoted in a message */
    KIND_INT32,
    KIND_INT64,
    KIND_BOOL,
    KIND_ACKS,
    KIND_COMPRESSION,
    KIND_PROTOCOL,    /* security.protocol */
    KIND_MECHANISM,   /* sasl.mechanism */
    KIND_STORE_TYPE,  /* ssl.truststore.type / ssl.keystore.type: PEM only, nothing stored */
    KIND_ENDPOINT_ID, /* ssl.endpoint.identification.algorithm: https or empty */
};

struct property {
    const char *name;
    enum kind kind;
    size_t offset;
    size_t size; /* KIND_STRING: capacity of the char array */
    int64_t min;
    int64_t max;
};

#define FIELD(f) offsetof(struct kp_conf, f), sizeof(((struct kp_conf *)0)->f)

static const struct property properties[] = {
    {"bootstrap.servers", KIND_STRING, FIELD(bootstrap_servers), 0, 0},
    {"client.id", KIND_STRING, FIELD(client_id), 0, 0},
    {"acks", KIND_ACKS, FIELD(acks), 0, 0},
    {"enable.idempotence", KIND_BOOL, FIELD(idempotence), 0, 0},
    {"batch.size", KIND_INT32, FIELD(batch_size), 1, 1 << 30},
    {"batch.max.size", KIND_INT32, FIELD(batch_max_size), 0, 1 << 30},
    {"linger.ms", KIND_INT32, FIELD(linger_ms), 0, INT32_MAX},
    {"buffer.memory", KIND_INT64, FIELD(buffer_memory), 1024, INT64_C(1) << 40},
    {"max.block.ms", KIND_INT64, FIELD(max_block_ms), 0, INT32_MAX},
    {"max.in.flight.requests.per.connection", KIND_INT32, FIELD(max_in_flight), 1, 1000},
    {"max.request.size", KIND_INT32, FIELD(max_request_size), 1024, 1 << 30},
    {"retries", KIND_INT32, FIELD(retries), 0, INT32_MAX},
    {"retry.backoff.ms", KIND_INT64, FIELD(retry_backoff_ms), 0, INT32_MAX},
    {"retry.backoff.max.ms", KIND_INT64, FIELD(retry_backoff_max_ms), 0, INT32_MAX},
    {"delivery.timeout.ms", KIND_INT32, FIELD(delivery_timeout_ms), 1, INT32_MAX},
    {"request.timeout.ms", KIND_INT32, FIELD(request_timeout_ms), 1, INT32_MAX},
    {"compression.type", KIND_COMPRESSION, FIELD(compression), 0, 0},
    {"metadata.max.age.ms", KIND_INT64, FIELD(metadata_max_age_ms), 0, INT32_MAX},
    {"connections.max.idle.ms", KIND_INT64, FIELD(connections_max_idle_ms), -1, INT32_MAX},
    {"reconnect.backoff.ms", KIND_INT64, FIELD(reconnect_backoff_ms), 0, INT32_MAX},
    {"reconnect.backoff.max.ms", KIND_INT64, FIELD(reconnect_backoff_max_ms), 0, INT32_MAX},
    {"security.protocol", KIND_PROTOCOL, FIELD(security_protocol), 0, 0},
    {"ssl.truststore.type", KIND_STORE_TYPE, 0, 0, 0, 0},
    {"ssl.keystore.type", KIND_STORE_TYPE, 0, 0, 0, 0},
    {"ssl.truststore.location", KIND_STRING, FIELD(ssl_truststore_location), 0, 0},
    {"ssl.ca.location", KIND_STRING, FIELD(ssl_truststore_location), 0, 0},
    {"ssl.keystore.location", KIND_STRING, FIELD(ssl_keystore_location), 0, 0},
    {"ssl.certificate.location", KIND_STRING, FIELD(ssl_keystore_location), 0, 0},
    {"ssl.key.location", KIND_STRING, FIELD(ssl_key_location), 0, 0},
    {"ssl.key.password", KIND_SECRET, FIELD(ssl_key_password), 0, 0},
    {"ssl.endpoint.identification.algorithm", KIND_ENDPOINT_ID, FIELD(ssl_verify_hostname), 0, 0},
    {"sasl.mechanism", KIND_MECHANISM, FIELD(sasl_mechanism), 0, 0},
    {"sasl.mechanisms", KIND_MECHANISM, FIELD(sasl_mechanism), 0, 0},
    {"sasl.username", KIND_STRING, FIELD(sasl_username), 0, 0},
    {"sasl.password", KIND_SECRET, FIELD(sasl_password), 0, 0},
    {"sasl.jaas.config", KIND_SECRET, FIELD(sasl_jaas_config), 0, 0},
};

static const char *const protocol_names[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"};
static const char *const mechanism_names[] = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"};

const char *kp__conf_mechanism_name(int mechanism)
{
    return mechanism >= 0 && mechanism < 3 ? mechanism_names[mechanism] : "?";
}

bool kp__conf_tls(const struct kp_conf *conf)
{
    return conf->security_protocol == KP__SEC_SSL || conf->security_protocol == KP__SEC_SASL_SSL;
}

bool kp__conf_sasl(const struct kp_conf *conf)
{
    return conf->security_protocol == KP__SEC_SASL_PLAINTEXT ||
           conf->security_protocol == KP__SEC_SASL_SSL;
}

static int fail(char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *errbuf, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    swc__errbuf_vprintf(errbuf, errlen, fmt, ap);
    va_end(ap);
    return KP_ECONF;
}

void kp__conf_defaults(struct kp_conf *conf)
{
    memset(conf, 0, sizeof(*conf));
    snprintf(conf->client_id, sizeof(conf->client_id), "kproducer");
    conf->acks = -1;
    conf->idempotence = true;
    conf->batch_size = 16384;
    conf->batch_max_size = 262144;
    conf->linger_ms = 5;
    conf->buffer_memory = 33554432;
    conf->max_block_ms = 60000;
    conf->max_in_flight = 5;
    conf->max_request_size = 1048576;
    conf->retries = INT32_MAX;
    conf->retry_backoff_ms = 100;
    conf->retry_backoff_max_ms = 1000;
    conf->delivery_timeout_ms = 120000;
    conf->request_timeout_ms = 30000;
    conf->compression = KP__COMPRESSION_NONE;
    conf->metadata_max_age_ms = 300000;
    conf->connections_max_idle_ms = 540000;
    conf->reconnect_backoff_ms = 50;
    conf->reconnect_backoff_max_ms = 1000;
    conf->security_protocol = KP__SEC_PLAINTEXT;
    conf->ssl_verify_hostname = true;
    conf->sasl_mechanism = KP__SASL_PLAIN;
}

kp_conf_t *kp_conf_new(void)
{
    struct kp_conf *conf = malloc(sizeof(*conf));
    if (conf) {
        kp__conf_defaults(conf);
    }
    return conf;
}

void kp__conf_wipe_secrets(struct kp_conf *conf)
{
    /* OPENSSL_cleanse: a memset the compiler cannot drop before free(). */
    OPENSSL_cleanse(conf->ssl_key_password, sizeof conf->ssl_key_password);
    OPENSSL_cleanse(conf->sasl_password, sizeof conf->sasl_password);
    OPENSSL_cleanse(conf->sasl_jaas_config, sizeof conf->sasl_jaas_config);
}

void kp_conf_destroy(kp_conf_t *conf)
{
    if (conf) {
        kp__conf_wipe_secrets(conf);
    }
    free(conf);
}

/* Parses a whole decimal integer; false on empty input, trailing characters or overflow. */
static bool parse_int(const char *value, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (end == value || *end != '\0' || errno == ERANGE) {
        return false;
    }
    *out = v;
    return true;
}

static int set_number(struct kp_conf *conf, const struct property *prop, const char *value,
                      char *errbuf, size_t errlen)
{
    int64_t v;
    if (!parse_int(value, &v)) {
        return fail(errbuf, errlen, "%s: '%s' is not an integer", prop->name, value);
    }
    if (v < prop->min || v > prop->max) {
        return fail(errbuf, errlen, "%s: %s is out of range [%lld, %lld]", prop->name, value,
                    (long long)prop->min, (long long)prop->max);
    }
    char *field = (char *)conf + prop->offset;
    if (prop->kind == KIND_INT32) {
        int32_t v32 = (int32_t)v;
        memcpy(field, &v32, sizeof(v32));
    } else {
        memcpy(field, &v, sizeof(v));
    }
    return 0;
}

/* The index of value in names[0..n), case-insensitive as the Java client's enums; -1. */
static int name_index(const char *const *names, int n, const char *value)
{
    for (int i = 0; i < n; i++) {
        if (strcasecmp(names[i], value) == 0) {
            return i;
        }
    }
    return -1;
}

static int set_security(struct kp_conf *conf, const struct property *prop, const char *value,
                        char *errbuf, size_t errlen)
{
    int *field = (int *)(void *)((char *)conf + prop->offset);
    int i;
    switch (prop->kind) {
    case KIND_PROTOCOL:
        if ((i = name_index(protocol_names, 4, value)) < 0) {
            return fail(errbuf, errlen,
                        "security.protocol: '%s' is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
                        value);
        }
        *field = i;
        return 0;
    case KIND_MECHANISM:
        if ((i = name_index(mechanism_names, 3, value)) < 0) {
            return fail(errbuf, errlen,
                        "%s: '%s' is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (the mechanisms "
                        "supported)",
                        prop->name, value);
        }
        *field = i;
        return 0;
    case KIND_STORE_TYPE:
        if (strcasecmp(value, "PEM") != 0) {
            return fail(errbuf, errlen, "%s: '%s' is not supported (PEM files only)", prop->name,
                        value);
        }
        return 0;
    default: /* KIND_ENDPOINT_ID */
        if (value[0] != '\0' && strcasecmp(value, "https") != 0) {
            return fail(errbuf, errlen, "%s: '%s' is not https or empty", prop->name, value);
        }
        conf->ssl_verify_hostname = value[0] != '\0';
        return 0;
    }
}

static int set_enum(struct kp_conf *conf, const struct property *prop, const char *value,
                    char *errbuf, size_t errlen)
{
    if (prop->kind >= KIND_PROTOCOL) {
        return set_security(conf, prop, value, errbuf, errlen);
    }
    if (prop->kind == KIND_BOOL) {
        if (strcmp(value, "true") == 0) {
            conf->idempotence = true;
        } else if (strcmp(value, "false") == 0) {
            conf->idempotence = false;
        } else {
            return fail(errbuf, errlen, "%s: '%s' is not true or false", prop->name, value);
        }
        conf->set_idempotence = true;
    } else if (prop->kind == KIND_ACKS) {
        if (strcmp(value, "all") == 0 || strcmp(value, "-1") == 0) {
            conf->acks = -1;
        } else if (strcmp(value, "0") == 0) {
            conf->acks = 0;
        } else if (strcmp(value, "1") == 0) {
            conf->acks = 1;
        } else {
            return fail(errbuf, errlen, "acks: '%s' is not one of all, -1, 0, 1", value);
        }
        conf->set_acks = true;
    } else {
        if (strcmp(value, "none") == 0) {
            conf->compression = KP__COMPRESSION_NONE;
        } else if (strcmp(value, "gzip") == 0) {
            conf->compression = KP__COMPRESSION_GZIP;
        } else if (strcmp(value, "lz4") == 0) {
            conf->compression = KP__COMPRESSION_LZ4;
        } else if (strcmp(value, "zstd") == 0) {
            conf->compression = KP__COMPRESSION_ZSTD;
        } else {
            return fail(errbuf, errlen, "compression.type: '%s' is not none, gzip, lz4 or zstd",
                        value);
        }
    }
    return 0;
}

int kp_conf_set(kp_conf_t *conf, const char *name, const char *value, char *errbuf, size_t errlen)
{
    if (!conf || !name || !value) {
        (void)fail(errbuf, errlen, "kp_conf_set: NULL %s",
                   !conf   ? "conf"
                   : !name ? "name"
                           : "value");
        return KP_EINVAL;
    }
    const struct property *prop = NULL;
    for (size_t i = 0; i < sizeof(properties) / sizeof(properties[0]); i++) {
        if (strcmp(properties[i].name, name) == 0) {
            prop = &properties[i];
            break;
        }
    }
    if (!prop) {
        return fail(errbuf, errlen, "unknown property '%s'", name);
    }
    switch (prop->kind) {
    case KIND_STRING:
    case KIND_SECRET:
        if (strlen(value) >= prop->size) {
            return fail(errbuf, errlen, "%s: value longer than %zu bytes", name, prop->size - 1);
        }
        memcpy((char *)conf + prop->offset, value, strlen(value) + 1);
        return 0;
    case KIND_INT32:
    case KIND_INT64: {
        int rc = set_number(conf, prop, value, errbuf, errlen);
        if (rc == 0 && strcmp(name, "delivery.timeout.ms") == 0) {
            conf->set_delivery_timeout = true;
        }
        return rc;
    }
    default:
        return set_enum(conf, prop, value, errbuf, errlen);
    }
}

bool kp__conf_idempotent(const struct kp_conf *conf)
{
    if (conf->set_idempotence) {
        return conf->idempotence;
    }
    return conf->idempotence && conf->acks == -1 && conf->max_in_flight <= 5 && conf->retries > 0;
}

int kp_conf_validate(const kp_conf_t *conf, char *errbuf, size_t errlen)
{
    if (!conf) {
        (void)fail(errbuf, errlen, "kp_conf_validate: NULL conf");
        return KP_EINVAL;
    }
    if (conf->bootstrap_servers[0] == '\0') {
        return fail(errbuf, errlen, "bootstrap.servers: must name at least one host:port");
    }
    if (conf->set_idempotence && conf->idempotence) {
        if (conf->acks != -1) {
            return fail(errbuf, errlen, "enable.idempotence=true requires acks=all (acks=%d)",
                        conf->acks);
        }
        if (conf->max_in_flight > 5) {
            return fail(errbuf, errlen,
                        "enable.idempotence=true requires "
                        "max.in.flight.requests.per.connection <= 5 (it is %d)",
                        conf->max_in_flight);
        }
        if (conf->retries == 0) {
            return fail(errbuf, errlen, "enable.idempotence=true requires retries > 0");
        }
    }
    if (kp__conf_sasl(conf)) {
        char user[KP__SECRET_MAX], pass[KP__SECRET_MAX];
        int rc =
            kp__conf_sasl_credentials(conf, user, sizeof user, pass, sizeof pass, errbuf, errlen);
        OPENSSL_cleanse(pass, sizeof pass);
        if (rc != 0) {
            return rc;
        }
    }
    if (conf->ssl_key_password[0] != '\0' && conf->ssl_keystore_location[0] == '\0') {
        return fail(errbuf, errlen, "ssl.key.password is set but ssl.keystore.location is not");
    }
    if (conf->reconnect_backoff_max_ms < conf->reconnect_backoff_ms) {
        return fail(errbuf, errlen, "reconnect.backoff.max.ms < reconnect.backoff.ms");
    }
    if (conf->retry_backoff_max_ms < conf->retry_backoff_ms) {
        return fail(errbuf, errlen, "retry.backoff.max.ms < retry.backoff.ms");
    }
    if ((int64_t)conf->delivery_timeout_ms < (int64_t)conf->linger_ms + conf->request_timeout_ms) {
        if (conf->set_delivery_timeout) {
            return fail(errbuf, errlen,
                        "delivery.timeout.ms (%d) must be >= linger.ms + request.timeout.ms (%lld)",
                        conf->delivery_timeout_ms,
                        (long long)conf->linger_ms + conf->request_timeout_ms);
        }
    }
    return 0;
}

int kp__conf_sasl_credentials(const struct kp_conf *conf, char *user, size_t user_len, char *pass,
                              size_t pass_len, char *errbuf, size_t errlen)
{
    if (conf->sasl_jaas_config[0] != '\0') {
        return kp__jaas_parse(conf->sasl_jaas_config, conf->sasl_mechanism, user, user_len, pass,
                              pass_len, errbuf, errlen);
    }
    if (conf->sasl_username[0] == '\0') {
        swc__errbuf_printf(errbuf, errlen,
                           "security.protocol=SASL_*: set sasl.jaas.config, or sasl.username and "
                           "sasl.password");
        return KP_ECONF;
    }
    snprintf(user, user_len, "%s", conf->sasl_username);
    snprintf(pass, pass_len, "%s", conf->sasl_password);
    return 0;
}
