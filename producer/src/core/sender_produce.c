/*
 * sender_produce.c - the produce path of the sender (Java: Sender.sendProducerData): drain
 * ready batches per leader node up to max.request.size, stamp them (producer id, epoch,
 * sequence) and close them (compression), one ProduceRequest per node; then handle responses:
 * callbacks, retries with backoff in partition order, expiry after delivery.timeout.ms.
 * Sender thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "swc_clock.h"
#include "core/producer_impl.h"
#include "wire/kafka_error.h"
#include "wire/protocol.h"

void kp__sender_complete(kp_producer_t *p, kp__batch_t *b, int error, int64_t base_offset)
{
    int32_t n = b->rb.count;
    if (b->is_retry) {
        b->part->retrying--;
    }
    if (error == 0 && b->producer_id == p->producer_id) {
        b->part->acked_under_pid = true;
    }
    kp__batch_complete(b, error, b->part->id, base_offset);
    atomic_fetch_add_explicit(error ? &p->st_failed : &p->st_acked, (unsigned long long)n,
                              memory_order_relaxed);
    kp__record_batch_release(&b->rb);
    kp__batch_free(b, p->pool);
    /* acq_rel: the callbacks above happen before a flusher sees pending reach 0. */
    if (atomic_fetch_sub_explicit(&p->pending, n, memory_order_acq_rel) == n) {
        pthread_mutex_lock(&p->done_lock);
        pthread_cond_broadcast(&p->done_cond); /* partner: the waits in kp_flush/kp_close */
        pthread_mutex_unlock(&p->done_lock);
    }
}

/* A batch that failed without being acknowledged: with idempotence its sequence numbers are
 * lost, so the producer id must be renewed before later batches can be accepted in order. */
static void fail_batch(kp_producer_t *p, kp__batch_t *b, int error)
{
    if (p->idempotent && b->base_sequence >= 0) {
        p->need_pid = true;
    }
    kp__sender_complete(p, b, error, -1);
}

static int64_t retry_backoff(kp_producer_t *p, int attempts)
{
    int64_t b = p->conf.retry_backoff_ms;
    for (int i = 1; i < attempts && b < p->conf.retry_backoff_max_ms; i++) {
        b *= 2;
    }
    if (b > p->conf.retry_backoff_max_ms) {
        b = p->conf.retry_backoff_max_ms;
    }
    return b;
}

static void retry_or_fail(kp_producer_t *p, kp__batch_t *b, int error, int64_t now)
{
    if (now - b->created_ms >= p->conf.delivery_timeout_ms) {
        fail_batch(p, b, KP_EDELIVERY_TIMEOUT);
    } else if (b->attempts > p->conf.retries) {
        fail_batch(p, b, error ? error : KP_ERETRIES_EXHAUSTED);
    } else if (atomic_load_explicit(&p->state, memory_order_acquire) == KP__FORCE_CLOSE) {
        fail_batch(p, b, KP_ECLOSED);
    } else {
        b->retry_at_ms = now + retry_backoff(p, b->attempts);
        if (!b->is_retry) {
            b->is_retry = true;
            b->part->retrying++;
        }
        atomic_fetch_add_explicit(&p->st_retried, (unsigned long long)b->rb.count,
                                  memory_order_relaxed);
        kp__accumulator_reenqueue(&p->acc, b);
    }
}

void kp__sender_produce_failed(kp_producer_t *p, kp__request_t *r, int64_t now)
{
    p->produce_in_flight--;
    atomic_fetch_sub_explicit(&p->st_in_flight, 1, memory_order_relaxed);
    for (int i = 0; i < r->n_batches; i++) {
        r->batches[i]->part->in_flight--;
        retry_or_fail(p, r->batches[i], KP_ERETRIES_EXHAUSTED, now);
    }
    r->n_batches = 0;
}

void kp__sender_produce_written(kp_producer_t *p, kp__request_t *r)
{
    /* acks=0: done as soon as the bytes are on the socket; offsets are unknown. */
    p->produce_in_flight--;
    atomic_fetch_sub_explicit(&p->st_in_flight, 1, memory_order_relaxed);
    for (int i = 0; i < r->n_batches; i++) {
        r->batches[i]->part->in_flight--;
        kp__sender_complete(p, r->batches[i], 0, -1);
    }
    r->n_batches = 0;
}

