/*
 * accumulator.c - RecordAccumulator, as in the Java client. See accumulator.h for the locking
 * rules.
 */
#include "core/accumulator.h"

#include <stdlib.h>
#include <string.h>

#include "swc_clock.h"
#include "wire/murmur2.h"

int kp__accumulator_init(kp__accumulator_t *acc, kp_buffer_pool_t *pool, int32_t batch_size,
                         int32_t batch_max_size, int32_t linger_ms)
{
    memset(acc, 0, sizeof(*acc));
    pthread_mutex_init(&acc->lock, NULL);
    acc->pool = pool;
    acc->batch_size = batch_size;
    acc->batch_max_size = batch_max_size > batch_size ? batch_max_size : batch_size;
    acc->linger_ms = linger_ms;
    acc->rng = 0x9e3779b9u;
    return 0;
}

void kp__accumulator_destroy(kp__accumulator_t *acc)
{
    for (int i = 0; i < acc->n_topics; i++) {
        for (int32_t k = 0; k < acc->topics[i]->n_partitions; k++) {
            free(acc->topics[i]->parts[k]);
        }
        free(acc->topics[i]->parts);
        free(acc->topics[i]->name);
        free(acc->topics[i]);
    }
    free(acc->topics);
    pthread_mutex_destroy(&acc->lock);
}

/* Caller holds lock. */
static uint32_t next_random(kp__accumulator_t *acc)
{
    uint32_t x = acc->rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    acc->rng = x;
    return x;
}

/* Grows t to n partitions (n > t->n_partitions): the partitions added to the topic since it
 * was first used. Keeps the old count when out of memory. Caller holds lock. */
static int topic_grow(kp__topic_acc_t *t, int32_t n)
{
    if (n > t->cap_parts) {
        kp__partition_t **v = realloc(t->parts, (size_t)n * sizeof(*v));
        if (!v) {
            return KP_ENOMEM;
        }
        t->parts = v;
        t->cap_parts = n;
    }
    for (int32_t k = t->n_partitions; k < n; k++) {
        kp__partition_t *p = calloc(1, sizeof(*p));
        if (!p) {
            return KP_ENOMEM;
        }
        p->id = k;
        p->topic = t;
        t->parts[k] = p;
        t->n_partitions = k + 1;
    }
    return 0;
}

/* Finds or creates the accumulator's entry for md's topic, with n partitions (the count in
 * metadata; it only grows). Caller holds lock. */
static kp__topic_acc_t *topic_get(kp__accumulator_t *acc, kp__topic_md_t *md, int32_t n)
{
    for (int i = 0; i < acc->n_topics; i++) {
        kp__topic_acc_t *t = acc->topics[i];
        if (t->md != md) {
            continue;
        }
        if (n > t->n_partitions) {
            (void)topic_grow(t, n); /* on failure the known partitions still work */
        }
        return t;
    }
    if (acc->n_topics == acc->cap_topics) {
        int cap = acc->cap_topics ? acc->cap_topics * 2 : 8;
        kp__topic_acc_t **v = realloc(acc->topics, (size_t)cap * sizeof(*v));
        if (!v) {
            return NULL;
        }
        acc->topics = v;
        acc->cap_topics = cap;
    }
    kp__topic_acc_t *t = calloc(1, sizeof(*t));
    if (!t) {
        return NULL;
    }
    t->name = strdup(md->name);
    t->md = md;
    if (!t->name || topic_grow(t, n) != 0) {
        for (int32_t k = 0; k < t->n_partitions; k++) {
            free(t->parts[k]);
        }
        free(t->parts);
        free(t->name);
        free(t);
        return NULL;
    }
    t->sticky = (int32_t)(next_random(acc) % (uint32_t)n);
    acc->topics[acc->n_topics++] = t;
    return t;
}

struct record {
    int64_t timestamp;
    const void *key;
    size_t key_len;
    const void *value;
    size_t value_len;
    const kp_record_header_t *headers;
    size_t n_headers;
    kp_delivery_cb_t cb;
    void *opaque;
};

/* Whether the tail batch may take one more block of batch.size: an older batch of its
 * partition waits ahead of it (a backlog), it is a pool batch that was never sent, and it
 * stays within batch.max.size. Caller holds lock. */
static bool may_grow(const kp__accumulator_t *acc, const kp__partition_t *p,
                     const kp__batch_t *tail)
{
    return tail != p->head && !tail->heap && tail->attempts == 0 &&
           tail->total_size + acc->batch_size <= acc->batch_max_size;
}

