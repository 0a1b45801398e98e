/*
 * preload_rdkafka.c - librdkafka clients and topic handles (see preload_rdkafka.h).
 *
 * rd_kafka_new is interposed to read the client's bootstrap.servers (or its alias
 * metadata.broker.list) and group.id from the configuration before librdkafka takes it over;
 * rd_kafka_brokers_add fills in the servers of a client created without them. rd_kafka_topic_new
 * remembers which client a topic handle belongs to (librdkafka has no public way back from a
 * rd_kafka_topic_t to its rd_kafka_t), for the calls that name only the topic handle
 * (rd_kafka_produce, rd_kafka_consume). rd_kafka_destroy and rd_kafka_destroy_flags forget the
 * client and its topic handles.
 */
#include "preload_rdkafka.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/core/span_instrument.h"
#include "../src/log/log.h"
#include "preload.h"
#include "preload_handle_map.h"
#include "preload_lock.h"

_Thread_local bool sw__rdkafka_in_call;

typedef struct client_info {
    sw__handle_node_t node; /* first: the map's link, keyed by the rd_kafka_t */
    char servers[SW__RDKAFKA_SERVERS_MAX];
    char group[SW__RDKAFKA_GROUP_MAX];
} client_info_t;

typedef struct topic_info {
    sw__handle_node_t node; /* keyed by the rd_kafka_topic_t */
    rd_kafka_t *rk;
} topic_info_t;

/* What the plugin knows about each client and topic handle; global because librdkafka offers
   no slot for it. SW__PLUGIN_LOCK_RDKAFKA (preload_lock.h) protects both maps and every node. */
static sw__handle_map_t clients;
static sw__handle_map_t topics;

bool sw__rdkafka_fns_resolve(sw__rdkafka_fns_t *f)
{
    SW__PRELOAD_REAL(f->topic_name, "rd_kafka_topic_name");
    SW__PRELOAD_REAL(f->headers_new, "rd_kafka_headers_new");
    SW__PRELOAD_REAL(f->headers_copy, "rd_kafka_headers_copy");
    SW__PRELOAD_REAL(f->headers_destroy, "rd_kafka_headers_destroy");
    SW__PRELOAD_REAL(f->header_add, "rd_kafka_header_add");
    SW__PRELOAD_REAL(f->header_get_last, "rd_kafka_header_get_last");
    SW__PRELOAD_REAL(f->message_headers, "rd_kafka_message_headers");
    SW__PRELOAD_REAL(f->error_code, "rd_kafka_error_code");
    SW__PRELOAD_REAL(f->error_destroy, "rd_kafka_error_destroy");
    SW__PRELOAD_REAL(f->err2str, "rd_kafka_err2str");
    return f->topic_name && f->headers_new && f->headers_copy && f->headers_destroy &&
           f->header_add && f->header_get_last && f->message_headers && f->error_code &&
           f->error_destroy && f->err2str;
}

bool sw__rdkafka_tracing(sw__rdkafka_fns_t *f)
{
    return !sw__rdkafka_in_call && !sw__preload_busy && sw__rdkafka_fns_resolve(f) &&
           sw__preload_agent_ready();
}

void sw__rdkafka_span_error(const sw__rdkafka_fns_t *f, rd_kafka_resp_err_t err)
{
    const char *text = f->err2str(err);
    char esc[SW__LOG_ESCAPED_SIZE];
    sw__log_escape(esc, sizeof esc, text != NULL ? text : "", text != NULL ? strlen(text) : 0);
    sw_span_set_error(true);
    sw_kv_t kv[3] = {{"event", "error"}, {"error.kind", "Kafka"}, {"message", esc}};
    sw_span_log(kv, 3);
}

bool sw__rdkafka_client_get(const rd_kafka_t *rk, char *servers, char *group)
{
    sw__plugin_lock(SW__PLUGIN_LOCK_RDKAFKA);
    const client_info_t *c = (const client_info_t *)sw__handle_map_find(&clients, rk);
    if (servers != NULL) {
        snprintf(servers, SW__RDKAFKA_SERVERS_MAX, "%s", c != NULL ? c->servers : "");
    }
    if (group != NULL) {
        snprintf(group, SW__RDKAFKA_GROUP_MAX, "%s", c != NULL ? c->group : "");
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_RDKAFKA);
    return c != NULL;
}

rd_kafka_t *sw__rdkafka_topic_client(const rd_kafka_topic_t *rkt)
{
    sw__plugin_lock(SW__PLUGIN_LOCK_RDKAFKA);
    const topic_info_t *t = (const topic_info_t *)sw__handle_map_find(&topics, rkt);
    rd_kafka_t *rk = t != NULL ? t->rk : NULL;
    sw__plugin_unlock(SW__PLUGIN_LOCK_RDKAFKA);
    return rk;
}

