/*
 * producer.c - the public producer API: kp_producer_new, kp_send (waitOnMetadata, then the
 * accumulator), kp_flush, kp_close, kp_stats.
 */
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "swc_errbuf.h"
#include "swc_clock.h"
#include "core/producer_impl.h"
#include "core/tls.h"

/* Parses bootstrap.servers into the bootstrap connections (node ids -n..-1 as listed). */
static int add_bootstrap(kp_producer_t *p, char *errbuf, size_t errlen)
{
    char list[sizeof(p->conf.bootstrap_servers)];
    memcpy(list, p->conf.bootstrap_servers, sizeof(list));
    char *save = NULL;
    for (char *tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        char *colon = strrchr(tok, ':');
        long port = colon ? strtol(colon + 1, NULL, 10) : 0;
        if (!colon || colon == tok || port <= 0 || port > 65535 ||
            strlen(tok) >= sizeof(((kp__conn_t *)0)->host)) {
            swc__errbuf_printf(errbuf, errlen, "bootstrap.servers: '%s' is not host:port", tok);
            return KP_ECONF;
        }
        kp__conn_t *c = calloc(1, sizeof(*c));
        kp__conn_t **v = realloc(p->conns, (size_t)(p->n_conns + 1) * sizeof(*v));
        kp__drain_list_t *d = realloc(p->drain, (size_t)(p->n_conns + 1) * sizeof(*d));
        if (v) {
            p->conns = v;
        }
        if (d) {
            p->drain = d;
        }
        if (!c || !v || !d) {
            free(c);
            return KP_ENOMEM;
        }
        memset(&p->drain[p->n_conns], 0, sizeof(*d));
        *colon = '\0';
        snprintf(c->host, sizeof(c->host), "%s", tok);
        c->port = (int32_t)port;
        c->fd = -1;
        p->conns[p->n_conns++] = c;
    }
    if (p->n_conns == 0) {
        swc__errbuf_printf(errbuf, errlen, "bootstrap.servers: no address");
        return KP_ECONF;
    }
    /* Ids -n..-1 in the order listed: conns stays sorted by id (sender_conns.c). */
    for (int i = 0; i < p->n_conns; i++) {
        p->conns[i]->node_id = i - p->n_conns;
    }
    p->n_bootstrap = p->n_conns;
    return 0;
}

static void producer_free(kp_producer_t *p)
{
    for (int i = 0; i < p->n_conns; i++) {
        kp__request_t *r;
        while ((r = kp__in_flight_pop(&p->conns[i]->in_flight))) {
            kp__request_free(r);
        }
        kp__tls_free(p->conns[i]);
        if (kp__sender_fd_ours(p->conns[i]->fd, p->conns[i]->sock_ino)) {
            close(p->conns[i]->fd);
        }
        free(p->conns[i]->frame);
        free(p->conns[i]);
        free(p->drain[i].v);
    }
    free(p->conns);
    free(p->drain);
    /* A descriptor the program closed (and may have reused) is not ours to close. */
    if (kp__sender_epoll_ours(p)) {
        close(p->epfd);
    }
    int wakefd = atomic_load_explicit(&p->wakefd, memory_order_relaxed); /* sender joined */
    if (kp__sender_fd_ours(wakefd, p->wakefd_ino)) {
        close(wakefd);
    }
    kp__accumulator_destroy(&p->acc);
    kp__metadata_destroy(&p->md);
    kp__buffer_pool_destroy(p->pool);
    pthread_cond_destroy(&p->done_cond);
    pthread_mutex_destroy(&p->done_lock);
    pthread_mutex_destroy(&p->error_lock);
    kp__tls_ctx_free(p->tls_ctx);
    kp__conf_wipe_secrets(&p->conf);
    OPENSSL_cleanse(p->sasl_password, sizeof p->sasl_password);
    free(p);
}

