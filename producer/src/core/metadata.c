/*
 * metadata.c - cluster metadata (Java: ProducerMetadata). See metadata.h for the locking rules.
 */
#include "core/metadata.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swc_clock.h"
#include "kproducer.h"

enum { KAFKA_UNKNOWN_TOPIC_OR_PARTITION = 3 };

int kp__metadata_init(kp__metadata_t *md, int64_t refresh_backoff_ms, int64_t max_age_ms)
{
    memset(md, 0, sizeof(*md));
    if (swc__cond_init_monotonic(&md->updated) != 0) {
        return KP_ENOMEM;
    }
    pthread_mutex_init(&md->lock, NULL);
    md->refresh_backoff_ms = refresh_backoff_ms;
    md->max_age_ms = max_age_ms;
    md->need_update = true;
    return 0;
}

void kp__metadata_destroy(kp__metadata_t *md)
{
    for (int i = 0; i < md->n_topics; i++) {
        free(md->topics[i]->name);
        free(md->topics[i]->leaders);
        free(md->topics[i]);
    }
    free(md->topics);
    free(md->nodes);
    pthread_cond_destroy(&md->updated);
    pthread_mutex_destroy(&md->lock);
}

int kp__metadata_request_update(kp__metadata_t *md)
{
    pthread_mutex_lock(&md->lock);
    md->need_update = true;
    int v = md->version;
    pthread_mutex_unlock(&md->lock);
    return v;
}

/* Caller holds lock. */
static kp__topic_md_t *topic_find(kp__metadata_t *md, const char *name)
{
    for (int i = 0; i < md->n_topics; i++) {
        if (strcmp(md->topics[i]->name, name) == 0) {
            return md->topics[i];
        }
    }
    return NULL;
}

/* Caller holds lock. */
static kp__topic_md_t *topic_add(kp__metadata_t *md, const char *name)
{
    if (md->n_topics == md->cap_topics) {
        int cap = md->cap_topics ? md->cap_topics * 2 : 8;
        kp__topic_md_t **t = realloc(md->topics, (size_t)cap * sizeof(*t));
        if (!t) {
            return NULL;
        }
        md->topics = t;
        md->cap_topics = cap;
    }
    kp__topic_md_t *t = calloc(1, sizeof(*t));
    if (!t || !(t->name = strdup(name))) {
        free(t);
        return NULL;
    }
    md->topics[md->n_topics++] = t;
    md->need_update = true;
    return t;
}

int kp__metadata_wait_topic(kp__metadata_t *md, const char *topic, int64_t deadline_ms,
                            void (*wake)(void *), void *wake_arg, kp__topic_md_t **out,
                            int32_t *n_partitions)
{
    pthread_mutex_lock(&md->lock);
    kp__topic_md_t *t = topic_find(md, topic);
    if (!t && md->n_topics >= KP_METADATA_MAX_TOPICS) {
        pthread_mutex_unlock(&md->lock);
        return KP_ELIMIT; /* no broker may answer for more topics than that */
    }
    if (!t && !(t = topic_add(md, topic))) {
        pthread_mutex_unlock(&md->lock);
        return KP_ENOMEM;
    }
    int rc = 0;
    while (t->n_partitions == 0) {
        if (md->closed) {
            rc = KP_ECLOSED;
            break;
        }
        if (md->fatal_error != 0) {
            rc = md->fatal_error;
            break;
        }
        md->need_update = true;
        int version = md->version;
        pthread_mutex_unlock(&md->lock);
        wake(wake_arg);
        pthread_mutex_lock(&md->lock);
        int wrc = 0;
        while (md->version == version && !md->closed && md->fatal_error == 0 && wrc == 0) {
            wrc = swc__cond_wait_until(&md->updated, &md->lock, deadline_ms);
        }
        if (t->n_partitions == 0 && swc__monotonic_ms() >= deadline_ms) {
            rc = (t->answered && t->error == KAFKA_UNKNOWN_TOPIC_OR_PARTITION)
                     ? KP_EUNKNOWN_TOPIC
                     : KP_EMETADATA_TIMEOUT;
            break;
        }
    }
    *out = t;
    *n_partitions = t->n_partitions;
    pthread_mutex_unlock(&md->lock);
    return rc;
}

