/*
 * config_check.c - the checks sw__config_finalize runs over the whole configuration, for every
 * setting whatever reporter is selected (see config.h): address lists, Kafka topic names, the
 * producer properties and the CA bundle. Every message names the setting the user wrote.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../log/log.h"
#include "config.h"
#include "file_open.h"
#include "kproducer.h"
#include "list.h"
#include "pem.h"
#include "producer_config.h"
#include "swc_errbuf.h"

/* Kafka's limit on a topic name (org.apache.kafka.common.internals.Topic). */
#define TOPIC_NAME_MAX 249
/* A PEM bundle larger than this is surely not a CA file. */
#define CA_FILE_MAX (4u << 20)
/* Checks a topic name as Kafka does: 1..249 of [a-zA-Z0-9._-], not "." or "..". */
static int topic_check(const char *key, const char *name, char *errbuf, size_t errlen)
{
    size_t len = strlen(name);
    bool ok =
        len >= 1 && len <= TOPIC_NAME_MAX && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
    for (size_t i = 0; ok && i < len; i++) {
        char c = name[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '_' || c == '-';
    }
    if (ok) {
        return 0;
    }
    char esc[SW__LOG_ESCAPED_SIZE];
    swc__errbuf_printf(errbuf, errlen,
                       "%s: '%s' is not a valid Kafka topic name (1..249 characters of "
                       "[a-zA-Z0-9._-], not '.' or '..')",
                       key, SW__LOG_ESC(esc, name));
    return SW_ECONFIG;
}

/* A topic and the namespace that prefixes it: each valid, and "<ns>-<topic>" within 249. */
static int topic_pair_check(const char *key, const char *topic, const char *fallback,
                            const char *ns, char *errbuf, size_t errlen)
{
    const char *t = topic[0] != '\0' ? topic : fallback;
    if (topic[0] != '\0' && topic_check(key, topic, errbuf, errlen) != 0) {
        return SW_ECONFIG;
    }
    if (ns[0] != '\0' && strlen(ns) + 1 + strlen(t) > TOPIC_NAME_MAX) {
        swc__errbuf_printf(errbuf, errlen,
                           "SW_KAFKA_NAMESPACE + %s: '<namespace>-<topic>' is longer than %d "
                           "characters",
                           key, TOPIC_NAME_MAX);
        return SW_ECONFIG;
    }
    return 0;
}

static int topics_check(const sw_config_t *cfg, char *errbuf, size_t errlen)
{
    if (cfg->kafka_namespace[0] != '\0' &&
        topic_check("SW_KAFKA_NAMESPACE", cfg->kafka_namespace, errbuf, errlen) != 0) {
        return SW_ECONFIG;
    }
    if (topic_pair_check("SW_KAFKA_TOPIC_SEGMENT", cfg->kafka_topic_segment, "skywalking-segments",
                         cfg->kafka_namespace, errbuf, errlen) != 0) {
        return SW_ECONFIG;
    }
    if (topic_pair_check("SW_KAFKA_TOPIC_METER", cfg->kafka_topic_meter, "skywalking-meters",
                         cfg->kafka_namespace, errbuf, errlen) != 0) {
        return SW_ECONFIG;
    }
    if (topic_pair_check("SW_KAFKA_TOPIC_LOGGING", cfg->kafka_topic_logging, "skywalking-logs",
                         cfg->kafka_namespace, errbuf, errlen) != 0) {
        return SW_ECONFIG;
    }
    return topic_pair_check("SW_KAFKA_TOPIC_MANAGEMENT", cfg->kafka_topic_management,
                            "skywalking-managements", cfg->kafka_namespace, errbuf, errlen);
}

/* The producer properties on a throw-away conf, then the producer's own combination check. */
static int producer_check(const sw_config_t *cfg, char *errbuf, size_t errlen)
{
    kp_conf_t *conf = kp_conf_new();
    if (conf == NULL) {
        return SW_ENOMEM;
    }
    const char *servers =
        cfg->kafka_bootstrap_servers[0] != '\0' ? cfg->kafka_bootstrap_servers : "localhost:9092";
    char msg[512];
    int rc = 0;
    if (kp_conf_set(conf, "bootstrap.servers", servers, msg, sizeof msg) != 0) {
        swc__errbuf_printf(errbuf, errlen, "SW_KAFKA_BOOTSTRAP_SERVERS is too long");
        rc = SW_ECONFIG;
    }
    if (rc == 0) {
        rc = sw__producer_config_apply(conf, cfg->kafka_producer_config, errbuf, errlen);
    }
    if (rc == 0 && kp_conf_validate(conf, msg, sizeof msg) != 0) {
        swc__errbuf_printf(errbuf, errlen, "SW_KAFKA_PRODUCER_CONFIG: %s", msg);
        rc = SW_ECONFIG;
    }
    kp_conf_destroy(conf);
    return rc;
}

int sw__config_ca_read(const char *path, char **pem, char *errbuf, size_t errlen)
{
    size_t len;
    int rc = sw__file_read("SW_AGENT_SSL_CA_FILE", path, CA_FILE_MAX, pem, &len, errbuf, errlen);
    if (rc != 0) {
        return rc;
    }
    long count = sw__pem_certificates_count(*pem, len);
    if (count >= 1) {
        return 0;
    }
    char esc[SW__LOG_ESCAPED_SIZE];
    swc__errbuf_printf(errbuf, errlen, "SW_AGENT_SSL_CA_FILE: '%s' %s", SW__LOG_ESC(esc, path),
                       count == 0 ? "holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
                                  : "holds a malformed PEM certificate");
    free(*pem);
    *pem = NULL;
    return SW_ECONFIG;
}

int sw__config_check(const sw_config_t *cfg, char *errbuf, size_t errlen)
{
    if (cfg->backend_services[0] != '\0' &&
        sw__address_list_check("SW_AGENT_COLLECTOR_BACKEND_SERVICES", cfg->backend_services, errbuf,
                               errlen) != 0) {
        return SW_ECONFIG;
    }
    if (cfg->kafka_bootstrap_servers[0] != '\0' &&
        sw__address_list_check("SW_KAFKA_BOOTSTRAP_SERVERS", cfg->kafka_bootstrap_servers, errbuf,
                               errlen) != 0) {
        return SW_ECONFIG;
    }
    int rc = topics_check(cfg, errbuf, errlen);
    if (rc == 0) {
        rc = producer_check(cfg, errbuf, errlen);
    }
    if (rc == 0 && cfg->grpc_ssl_ca_file[0] != '\0') {
        char *pem = NULL;
        rc = sw__config_ca_read(cfg->grpc_ssl_ca_file, &pem, errbuf, errlen);
        free(pem);
    }
    if (rc == 0) {
        char *key = NULL, *chain = NULL;
        rc = sw__config_client_cert_read(cfg, &key, &chain, errbuf, errlen);
        sw__config_secret_free(key);
        free(chain);
    }
    return rc;
}