int kp_producer_new(const kp_conf_t *conf, kp_producer_t **out, char *errbuf, size_t errlen)
{
    char dummy[1];
    if (!errbuf || errlen == 0) {
        errbuf = dummy;
        errlen = sizeof(dummy);
    }
    if (!conf || !out) {
        swc__errbuf_printf(errbuf, errlen, "kp_producer_new: %s must not be NULL",
                           conf ? "out" : "conf");
        return KP_EINVAL;
    }
    *out = NULL;
    int rc = kp_conf_validate(conf, errbuf, errlen);
    if (rc != 0) {
        return rc;
    }
    kp_producer_t *p = calloc(1, sizeof(*p));
    if (!p) {
        swc__errbuf_printf(errbuf, errlen, "out of memory");
        return KP_ENOMEM;
    }
    p->conf = *conf;
    if (p->conf.delivery_timeout_ms < (int64_t)p->conf.linger_ms + p->conf.request_timeout_ms) {
        p->conf.delivery_timeout_ms = p->conf.linger_ms + p->conf.request_timeout_ms;
    }
    p->idempotent = kp__conf_idempotent(&p->conf);
    p->need_pid = p->idempotent;
    p->producer_id = -1;
    p->producer_epoch = -1;
    p->epfd = -1;
    atomic_init(&p->wakefd, -1);
    pthread_mutex_init(&p->done_lock, NULL);
    pthread_mutex_init(&p->error_lock, NULL);
    /* A failed init leaves a zeroed condition variable, which producer_free may destroy. */
    int cond_rc = swc__cond_init_monotonic(&p->done_cond);
    int md_rc = kp__metadata_init(&p->md, p->conf.retry_backoff_ms, p->conf.metadata_max_age_ms);
    p->pool = kp__buffer_pool_new(p->conf.buffer_memory, p->conf.batch_size);
    /* A grown batch is sent alone at most: it never exceeds max.request.size. */
    int32_t grow_to = p->conf.batch_max_size < p->conf.max_request_size ? p->conf.batch_max_size
                                                                        : p->conf.max_request_size;
    kp__accumulator_init(&p->acc, p->pool, p->conf.batch_size, grow_to, p->conf.linger_ms);
    rc = p->pool && cond_rc == 0 && md_rc == 0 ? add_bootstrap(p, errbuf, errlen) : KP_ENOMEM;
    if (rc == 0 && kp__conf_tls(&p->conf)) {
        rc = kp__tls_ctx_new(&p->conf, &p->tls_ctx, errbuf, errlen);
    }
    if (rc == 0 && kp__conf_sasl(&p->conf)) {
        rc = kp__conf_sasl_credentials(&p->conf, p->sasl_username, sizeof p->sasl_username,
                                       p->sasl_password, sizeof p->sasl_password, errbuf, errlen);
    }
    if (rc == 0) {
        rc = kp__sender_epoll_open(p);
    }
    if (rc == 0 && pthread_create(&p->thread, NULL, kp__sender_run, p) != 0) {
        rc = KP_ENOMEM;
    }
    if (rc == 0) {
        pthread_setname_np(p->thread, "kp-sender"); /* for top -H and the tests */
    }
    if (rc != 0) {
        if (rc == KP_ENOMEM) {
            swc__errbuf_printf(errbuf, errlen, "out of memory or file descriptors");
        }
        producer_free(p);
        return rc;
    }
    *out = p;
    return KP_OK;
}

static int send_record(kp_producer_t *p, const char *topic, int32_t partition, const void *key,
                       size_t key_len, const void *value, size_t value_len,
                       const kp_record_header_t *hdrs, size_t n_headers, int64_t timestamp,
                       kp_delivery_cb_t cb, void *opaque);
static int send_with_headers(kp_producer_t *p, const char *topic, int32_t partition,
                             const void *key, size_t key_len, const void *value, size_t value_len,
                             const kp_header_t *headers, size_t n_headers, int64_t timestamp,
                             kp_delivery_cb_t cb, void *opaque);

/*
 * The last step of kp_send: leaves the in_send count, and never touches the producer after
 * that, since kp_close frees it as soon as it sees the count at 0. During a close the count is
 * decremented under done_lock with a broadcast (wait_senders_gone checks it under the same
 * lock, so it cannot free the producer before the unlock). A caller that still saw RUNNING
 * only decrements: a close that began meanwhile notices within wait_senders_gone's poll.
 * (Decrementing first and locking after, as before, let kp_close free the lock in between.)
 */
static void send_leave(kp_producer_t *p)
{
    /* seq_cst: partner of the seq_cst store of `state` in kp_close (see in_send). */
    if (atomic_load_explicit(&p->state, memory_order_seq_cst) == KP__RUNNING) {
        atomic_fetch_sub_explicit(&p->in_send, 1, memory_order_seq_cst);
        return;
    }
    pthread_mutex_lock(&p->done_lock);
    atomic_fetch_sub_explicit(&p->in_send, 1, memory_order_seq_cst);
    pthread_cond_broadcast(&p->done_cond); /* partner: wait_senders_gone in kp_close */
    pthread_mutex_unlock(&p->done_lock);
}