int64_t kp__metadata_time_to_update(kp__metadata_t *md, int64_t now)
{
    pthread_mutex_lock(&md->lock);
    /* Wanted (also before the first answer): refresh_backoff_ms after the last attempt;
       otherwise metadata.max.age.ms after the last success. */
    int64_t due = md->need_update ? md->last_refresh_ms + md->refresh_backoff_ms
                                  : md->last_success_ms + md->max_age_ms;
    pthread_mutex_unlock(&md->lock);
    return due > now ? due - now : 0;
}

int kp__metadata_topic_names(kp__metadata_t *md, char ***names, int *n)
{
    pthread_mutex_lock(&md->lock);
    int count = md->n_topics;
    char **v = calloc((size_t)count + 1, sizeof(char *));
    int rc = v ? 0 : KP_ENOMEM;
    for (int i = 0; v && i < count; i++) {
        v[i] = strdup(md->topics[i]->name);
        if (!v[i]) {
            rc = KP_ENOMEM;
        }
    }
    pthread_mutex_unlock(&md->lock);
    if (rc != 0) {
        kp__metadata_names_free(v, count);
        return rc;
    }
    *names = v;
    *n = count;
    return 0;
}

void kp__metadata_names_free(char **names, int n)
{
    if (!names) {
        return;
    }
    for (int i = 0; i < n; i++) {
        free(names[i]);
    }
    free(names);
}

/* Fills a topic's partition table from a response entry. Caller holds lock. */
/* Kafka lists every partition of a topic it answers without error exactly once, numbered
 * 0..n-1. A response that does not is damaged; applying it would change the partition count
 * (which never shrinks) for good. */
static bool topic_valid(const kp_metadata_topic_t *rt)
{
    if (rt->error_code != 0) {
        return true;
    }
    size_t n = rt->n_partitions;
    bool *seen = calloc(n ? n : 1, sizeof(bool));
    bool ok = seen != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        int32_t k = rt->partitions[i].partition;
        ok = k >= 0 && (size_t)k < n && !seen[k];
        if (ok) {
            seen[k] = true;
        }
    }
    free(seen);
    return ok;
}

/* Caller holds md->lock, with md->nodes already the response's brokers. A leader that is not
 * among them counts as unknown (a refresh is asked for), as in the Java client's Cluster. */
static int topic_apply(kp__metadata_t *md, kp__topic_md_t *t, const kp_metadata_topic_t *rt)
{
    t->answered = true;
    t->error = rt->error_code;
    if (rt->error_code != 0 || rt->n_partitions == 0) {
        return 0; /* keep what we knew: an error here is answered by a refresh */
    }
    int32_t n = 0;
    for (size_t i = 0; i < rt->n_partitions; i++) {
        if (rt->partitions[i].partition + 1 > n) {
            n = rt->partitions[i].partition + 1;
        }
    }
    int32_t *leaders = malloc((size_t)n * sizeof(int32_t));
    if (!leaders) {
        return KP_ENOMEM;
    }
    for (int32_t i = 0; i < n; i++) {
        leaders[i] = -1;
    }
    for (size_t i = 0; i < rt->n_partitions; i++) {
        const kp_metadata_partition_t *p = &rt->partitions[i];
        if (p->partition >= 0) {
            leaders[p->partition] = p->error_code == 0 || p->leader_id >= 0 ? p->leader_id : -1;
        }
        if (p->partition >= 0 && leaders[p->partition] >= 0 &&
            !kp__metadata_node(md, leaders[p->partition])) {
            leaders[p->partition] = -1;
        }
    }
    /* The partition count never shrinks under records already placed in the accumulator. */
    if (n < t->n_partitions) {
        free(leaders);
        return 0;
    }
    free(t->leaders);
    t->leaders = leaders;
    t->n_partitions = n;
    return 0;
}

