/*
 * preload_rdkafka.h - librdkafka (the Apache Kafka C client) in the preload library (internal):
 * what the producer and consumer halves (preload_rdkafka_produce.c, preload_rdkafka_consume.c)
 * share with the handle bookkeeping of preload_rdkafka.c.
 *
 * Conventions (SkyWalking's Java Kafka plugin): layer MQ; a produced message is an exit span
 * "Kafka/<topic>/Producer", component kafka-producer (40), peer = the client's
 * bootstrap.servers; a consumed message is an entry span "Kafka/<topic>/Consumer/<group.id>",
 * component kafka-consumer (41), that continues the trace of the record's sw8 header; both carry
 * the tags mq.broker (bootstrap.servers) and mq.topic.
 *
 * librdkafka is used through its header only: every function is resolved at run time
 * (rdkafka_fns_resolve), so preloading into a program without librdkafka loads none of it.
 */
#ifndef SW_PRELOAD_RDKAFKA_H
#define SW_PRELOAD_RDKAFKA_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>

#define SW__COMPONENT_KAFKA_PRODUCER 40
#define SW__COMPONENT_KAFKA_CONSUMER 41

/* Longest bootstrap.servers and group.id kept per client (longer values are cut). */
#define SW__RDKAFKA_SERVERS_MAX 512
#define SW__RDKAFKA_GROUP_MAX   256

/* The librdkafka functions the plugin calls itself (never interposed ones). */
typedef struct sw__rdkafka_fns {
    const char *(*topic_name)(const rd_kafka_topic_t *);
    rd_kafka_headers_t *(*headers_new)(size_t);
    rd_kafka_headers_t *(*headers_copy)(const rd_kafka_headers_t *);
    void (*headers_destroy)(rd_kafka_headers_t *);
    rd_kafka_resp_err_t (*header_add)(rd_kafka_headers_t *, const char *, ssize_t, const void *,
                                      ssize_t);
    rd_kafka_resp_err_t (*header_get_last)(const rd_kafka_headers_t *, const char *, const void **,
                                           size_t *);
    rd_kafka_resp_err_t (*message_headers)(const rd_kafka_message_t *, rd_kafka_headers_t **);
    rd_kafka_resp_err_t (*error_code)(const rd_kafka_error_t *);
    void (*error_destroy)(rd_kafka_error_t *);
    const char *(*err2str)(rd_kafka_resp_err_t);
} sw__rdkafka_fns_t;

/* Resolves the functions into *f; false when one is missing (then nothing is traced). Any
   thread. */
bool sw__rdkafka_fns_resolve(sw__rdkafka_fns_t *f);

/* Set while this thread runs inside an interposed librdkafka call: librdkafka's own calls to
   its exported functions are then plain forwards, never traced twice. */
extern _Thread_local bool sw__rdkafka_in_call;

/* Whether a call on this thread is traced now: not nested, the agent not busy, the functions
   resolved (into *f) and the agent running (started on the first traced call). */
bool sw__rdkafka_tracing(sw__rdkafka_fns_t *f);

/*
 * What the plugin knows about client `rk` (captured by rd_kafka_new from its configuration):
 * its bootstrap.servers into servers (SW__RDKAFKA_SERVERS_MAX bytes) and its group.id into
 * group (SW__RDKAFKA_GROUP_MAX bytes; "" when unknown, either may be NULL). Returns whether the
 * client is known. Any thread; takes the plugin lock briefly.
 */
bool sw__rdkafka_client_get(const rd_kafka_t *rk, char *servers, char *group);

/* The client that created topic handle `rkt` with rd_kafka_topic_new, or NULL. */
rd_kafka_t *sw__rdkafka_topic_client(const rd_kafka_topic_t *rkt);

/*
 * Logs an error on the active span: the error flag and {event=error, error.kind=Kafka,
 * message=<librdkafka's text for err>}.
 */
void sw__rdkafka_span_error(const sw__rdkafka_fns_t *f, rd_kafka_resp_err_t err);

#endif /* SW_PRELOAD_RDKAFKA_H */