static const kp_produce_partition_response_t *find_response(const kp_produce_response_t *resp,
                                                            const kp__batch_t *b)
{
    for (size_t t = 0; t < resp->n_topics; t++) {
        if (strcmp(resp->topics[t].topic, b->part->topic->name) != 0) {
            continue;
        }
        for (size_t k = 0; k < resp->topics[t].n_partitions; k++) {
            if (resp->topics[t].partitions[k].partition == b->part->id) {
                return &resp->topics[t].partitions[k];
            }
        }
    }
    return NULL;
}

static void handle_batch(kp_producer_t *p, kp__batch_t *b,
                         const kp_produce_partition_response_t *pr, int64_t now)
{
    int16_t code = pr ? pr->error_code : KP_KAFKA_ERR_NETWORK_EXCEPTION;
    kp_kafka_error_class_t cls = kp__kafka_error_classify(code, b->rb.count);
    /* A later batch of a partition whose earlier batch is being retried is answered with
     * OUT_OF_ORDER_SEQUENCE_NUMBER: it is retried after the earlier one, not failed. */
    if (code == KP_KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER && b->part->retrying > 0) {
        cls = KP_KAFKA_ERROR_RETRIABLE;
    }
    /* The same when an earlier batch was failed and left a gap in the sequence: a new
     * producer id is on its way (need_pid), under which this batch is renumbered. */
    if (code == KP_KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER && p->need_pid) {
        cls = KP_KAFKA_ERROR_RETRIABLE;
    }
    switch (cls) {
    case KP_KAFKA_ERROR_SUCCESS:
        kp__sender_complete(p, b, 0, pr->base_offset);
        return;
    case KP_KAFKA_ERROR_RETRIABLE_REFRESH:
        kp__metadata_request_update(&p->md);
        /* fall through */
    case KP_KAFKA_ERROR_RETRIABLE:
        retry_or_fail(p, b, KP_ERETRIES_EXHAUSTED, now);
        return;
    case KP_KAFKA_ERROR_SPLIT:
        /* Like the Java client: split into smaller batches that go first, in order. */
        if (kp__sender_split(p, b, now) != 0) {
            fail_batch(p, b, KP_EMSG_SIZE_TOO_LARGE);
        }
        return;
    default:
        fail_batch(p, b,
                   code == KP_KAFKA_ERR_MESSAGE_TOO_LARGE ? KP_EMSG_SIZE_TOO_LARGE : KP_EBROKER);
        return;
    }
}

/* Whether a decoded response is one a broker could have sent for request r: exactly one
 * answer per batch it carried (no partition missing, none repeated, none it did not ask
 * about), only error codes Kafka defines, an offset on every success, no negative throttle
 * and no bytes left over. Kafka responses carry no checksum; this is the structural part of
 * what a damaged response can be told by. */
static bool response_valid(const kp_producer_t *p, const kp__request_t *r,
                           const kp_produce_response_t *resp, size_t left_over)
{
    size_t answers = 0;
    for (size_t t = 0; t < resp->n_topics; t++) {
        if (!resp->topics[t].topic) {
            return false;
        }
        answers += resp->topics[t].n_partitions;
    }
    if (left_over != 0 || answers != (size_t)r->n_batches || resp->throttle_time_ms < 0) {
        return false;
    }
    for (int i = 0; i < r->n_batches; i++) {
        const kp_produce_partition_response_t *pr = find_response(resp, r->batches[i]);
        if (!pr || !kp__kafka_error_known(pr->error_code)) {
            return false;
        }
        if (pr->error_code == KP_KAFKA_ERR_NONE && p->conf.acks != 0 && pr->base_offset < 0) {
            return false;
        }
    }
    return true;
}

