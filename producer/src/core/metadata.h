/*
 * metadata.h - the producer's view of the cluster (Java: ProducerMetadata): brokers, and for each
 * topic the application asked for, its partitions and their leaders; with `version`, `need_update`,
 * refresh backoff and max age, kp__metadata_request_update()/kp__metadata_wait_topic().
 *
 * Threads: application threads (kp_send) call kp__metadata_wait_topic(), which registers the
 * topic and waits; the sender thread is the only writer (kp__metadata_update/_failed). All
 * state is protected by `lock`; the sender thread may read fields it alone writes without the
 * lock, every other thread takes it. Topic entries are allocated once and never move or go
 * away before kp__metadata_destroy(), so a kp__topic_md_t pointer stays valid.
 */
#ifndef KP_CORE_METADATA_H
#define KP_CORE_METADATA_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "wire/protocol.h"

typedef struct kp__node {
    int32_t id;
    char host[256];
    int32_t port;
} kp__node_t;

typedef struct kp__topic_md {
    char *name;
    int16_t error;        /* last Kafka error for the topic (3 = unknown), 0 when known */
    bool answered;        /* a metadata response has mentioned this topic */
    int32_t n_partitions; /* 0 until known */
    int32_t *leaders;     /* n_partitions leader node ids, -1 = leader unknown */
} kp__topic_md_t;

typedef struct kp__metadata {
    pthread_mutex_t lock;
    pthread_cond_t updated; /* broadcast on every update or failure; CLOCK_MONOTONIC */
    int64_t refresh_backoff_ms;
    int64_t max_age_ms;
    /* Protected by lock; written only by the sender thread (except need_update, topics). */
    int version;
    bool need_update;
    bool any_response; /* at least one metadata response arrived */
    int64_t last_refresh_ms;
    int64_t last_success_ms;
    kp__node_t *nodes; /* sorted by id (at most KP_METADATA_MAX_BROKERS) */
    int n_nodes;
    kp__topic_md_t **topics;
    int n_topics;
    int cap_topics;
    bool closed;
    /* KP_EAUTH / KP_ETLS*: the last connection failed authentication, KP_ELIMIT: the last
     * answer was beyond a limit of kproducer.h; waiters for an unknown
     * topic return it at once (the Java client's AuthenticationException from waitOnMetadata).
     * Cleared by the next successful update. */
    int fatal_error;
} kp__metadata_t;

/* Returns 0, or KP_ENOMEM when the condition variable could not be made (*md may still be
 * passed to kp__metadata_destroy). */
int kp__metadata_init(kp__metadata_t *md, int64_t refresh_backoff_ms, int64_t max_age_ms);
void kp__metadata_destroy(kp__metadata_t *md);

/* Marks that a refresh is needed; returns the current version (for await). Any thread. */
int kp__metadata_request_update(kp__metadata_t *md);

/*
 * waitOnMetadata: returns the topic entry (registering the topic) once its partition count is
 * known, waking the sender through wake(wake_arg) whenever it requests an update. Fails after
 * deadline_ms (swc__monotonic_ms clock) with KP_EUNKNOWN_TOPIC when a broker answered without the
 * topic, else KP_EMETADATA_TIMEOUT; KP_ECLOSED once closed; KP_ENOMEM; KP_ELIMIT for a new
 * topic beyond KP_METADATA_MAX_TOPICS; fatal_error (KP_EAUTH, KP_ETLS*, KP_ELIMIT) at once
 * while the topic is unknown. Application threads.
 */
int kp__metadata_wait_topic(kp__metadata_t *md, const char *topic, int64_t deadline_ms,
                            void (*wake)(void *), void *wake_arg, kp__topic_md_t **out,
                            int32_t *n_partitions);

/* Milliseconds until the sender should refresh (0 = now). Sender thread. */
int64_t kp__metadata_time_to_update(kp__metadata_t *md, int64_t now);

/* Copies the registered topic names into a heap array of n heap strings (the caller frees
 * both with kp__metadata_names_free). Sender thread. */
int kp__metadata_topic_names(kp__metadata_t *md, char ***names, int *n);
void kp__metadata_names_free(char **names, int n);

/* Applies a Metadata response: brokers, partitions, leaders (a leader that is not among the
 * brokers counts as unknown); version++, need_update = false, wakes waiters. Sender thread.
 * Returns 0, KP_EMALFORMED for a response that is no possible answer (a topic's partitions
 * not exactly 0..n-1; nothing is changed) or KP_ENOMEM (state then unchanged but refresh is
 * requested again). */
int kp__metadata_update(kp__metadata_t *md, const kp_metadata_response_t *resp, int64_t now);

/* A metadata request failed: backs off refresh_backoff_ms. Sender thread. */
void kp__metadata_failed(kp__metadata_t *md, int64_t now);

/* Sets fatal_error (see above) and wakes the waiters. Sender thread. */
void kp__metadata_fail_waiters(kp__metadata_t *md, int code);

/* Leader node id of topic/partition or -1. Sender thread (reads without the lock). */
int32_t kp__metadata_leader(const kp__topic_md_t *t, int32_t partition);

/* Finds a broker by id (a binary search); NULL when unknown. Sender thread. */
const kp__node_t *kp__metadata_node(const kp__metadata_t *md, int32_t id);

/* Wakes every waiter, which fails with KP_ECLOSED. */
void kp__metadata_close(kp__metadata_t *md);

#endif /* KP_CORE_METADATA_H */