/* The value of `name` in conf into buf ("" when unset or unreadable; cut at size - 1). */
static void conf_read(rd_kafka_conf_res_t (*get)(const rd_kafka_conf_t *, const char *, char *,
                                                 size_t *),
                      const rd_kafka_conf_t *conf, const char *name, char *buf, size_t size)
{
    buf[0] = '\0';
    size_t need = 0;
    if (conf == NULL || get(conf, name, NULL, &need) != RD_KAFKA_CONF_OK || need == 0) {
        return;
    }
    char *full = malloc(need);
    if (full != NULL && get(conf, name, full, &need) == RD_KAFKA_CONF_OK) {
        snprintf(buf, size, "%s", full);
    }
    free(full);
}

rd_kafka_t *rd_kafka_new(rd_kafka_type_t type, rd_kafka_conf_t *conf, char *errstr,
                         size_t errstr_size)
{
    rd_kafka_t *(*real)(rd_kafka_type_t, rd_kafka_conf_t *, char *, size_t);
    rd_kafka_conf_res_t (*get)(const rd_kafka_conf_t *, const char *, char *, size_t *);
    SW__PRELOAD_REAL(real, "rd_kafka_new");
    SW__PRELOAD_REAL(get, "rd_kafka_conf_get");
    if (real == NULL) {
        if (errstr != NULL && errstr_size > 0) {
            snprintf(errstr, errstr_size, "librdkafka not found");
        }
        return NULL;
    }
    /* Read before the call: librdkafka owns conf once it succeeds. */
    client_info_t *c = get != NULL && !sw__preload_busy ? calloc(1, sizeof *c) : NULL;
    if (c != NULL) {
        conf_read(get, conf, "bootstrap.servers", c->servers, sizeof c->servers);
        conf_read(get, conf, "group.id", c->group, sizeof c->group);
    }
    rd_kafka_t *rk = real(type, conf, errstr, errstr_size);
    if (rk == NULL || c == NULL) {
        free(c);
        return rk;
    }
    c->node.handle = rk;
    sw__plugin_lock(SW__PLUGIN_LOCK_RDKAFKA);
    free(sw__handle_map_take(&clients, rk)); /* a stale record of a freed client's address */
    sw__handle_map_add(&clients, &c->node);
    sw__plugin_unlock(SW__PLUGIN_LOCK_RDKAFKA);
    return rk;
}

int rd_kafka_brokers_add(rd_kafka_t *rk, const char *brokerlist)
{
    int (*real)(rd_kafka_t *, const char *);
    SW__PRELOAD_REAL(real, "rd_kafka_brokers_add");
    if (real == NULL) {
        return 0;
    }
    int n = real(rk, brokerlist);
    if (n > 0 && brokerlist != NULL) {
        sw__plugin_lock(SW__PLUGIN_LOCK_RDKAFKA);
        client_info_t *c = (client_info_t *)sw__handle_map_find(&clients, rk);
        if (c != NULL && c->servers[0] == '\0') {
            snprintf(c->servers, sizeof c->servers, "%s", brokerlist);
        }
        sw__plugin_unlock(SW__PLUGIN_LOCK_RDKAFKA);
    }
    return n;
}

rd_kafka_topic_t *rd_kafka_topic_new(rd_kafka_t *rk, const char *topic, rd_kafka_topic_conf_t *conf)
{
    rd_kafka_topic_t *(*real)(rd_kafka_t *, const char *, rd_kafka_topic_conf_t *);
    SW__PRELOAD_REAL(real, "rd_kafka_topic_new");
    if (real == NULL) {
        return NULL;
    }
    rd_kafka_topic_t *rkt = real(rk, topic, conf);
    if (rkt == NULL) {
        return NULL;
    }
    /* librdkafka hands out the same handle again for the same name (counted): the record is
       kept until its client is destroyed, and rewritten when the address comes back. */
    sw__plugin_lock(SW__PLUGIN_LOCK_RDKAFKA);
    topic_info_t *t = (topic_info_t *)sw__handle_map_get(&topics, rkt, sizeof *t);
    if (t != NULL) {
        t->rk = rk;
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_RDKAFKA);
    return rkt;
}

/* Forgets rk and the topic handles that belong to it. */
static void client_forget(const rd_kafka_t *rk)
{
    sw__plugin_lock(SW__PLUGIN_LOCK_RDKAFKA);
    free(sw__handle_map_take(&clients, rk));
    for (int b = 0; b < SW__HANDLE_MAP_BUCKETS; b++) {
        sw__handle_node_t **pp = &topics.buckets[b];
        while (*pp != NULL) {
            topic_info_t *t = (topic_info_t *)*pp;
            if (t->rk == rk) {
                *pp = t->node.next;
                free(t);
            } else {
                pp = &(*pp)->next;
            }
        }
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_RDKAFKA);
}

void rd_kafka_destroy(rd_kafka_t *rk)
{
    void (*real)(rd_kafka_t *);
    SW__PRELOAD_REAL(real, "rd_kafka_destroy");
    client_forget(rk);
    if (real != NULL) {
        real(rk);
    }
}

void rd_kafka_destroy_flags(rd_kafka_t *rk, int flags)
{
    void (*real)(rd_kafka_t *, int);
    SW__PRELOAD_REAL(real, "rd_kafka_destroy_flags");
    client_forget(rk);
    if (real != NULL) {
        real(rk, flags);
    }
}