int kp__sender_handle_produce(kp_producer_t *p, kp__conn_t *c, kp__request_t *r, kp_reader_t *body,
                              int64_t now)
{
    kp_produce_response_t resp;
    memset(&resp, 0, sizeof(resp));
    /* Like the Java client's NetworkClient: a response that cannot be decoded or does not
     * answer its request closes the connection, and the request (with every other one in
     * flight on it) is handled as disconnected. No record is completed from it. */
    if (kp__produce_response_read(body, r->version, &resp) != 0 ||
        !response_valid(p, r, &resp, kp__reader_remaining(body))) {
        kp__produce_response_free(&resp);
        kp__sender_produce_failed(p, r, now);
        return KP_EMALFORMED;
    }
    /* KIP-219: the broker answers at once and expects the client to send nothing more on
     * this connection until the throttle time is over. Honoured up to request.timeout.ms
     * (what a request sent to a muted connection would wait at most anyway), so that one
     * damaged value cannot stall a connection for days. */
    if (resp.throttle_time_ms > 0) {
        c->throttle_until_ms =
            now + (resp.throttle_time_ms < p->conf.request_timeout_ms ? resp.throttle_time_ms
                                                                      : p->conf.request_timeout_ms);
    }
    p->produce_in_flight--;
    atomic_fetch_sub_explicit(&p->st_in_flight, 1, memory_order_relaxed);
    for (int i = 0; i < r->n_batches; i++) {
        kp__batch_t *b = r->batches[i];
        b->part->in_flight--;
        handle_batch(p, b, find_response(&resp, b), now);
    }
    r->n_batches = 0;
    kp__produce_response_free(&resp);
    return 0;
}

/* ---- drain and send ---- */

struct drain_ctx {
    kp_producer_t *p;
    int64_t now;
    bool stopped;
    int64_t throttled; /* ms until the earliest throttled leader may be sent to, or INT64_MAX */
};

/* Accumulator callback: takes the batch for its leader's request when the leader's
 * connection can carry one more request and the request stays under max.request.size. */
static bool take_batch(void *arg, kp__partition_t *part, kp__batch_t *b, int32_t leader)
{
    struct drain_ctx *ctx = arg;
    kp_producer_t *p = ctx->p;
    /* Idempotence: at most 5 batches of a partition in flight (the broker checks the last 5;
     * conf.c enforces max.in.flight.requests.per.connection <= 5 with idempotence, and a
     * request carries one batch per partition), and only 1 until a batch of the current
     * producer id was acknowledged. A broker accepts
     * any sequence from a producer id it has no state for: were a second batch in flight
     * when the first is rejected (MESSAGE_TOO_LARGE, to be split), the broker would append
     * the second, and the first's records could only follow it under a new producer id. */
    if (b->attempts == 0 && p->idempotent && !part->acked_under_pid && part->in_flight > 0) {
        return false;
    }
    if (b->attempts == 0 && part->retrying > 0) {
        return false; /* order: retries of this partition go first */
    }
    kp__conn_t *c = kp__sender_conn(p, leader);
    if (!c) {
        kp__metadata_request_update(&p->md); /* a leader we have no address for */
        return false;
    }
    if (c->state != KP__CONN_READY) {
        kp__sender_maybe_connect(p, c, ctx->now);
        return false;
    }
    if (c->in_flight.count >= p->conf.max_in_flight) {
        return false;
    }
    if (c->throttle_until_ms > ctx->now) {
        if (c->throttle_until_ms - ctx->now < ctx->throttled) {
            ctx->throttled = c->throttle_until_ms - ctx->now;
        }
        return false;
    }
    int idx = kp__sender_conn_index(p, leader);
    kp__drain_list_t *d = &p->drain[idx];
    size_t size = b->rb.len;
    if (d->n > 0 && d->bytes + size > (size_t)p->conf.max_request_size) {
        return false;
    }
    if (d->n == d->cap) {
        int cap = d->cap ? d->cap * 2 : 16;
        kp__batch_t **v = realloc(d->v, (size_t)cap * sizeof(*v));
        if (!v) {
            return false;
        }
        d->v = v;
        d->cap = cap;
    }
    d->v[d->n++] = b;
    d->bytes += size;
    part->in_flight++;
    return true;
}