/* Appends to the tail batch if there is one with room. A tail without room is marked full
 * unless it may grow. Caller holds lock. */
static bool try_tail(kp__accumulator_t *acc, kp__partition_t *p, const struct record *r)
{
    kp__batch_t *tail = p->tail;
    if (!tail || tail->full) {
        return false;
    }
    if (kp__batch_try_append(tail, r->timestamp, r->key, r->key_len, r->value, r->value_len,
                             r->headers, r->n_headers, r->cb, r->opaque) == 0) {
        return true;
    }
    if (!may_grow(acc, p, tail)) {
        tail->full = true;
    }
    return false;
}

/* True when p's tail batch is open and may grow (try_tail left it not full). */
static bool tail_growable(const kp__partition_t *p)
{
    return p->tail && !p->tail->full;
}

/* Links a new batch at the tail. Caller holds lock. */
static void push_tail(kp__accumulator_t *acc, kp__partition_t *p, kp__batch_t *b)
{
    b->ordinal = p->next_ordinal++;
    b->next = NULL;
    if (p->tail) {
        p->tail->next = b;
    } else {
        p->head = b;
    }
    p->tail = b;
    acc->n_batches++;
}

int kp__accumulator_append(kp__accumulator_t *acc, kp__topic_md_t *md, int32_t n_partitions,
                           int32_t partition, int64_t timestamp, const void *key, size_t key_len,
                           const void *value, size_t value_len, const kp_record_header_t *headers,
                           size_t n_headers, kp_delivery_cb_t cb, void *opaque, int64_t deadline_ms,
                           bool *new_batch, int32_t *chosen)
{
    struct record r = {timestamp, key, key_len, value, value_len, headers, n_headers, cb, opaque};
    *new_batch = false;
    pthread_mutex_lock(&acc->lock);
    kp__topic_acc_t *t = topic_get(acc, md, n_partitions);
    if (!t) {
        pthread_mutex_unlock(&acc->lock);
        return KP_ENOMEM;
    }
    bool sticky = partition < 0 && !key;
    if (partition < 0 && key) {
        partition = kp__murmur2_partition(key, key_len, t->n_partitions);
    }
    if (partition >= t->n_partitions) {
        pthread_mutex_unlock(&acc->lock);
        return KP_EUNKNOWN_PARTITION;
    }
    if (sticky) {
        partition = t->sticky;
        if (try_tail(acc, t->parts[partition], &r)) {
            *chosen = partition;
            pthread_mutex_unlock(&acc->lock);
            return 0;
        }
        if (t->n_partitions > 1 && !tail_growable(t->parts[partition])) {
            /* The sticky batch is done: switch partition (Java's onNewBatch). */
            int32_t next = (int32_t)(next_random(acc) % (uint32_t)(t->n_partitions - 1));
            t->sticky = next >= partition ? next + 1 : next;
            partition = t->sticky;
        }
    }
    kp__partition_t *p = t->parts[partition];
    *chosen = partition;
    if (try_tail(acc, p, &r)) {
        pthread_mutex_unlock(&acc->lock);
        return 0;
    }
    pthread_mutex_unlock(&acc->lock);

    /* Slow path: a new batch from the pool, without holding the lock while blocking. */
    size_t bound = kp__record_batch_size_upper_bound(key_len, value_len, headers, n_headers);
    int32_t size = kp__batch_block_size(acc->batch_size, bound);
    int64_t wait = deadline_ms - swc__monotonic_ms();
    void *block = NULL;
    int rc = kp__buffer_pool_allocate(acc->pool, size, wait > 0 ? wait : 0, &block);
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&acc->lock);
    if (acc->closing) {
        rc = KP_ECLOSED;
    } else if (try_tail(acc, p, &r)) {
        rc = 0; /* another thread opened a batch or grew the tail meanwhile */
    } else if (size == acc->batch_size && tail_growable(p)) {
        kp__batch_grow(p->tail, block, size);
        block = NULL;
        rc = kp__batch_try_append(p->tail, timestamp, key, key_len, value, value_len, headers,
                                  n_headers, cb, opaque);
        if (rc != 0) {
            p->tail->full = true; /* not reached: a block that fits a new batch fits the record */
        }
    } else {
        kp__batch_t *b = kp__batch_init(block, size, p, swc__monotonic_ms(), timestamp);
        rc = kp__batch_try_append(b, timestamp, key, key_len, value, value_len, headers, n_headers,
                                  cb, opaque);
        if (rc == 0) {
            push_tail(acc, p, b);
            block = NULL;
            *new_batch = true;
        }
    }
    pthread_mutex_unlock(&acc->lock);
    if (block) {
        kp__buffer_pool_deallocate(acc->pool, block, size);
    }
    return rc;
}