int kp_send(kp_producer_t *p, const char *topic, int32_t partition, const void *key, size_t key_len,
            const void *value, size_t value_len, const kp_header_t *headers, size_t n_headers,
            int64_t timestamp, kp_delivery_cb_t cb, void *opaque)
{
    if (!p || !topic || !*topic || partition < -1 || (n_headers && !headers) || (key_len && !key) ||
        (value_len && !value) || n_headers > 4096) {
        return KP_EINVAL;
    }
    atomic_fetch_add_explicit(&p->in_send, 1, memory_order_seq_cst);
    int rc = KP_ECLOSED;
    /* seq_cst: partner of the seq_cst store in kp_close (see in_send). */
    if (atomic_load_explicit(&p->state, memory_order_seq_cst) == KP__RUNNING) {
        rc = send_with_headers(p, topic, partition, key, key_len, value, value_len, headers,
                               n_headers, timestamp, cb, opaque);
    }
    send_leave(p);
    return rc;
}

static int send_with_headers(kp_producer_t *p, const char *topic, int32_t partition,
                             const void *key, size_t key_len, const void *value, size_t value_len,
                             const kp_header_t *headers, size_t n_headers, int64_t timestamp,
                             kp_delivery_cb_t cb, void *opaque)
{
    kp_record_header_t local[16];
    kp_record_header_t *hdrs = n_headers ? local : NULL;
    if (n_headers > 16 && !(hdrs = malloc(n_headers * sizeof(*hdrs)))) {
        return KP_ENOMEM;
    }
    for (size_t i = 0; i < n_headers; i++) {
        hdrs[i] = (kp_record_header_t){headers[i].key, headers[i].key ? strlen(headers[i].key) : 0,
                                       headers[i].value, headers[i].value_len};
    }
    int rc = send_record(p, topic, partition, key, key_len, value, value_len, hdrs, n_headers,
                         timestamp, cb, opaque);
    if (hdrs != local) {
        free(hdrs);
    }
    return rc;
}

static int send_record(kp_producer_t *p, const char *topic, int32_t partition, const void *key,
                       size_t key_len, const void *value, size_t value_len,
                       const kp_record_header_t *hdrs, size_t n_headers, int64_t timestamp,
                       kp_delivery_cb_t cb, void *opaque)
{
    for (size_t i = 0; i < n_headers; i++) {
        if (!hdrs[i].key) {
            return KP_EINVAL;
        }
    }
    size_t bound = kp__record_batch_size_upper_bound(key_len, value_len, hdrs, n_headers);
    if (bound > (size_t)p->conf.max_request_size ||
        (int64_t)kp__batch_block_size(p->conf.batch_size, bound) > p->conf.buffer_memory) {
        return KP_EMSG_SIZE_TOO_LARGE;
    }
    int64_t deadline = swc__monotonic_ms() + p->conf.max_block_ms;
    if (pthread_equal(pthread_self(), p->thread)) {
        /* A delivery callback: the sender thread is the one that would end a wait for
         * metadata or buffer memory, so kp_send does not wait there (see kproducer.h). */
        deadline = swc__monotonic_ms();
    }
    kp__topic_md_t *md = NULL;
    int32_t n_partitions = 0;
    int rc =
        kp__metadata_wait_topic(&p->md, topic, deadline, kp__producer_wake, p, &md, &n_partitions);
    if (rc != 0) {
        return rc;
    }
    if (timestamp <= 0) {
        timestamp = swc__realtime_ms();
    }
    atomic_fetch_add_explicit(&p->pending, 1, memory_order_relaxed);
    bool new_batch = false;
    int32_t chosen = -1;
    rc = kp__accumulator_append(&p->acc, md, n_partitions, partition, timestamp, key, key_len,
                                value, value_len, hdrs, n_headers, cb, opaque, deadline, &new_batch,
                                &chosen);
    if (rc != 0) {
        atomic_fetch_sub_explicit(&p->pending, 1, memory_order_relaxed);
        return rc;
    }
    if (new_batch) {
        kp__producer_wake(p);
    }
    return 0;
}