/* Stamps and seals a drained batch. Returns 0 or an error for which the batch is failed. */
static int seal(kp_producer_t *p, kp__batch_t *b)
{
    kp__partition_t *part = b->part;
    int64_t pid = -1;
    int16_t epoch = -1;
    int32_t seq = -1;
    if (p->idempotent) {
        pid = p->producer_id;
        epoch = p->producer_epoch;
        if (b->base_sequence < 0 || b->producer_id != pid) {
            b->base_sequence = part->next_sequence;
            part->next_sequence += b->rb.count;
        }
        seq = b->base_sequence;
        b->producer_id = pid;
        b->producer_epoch = epoch;
    }
    if (b->rb.closed) {
        return kp__record_batch_set_producer(&b->rb, pid, epoch, seq);
    }
    /* conf.compression holds the codec's RecordBatch number (conf.h). */
    kp_batch_compression_t comp = {.type = (kp_compression_t)p->conf.compression, .level = -1};
    return kp__record_batch_close(&b->rb, pid, epoch, seq, &comp);
}

/* Seals every batch drained for one node (an attempt each); a batch that cannot be sealed
 * is failed. Empties the drain list; returns the sealed batches, in drain order, as
 * d->v[0..return value). */
static int seal_drained(kp_producer_t *p, kp__drain_list_t *d)
{
    int n = 0;
    for (int k = 0; k < d->n; k++) {
        kp__batch_t *b = d->v[k];
        b->attempts++;
        if (seal(p, b) != 0) {
            b->part->in_flight--;
            fail_batch(p, b, KP_EINVAL);
            continue;
        }
        d->v[n++] = b;
    }
    d->n = 0;
    d->bytes = 0;
    return n;
}

/* Batches that were taken for a request that could not be built or queued: no longer in
 * flight, each retried after its backoff or failed (retry_or_fail). */
static void requeue_unsent(kp_producer_t *p, kp__batch_t **v, int n, int error, int64_t now)
{
    for (int k = 0; k < n; k++) {
        v[k]->part->in_flight--;
        retry_or_fail(p, v[k], error, now);
    }
}

/* The topic and partition entries of one ProduceRequest, and its batches in the same order. */
struct produce_parts {
    kp__batch_t **batches;              /* n; owned by the request once it is queued */
    kp_produce_partition_data_t *parts; /* n; the entries of a topic are contiguous */
    kp_produce_topic_data_t *topics;    /* n_topics of at most n */
    size_t n_topics;
    size_t bytes; /* the record batches' bytes together */
};

static void produce_parts_free(struct produce_parts *pp)
{
    free(pp->batches);
    free(pp->parts);
    free(pp->topics);
}

/* Groups the sealed batches v[0..n) by topic into pp (allocated for n), in order of each
 * topic's first batch; counts their records as sent. Consumes v (entries become NULL).
 * Returns 0 or KP_ENOMEM (pp is then empty and v untouched). */
static int group_by_topic(kp_producer_t *p, kp__batch_t **v, int n, struct produce_parts *pp)
{
    pp->batches = malloc((size_t)n * sizeof(*pp->batches));
    pp->parts = malloc((size_t)n * sizeof(*pp->parts));
    pp->topics = malloc((size_t)n * sizeof(*pp->topics));
    pp->n_topics = 0;
    pp->bytes = 0;
    if (!pp->batches || !pp->parts || !pp->topics) {
        produce_parts_free(pp);
        return KP_ENOMEM;
    }
    int placed = 0;
    for (int k = 0; k < n; k++) {
        if (!v[k]) {
            continue; /* placed with an earlier batch of its topic */
        }
        kp__topic_acc_t *t = v[k]->part->topic;
        kp_produce_topic_data_t *td = &pp->topics[pp->n_topics++];
        *td = (kp_produce_topic_data_t){t->name, &pp->parts[placed], 0};
        for (int j = k; j < n; j++) {
            kp__batch_t *b = v[j];
            if (!b || b->part->topic != t) {
                continue;
            }
            size_t len = 0;
            const uint8_t *data = kp__record_batch_data(&b->rb, &len);
            pp->parts[placed] = (kp_produce_partition_data_t){b->part->id, data, len};
            pp->batches[placed++] = b;
            td->n_partitions++;
            pp->bytes += len;
            atomic_fetch_add_explicit(&p->st_sent, (unsigned long long)b->rb.count,
                                      memory_order_relaxed);
            v[j] = NULL;
        }
    }
    return 0;
}

