/*
 * sender_split.c - MESSAGE_TOO_LARGE on a batch of several records: split it and retry, as
 * the Java client's RecordAccumulator.splitAndReenqueue does, instead of failing records that
 * would fit on their own. Sender thread only.
 *
 * Each piece holds at most half of the original's record bytes (and at most batch.size), so
 * every split makes progress: a piece that is still too large is split again, down to
 * one-record batches, for which MESSAGE_TOO_LARGE is final. Pieces keep the original's
 * creation time (delivery.timeout.ms), producer id and sequence numbers (base sequence +
 * record index: the broker rejected the whole batch, so those numbers are still unused), its
 * callbacks and their order. They live in malloc'd blocks outside the BufferPool (the sender
 * must never wait for pool memory; the original's block is returned at once, so the extra
 * memory is transient), like the Java client's heap buffers for split batches.
 */
#include <stdlib.h>
#include <string.h>

#include "core/producer_impl.h"

/* Slack per piece: re-encoded offset deltas are never longer than the original ones, but the
 * allocation need not be that tight. */
#define PIECE_SLACK 64

typedef struct piece {
    int32_t count;
    size_t bytes; /* encoded record bytes */
} piece_t;

/* Plans the pieces: record sizes from the reader positions. Returns the piece count or a
 * negative error. */
static int plan_pieces(const kp__batch_t *b, size_t target, piece_t **out)
{
    size_t len = 0;
    const uint8_t *data = kp__record_batch_data(&b->rb, &len);
    kp_record_batch_reader_t rd;
    int rc = kp__record_batch_reader_open(&rd, data, len, b->rb.len);
    if (rc != 0) {
        return rc;
    }
    piece_t *v = calloc((size_t)b->rb.count, sizeof(*v));
    int n = 0;
    kp_record_view_t rec;
    size_t pos = rd.records.pos;
    while (v && (rc = kp__record_batch_reader_next(&rd, &rec)) == 1) {
        size_t size = rd.records.pos - pos;
        pos = rd.records.pos;
        if (n == 0 || (v[n - 1].count > 0 && v[n - 1].bytes + size > target)) {
            n++;
        }
        v[n - 1].count++;
        v[n - 1].bytes += size;
    }
    kp__record_batch_reader_close(&rd);
    if (!v) {
        return KP_ENOMEM;
    }
    if (rc != 0 || n < 2) {
        free(v);
        return rc != 0 ? rc : KP_EINVAL;
    }
    *out = v;
    return n;
}

static kp__batch_t *piece_new(const kp__batch_t *b, const piece_t *pc)
{
    size_t size = KP__BATCH_HEADER + KP_RECORD_BATCH_HEADER_SIZE + pc->bytes +
                  (size_t)pc->count * sizeof(kp__thunk_t) + PIECE_SLACK;
    /* Thunks are laid out down from the block's end: keep that end aligned for them. */
    size = (size + _Alignof(kp__thunk_t) - 1) & ~(_Alignof(kp__thunk_t) - 1);
    void *block = malloc(size);
    if (!block) {
        return NULL;
    }
    kp__batch_t *q =
        kp__batch_init(block, (int32_t)size, b->part, b->created_ms, b->rb.base_timestamp);
    q->heap = true;
    q->ordinal = b->ordinal;
    q->attempts = b->attempts;
    q->producer_id = b->producer_id;
    q->producer_epoch = b->producer_epoch;
    q->full = true;
    return q;
}

/* Appends one record of the original (with its callback) to piece q. */
static int copy_record(kp__batch_t *q, kp_record_view_t *rec, const kp__thunk_t *t)
{
    kp_record_header_t local[16], *h = local;
    if (rec->n_headers > 16 && !(h = malloc((size_t)rec->n_headers * sizeof(*h)))) {
        return KP_ENOMEM;
    }
    int rc = 0;
    for (int32_t i = 0; i < rec->n_headers && rc == 0; i++) {
        rc = kp__record_view_next_header(rec, &h[i]) == 1 ? 0 : KP_EMALFORMED;
    }
    if (rc == 0) {
        rc = kp__batch_try_append(
            q, rec->timestamp, rec->key, rec->key_len < 0 ? 0 : (size_t)rec->key_len, rec->value,
            rec->value_len < 0 ? 0 : (size_t)rec->value_len, rec->n_headers ? h : NULL,
            (size_t)rec->n_headers, t->cb, t->opaque);
    }
    if (h != local) {
        free(h);
    }
    return rc;
}