static int node_cmp(const void *a, const void *b)
{
    int32_t x = ((const kp__node_t *)a)->id, y = ((const kp__node_t *)b)->id;
    return (x > y) - (x < y);
}

int kp__metadata_update(kp__metadata_t *md, const kp_metadata_response_t *resp, int64_t now)
{
    for (size_t i = 0; i < resp->n_topics; i++) {
        if (!topic_valid(&resp->topics[i])) {
            return KP_EMALFORMED; /* nothing changed */
        }
    }
    kp__node_t *nodes = calloc(resp->n_brokers ? resp->n_brokers : 1, sizeof(*nodes));
    if (!nodes) {
        return KP_ENOMEM;
    }
    size_t n_nodes = 0;
    for (size_t i = 0; i < resp->n_brokers; i++) {
        if (resp->brokers[i].node_id < 0) {
            continue; /* no broker id: negative ids name the bootstrap addresses here */
        }
        kp__node_t *n = &nodes[n_nodes++];
        n->id = resp->brokers[i].node_id;
        n->port = resp->brokers[i].port;
        snprintf(n->host, sizeof(n->host), "%s", resp->brokers[i].host);
    }
    /* Sorted by id: kp__metadata_node() is a binary search (a leader is looked up per
       partition, every partition of every topic on every update). */
    qsort(nodes, n_nodes, sizeof *nodes, node_cmp);
    pthread_mutex_lock(&md->lock);
    free(md->nodes);
    md->nodes = nodes;
    md->n_nodes = (int)n_nodes;
    int rc = 0;
    bool missing_leader = false;
    for (size_t i = 0; i < resp->n_topics; i++) {
        const kp_metadata_topic_t *rt = &resp->topics[i];
        kp__topic_md_t *t = rt->name ? topic_find(md, rt->name) : NULL;
        if (!t) {
            continue;
        }
        if (topic_apply(md, t, rt) != 0) {
            rc = KP_ENOMEM;
        }
        for (int32_t p = 0; p < t->n_partitions; p++) {
            missing_leader |= t->leaders[p] < 0;
        }
    }
    md->any_response = true;
    md->fatal_error = 0;
    md->version++;
    md->last_refresh_ms = now;
    md->last_success_ms = now;
    md->need_update = rc != 0 || missing_leader;
    pthread_cond_broadcast(&md->updated); /* partner: the waits in kp__metadata_wait_topic */
    pthread_mutex_unlock(&md->lock);
    return rc;
}

void kp__metadata_failed(kp__metadata_t *md, int64_t now)
{
    pthread_mutex_lock(&md->lock);
    md->last_refresh_ms = now;
    pthread_mutex_unlock(&md->lock);
}

void kp__metadata_fail_waiters(kp__metadata_t *md, int code)
{
    pthread_mutex_lock(&md->lock);
    md->fatal_error = code;
    pthread_cond_broadcast(&md->updated); /* partner: the waits in kp__metadata_wait_topic */
    pthread_mutex_unlock(&md->lock);
}

int32_t kp__metadata_leader(const kp__topic_md_t *t, int32_t partition)
{
    if (partition < 0 || partition >= t->n_partitions) {
        return -1;
    }
    return t->leaders[partition];
}

const kp__node_t *kp__metadata_node(const kp__metadata_t *md, int32_t id)
{
    kp__node_t key = {.id = id};
    return md->n_nodes > 0 ? bsearch(&key, md->nodes, (size_t)md->n_nodes, sizeof key, node_cmp)
                           : NULL;
}

void kp__metadata_close(kp__metadata_t *md)
{
    pthread_mutex_lock(&md->lock);
    md->closed = true;
    pthread_cond_broadcast(&md->updated);
    pthread_mutex_unlock(&md->lock);
}