/* Writes the ProduceRequest of pp (n batches) and queues it on c, which then owns
 * pp->batches. Returns 0 or the error of the write or of kp__sender_send (the caller still
 * owns pp->batches). */
static int produce_request_send(kp_producer_t *p, kp__conn_t *c, struct produce_parts *pp, int n,
                                int64_t now)
{
    kp_produce_request_t req = {.transactional_id = NULL,
                                .acks = (int16_t)p->conf.acks,
                                .timeout_ms = p->conf.request_timeout_ms,
                                .topics = pp->topics,
                                .n_topics = pp->n_topics};
    kp_writer_t w;
    int rc = kp__writer_init_growable(&w, pp->bytes + 256 + 64 * (size_t)n);
    if (rc != 0) {
        return rc;
    }
    rc = kp__produce_request_write(&w, c->produce_version, &req);
    if (rc == 0) {
        p->produce_in_flight++;
        atomic_fetch_add_explicit(&p->st_in_flight, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->st_batches, (unsigned long long)n, memory_order_relaxed);
        rc = kp__sender_send(p, c, KP_API_PRODUCE, c->produce_version, &w, p->conf.acks != 0,
                             pp->batches, n, now);
        if (rc != 0) {
            p->produce_in_flight--;
            atomic_fetch_sub_explicit(&p->st_in_flight, 1, memory_order_relaxed);
        }
    }
    kp__writer_free(&w);
    return rc;
}

/* Builds and queues the ProduceRequest for conn index i from the batches drained for it. */
static void send_node(kp_producer_t *p, int i, int64_t now)
{
    kp__drain_list_t *d = &p->drain[i];
    int n = seal_drained(p, d);
    if (n == 0) {
        return;
    }
    struct produce_parts pp;
    if (group_by_topic(p, d->v, n, &pp) != 0) {
        requeue_unsent(p, d->v, n, KP_ENOMEM, now);
        return;
    }
    int rc = produce_request_send(p, p->conns[i], &pp, n, now);
    if (rc != 0) {
        requeue_unsent(p, pp.batches, n, rc, now);
        free(pp.batches);
    }
    free(pp.parts);
    free(pp.topics);
}

int64_t kp__sender_send_produce(kp_producer_t *p, int64_t now)
{
    if (p->idempotent && p->need_pid) {
        return 50; /* nothing may go out before the producer id is known */
    }
    struct drain_ctx ctx = {p, now, false, INT64_MAX};
    bool unknown_leader = false;
    int64_t next = kp__accumulator_drain(&p->acc, now, take_batch, &ctx, &unknown_leader);
    if (ctx.throttled < next) {
        next = ctx.throttled;
    }
    if (unknown_leader) {
        kp__metadata_request_update(&p->md);
    }
    for (int i = 0; i < p->n_conns; i++) {
        if (p->drain[i].n > 0) {
            send_node(p, i, now);
        }
    }
    return next;
}

static bool expired_cb(void *arg, kp__batch_t *b)
{
    const struct drain_ctx *ctx = arg;
    return ctx->stopped || ctx->now - b->created_ms >= ctx->p->conf.delivery_timeout_ms;
}

static void expired_done(void *arg, kp__batch_t *b)
{
    struct drain_ctx *ctx = arg;
    fail_batch(ctx->p, b, ctx->stopped ? KP_ECLOSED : KP_EDELIVERY_TIMEOUT);
}

void kp__sender_expire(kp_producer_t *p, int64_t now, bool all)
{
    struct drain_ctx ctx = {p, now, all, INT64_MAX};
    kp__accumulator_expire(&p->acc, expired_cb, expired_done, &ctx);
}

const kp__request_handler_t kp__sender_produce_handler = {
    .response = kp__sender_handle_produce,
    .written = kp__sender_produce_written,
    .failed = kp__sender_produce_failed,
};