static void free_pieces(kp__batch_t **pieces, int n)
{
    for (int i = 0; i < n; i++) {
        free(pieces[i]);
    }
    free(pieces);
}

/* Builds the pieces of b as planned. Returns 0 or a negative error (nothing allocated). */
static int build_pieces(const kp__batch_t *b, const piece_t *plan, int n, kp__batch_t ***out)
{
    kp__batch_t **pieces = calloc((size_t)n, sizeof(*pieces));
    if (!pieces) {
        return KP_ENOMEM;
    }
    size_t len = 0;
    const uint8_t *data = kp__record_batch_data(&b->rb, &len);
    kp_record_batch_reader_t rd;
    int rc = kp__record_batch_reader_open(&rd, data, len, b->rb.len);
    if (rc != 0) {
        free(pieces);
        return rc;
    }
    int32_t index = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        if (!(pieces[i] = piece_new(b, &plan[i]))) {
            rc = KP_ENOMEM;
            break;
        }
        if (b->base_sequence >= 0) {
            pieces[i]->base_sequence = b->base_sequence + index;
        }
        for (int32_t k = 0; k < plan[i].count && rc == 0; k++, index++) {
            kp_record_view_t rec;
            rc = kp__record_batch_reader_next(&rd, &rec) == 1 ? 0 : KP_EMALFORMED;
            if (rc == 0) {
                rc = copy_record(pieces[i], &rec, kp__batch_thunk((kp__batch_t *)b, index));
            }
        }
    }
    kp__record_batch_reader_close(&rd);
    if (rc != 0) {
        free_pieces(pieces, n);
        return rc;
    }
    *out = pieces;
    return 0;
}

int kp__sender_split(kp_producer_t *p, kp__batch_t *b, int64_t now)
{
    if (b->rb.count < 2 || !b->rb.closed) {
        return KP_EINVAL;
    }
    size_t records = b->rb.len - KP_RECORD_BATCH_HEADER_SIZE;
    size_t target = records / 2;
    if (target > (size_t)p->conf.batch_size) {
        target = (size_t)p->conf.batch_size;
    }
    if (target == 0) {
        target = 1;
    }
    piece_t *plan = NULL;
    int n = plan_pieces(b, target, &plan);
    if (n < 0) {
        return n;
    }
    kp__batch_t **pieces = NULL;
    int rc = build_pieces(b, plan, n, &pieces);
    free(plan);
    if (rc != 0) {
        return rc;
    }
    /* The pieces take the original's place: count them as retries, in reverse so that each
     * one lands in front of the next (reenqueue puts a batch before equal ordinals). */
    for (int i = n - 1; i >= 0; i--) {
        pieces[i]->is_retry = true;
        pieces[i]->retry_at_ms = now;
        b->part->retrying++;
        kp__accumulator_reenqueue(&p->acc, pieces[i]);
    }
    free(pieces);
    /* Later batches of the partition already carry higher sequence numbers and may be in
     * flight. The broker has state for this producer id on the partition (take_batch lets
     * a second batch go only after one was acknowledged), so it answered them
     * OUT_OF_ORDER_SEQUENCE_NUMBER and they are retried after the pieces. The pieces'
     * numbers no longer line up with those later batches': a new producer id renumbers all
     * of them in their partition order (seal() renumbers a batch whose producer id is
     * stale). */
    if (p->idempotent && b->base_sequence >= 0 &&
        b->part->next_sequence != b->base_sequence + b->rb.count) {
        p->need_pid = true;
    }
    atomic_fetch_add_explicit(&p->st_retried, (unsigned long long)b->rb.count,
                              memory_order_relaxed);
    if (b->is_retry) {
        b->part->retrying--;
    }
    kp__record_batch_release(&b->rb);
    kp__batch_free(b, p->pool);
    return 0;
}