/* Whether partition p's head batch may be sent now; else the ms until it may (or -1 when it
 * waits for something else). Caller holds lock. */
static int64_t head_ready_in(kp__accumulator_t *acc, kp__partition_t *p, int64_t now)
{
    kp__batch_t *b = p->head;
    if (b->attempts > 0) {
        if (p->in_flight > 0) {
            return -1; /* a retry waits for its partition's in-flight batches */
        }
        return b->retry_at_ms > now ? b->retry_at_ms - now : 0;
    }
    if (b->full || b->next || acc->flushing > 0 || acc->closing) {
        return 0;
    }
    int64_t due = b->created_ms + acc->linger_ms;
    return due > now ? due - now : 0;
}

int64_t kp__accumulator_drain(kp__accumulator_t *acc, int64_t now,
                              bool (*take)(void *, kp__partition_t *, kp__batch_t *, int32_t),
                              void *arg, bool *unknown_leader)
{
    int64_t next = INT64_MAX;
    pthread_mutex_lock(&acc->lock);
    for (int i = 0; i < acc->n_topics; i++) {
        kp__topic_acc_t *t = acc->topics[i];
        for (int32_t k = 0; k < t->n_partitions; k++) {
            kp__partition_t *p = t->parts[k];
            if (!p->head) {
                continue;
            }
            int64_t in = head_ready_in(acc, p, now);
            if (in != 0) {
                if (in > 0 && in < next) {
                    next = in;
                }
                continue;
            }
            int32_t leader = kp__metadata_leader(t->md, k);
            if (leader < 0) {
                *unknown_leader = true;
                continue;
            }
            kp__batch_t *b = p->head;
            if (!take(arg, p, b, leader)) {
                continue;
            }
            p->head = b->next;
            if (!p->head) {
                p->tail = NULL;
            }
            b->next = NULL;
            b->full = true;
            acc->n_batches--;
        }
    }
    pthread_mutex_unlock(&acc->lock);
    return next;
}

void kp__accumulator_reenqueue(kp__accumulator_t *acc, kp__batch_t *b)
{
    pthread_mutex_lock(&acc->lock);
    kp__partition_t *p = b->part;
    kp__batch_t **link = &p->head;
    while (*link && (*link)->attempts > 0 && (*link)->ordinal < b->ordinal) {
        link = &(*link)->next;
    }
    b->next = *link;
    *link = b;
    if (!b->next) {
        p->tail = b;
    }
    acc->n_batches++;
    pthread_mutex_unlock(&acc->lock);
}

void kp__accumulator_expire(kp__accumulator_t *acc, bool (*expired)(void *, kp__batch_t *),
                            void (*done)(void *, kp__batch_t *), void *arg)
{
    kp__batch_t *out = NULL;
    pthread_mutex_lock(&acc->lock);
    for (int i = 0; i < acc->n_topics; i++) {
        kp__topic_acc_t *t = acc->topics[i];
        for (int32_t k = 0; k < t->n_partitions; k++) {
            kp__partition_t *p = t->parts[k];
            /* A deque is in creation order (retries go back in by ordinal), so the first
             * batch that has not expired ends the walk, as in the Java client's
             * RecordAccumulator.expiredBatches. */
            while (p->head && expired(arg, p->head)) {
                kp__batch_t *b = p->head;
                p->head = b->next;
                if (!p->head) {
                    p->tail = NULL;
                }
                acc->n_batches--;
                b->next = out;
                out = b;
            }
        }
    }
    pthread_mutex_unlock(&acc->lock);
    while (out) {
        kp__batch_t *b = out;
        out = b->next;
        b->next = NULL;
        done(arg, b);
    }
}

void kp__accumulator_begin_flush(kp__accumulator_t *acc)
{
    pthread_mutex_lock(&acc->lock);
    acc->flushing++;
    pthread_mutex_unlock(&acc->lock);
}

void kp__accumulator_end_flush(kp__accumulator_t *acc)
{
    pthread_mutex_lock(&acc->lock);
    acc->flushing--;
    pthread_mutex_unlock(&acc->lock);
}

void kp__accumulator_close(kp__accumulator_t *acc)
{
    pthread_mutex_lock(&acc->lock);
    acc->closing = true;
    pthread_mutex_unlock(&acc->lock);
}