/* Waits until nothing is pending or timeout_ms (-1: no limit). Returns 0 or KP_ETIMED_OUT. */
static int wait_pending(kp_producer_t *p, int timeout_ms)
{
    int64_t deadline = swc__deadline_after_ms(timeout_ms);
    int rc = 0;
    pthread_mutex_lock(&p->done_lock);
    while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) {
        if (swc__cond_wait_until(&p->done_cond, &p->done_lock, deadline) == ETIMEDOUT) {
            rc = atomic_load_explicit(&p->pending, memory_order_acquire) > 0 ? KP_ETIMED_OUT : 0;
            break;
        }
    }
    pthread_mutex_unlock(&p->done_lock);
    return rc;
}

/* Waits until no thread is inside kp_send. They leave promptly once kp_close has begun: every
 * wait in kp_send (metadata, buffer memory) is woken with KP_ECLOSED. Re-checks every
 * millisecond besides the broadcasts: a caller that saw RUNNING on its way out leaves without
 * one (send_leave). */
static void wait_senders_gone(kp_producer_t *p)
{
    pthread_mutex_lock(&p->done_lock);
    /* seq_cst: partner of the seq_cst updates in kp_send (see in_send). */
    while (atomic_load_explicit(&p->in_send, memory_order_seq_cst) > 0) {
        (void)swc__cond_wait_until(&p->done_cond, &p->done_lock, swc__deadline_after_ms(1));
    }
    pthread_mutex_unlock(&p->done_lock);
}

int kp_flush(kp_producer_t *p, int timeout_ms)
{
    if (!p) {
        return KP_EINVAL;
    }
    kp__accumulator_begin_flush(&p->acc);
    kp__producer_wake(p);
    int rc = wait_pending(p, timeout_ms);
    kp__accumulator_end_flush(&p->acc);
    return rc;
}

void kp_stop_accepting(kp_producer_t *p)
{
    if (!p) {
        return;
    }
    /* seq_cst: pairs with the seq_cst loads in kp_send (see in_send); also a release for the
     * acquire loads in the sender loop. */
    atomic_store_explicit(&p->state, KP__CLOSING, memory_order_seq_cst);
    kp__accumulator_close(&p->acc);
    /* Wake every kp_send blocked on metadata or buffer memory: it returns KP_ECLOSED. The
     * sender keeps using both (metadata updates, deallocation) until it stops. Each of these
     * steps only sets a flag and wakes waiters, so a second call changes nothing. */
    kp__buffer_pool_close(p->pool);
    kp__metadata_close(&p->md);
}

int kp_close(kp_producer_t *p, int timeout_ms)
{
    if (!p) {
        return KP_EINVAL;
    }
    kp_stop_accepting(p);
    wait_senders_gone(p);
    kp__producer_wake(p);
    int rc = wait_pending(p, timeout_ms);
    atomic_store_explicit(&p->state, KP__FORCE_CLOSE, memory_order_release);
    kp__producer_wake(p);
    pthread_join(p->thread, NULL);
    wait_senders_gone(p); /* a callback's kp_send (sender thread) has left too */
    producer_free(p);
    return rc;
}

void kp_stats(kp_producer_t *p, kp_stats_t *s)
{
    if (!s) {
        return;
    }
    memset(s, 0, sizeof(*s));
    if (!p) {
        return;
    }
    s->records_sent = atomic_load_explicit(&p->st_sent, memory_order_relaxed);
    s->records_acked = atomic_load_explicit(&p->st_acked, memory_order_relaxed);
    s->records_failed = atomic_load_explicit(&p->st_failed, memory_order_relaxed);
    s->records_retried = atomic_load_explicit(&p->st_retried, memory_order_relaxed);
    s->batches_sent = atomic_load_explicit(&p->st_batches, memory_order_relaxed);
    s->bytes_sent = atomic_load_explicit(&p->st_bytes, memory_order_relaxed);
    s->pool_available = kp__buffer_pool_available(p->pool);
    s->pool_waiters = kp__buffer_pool_waiters(p->pool);
    s->requests_in_flight = atomic_load_explicit(&p->st_in_flight, memory_order_relaxed);
}

int kp_last_error(kp_producer_t *p, char *buf, size_t len)
{
    if (!p) {
        return KP_EINVAL;
    }
    pthread_mutex_lock(&p->error_lock);
    int code = p->last_error;
    if (buf && len > 0) {
        snprintf(buf, len, "%s", code ? p->last_error_msg : "");
    }
    pthread_mutex_unlock(&p->error_lock);
    return code;
}
