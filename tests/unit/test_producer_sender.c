/*
 * test_producer_sender.c - the sender's state machine under the broker errors a real broker
 * will not produce on demand, against the scripted broker test double
 * (tests/support/scripted_broker.h): NOT_LEADER_OR_FOLLOWER, OUT_OF_ORDER_SEQUENCE_NUMBER,
 * UNKNOWN_PRODUCER_ID, DUPLICATE_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, REQUEST_TIMED_OUT,
 * throttling, MESSAGE_TOO_LARGE on a multi-record batch, a response with some partitions ok
 * and some failed, a disconnect with 5 requests in flight, and responses that do not answer
 * their request (extra or missing partition, wrong correlation id, truncated, unknown error).
 *
 * Every test checks, besides its own assertions: each callback ran exactly once; every
 * acknowledged record is in the broker's log exactly once, at the offset its callback got;
 * the log of each partition is in send order; and every (producer id, partition, sequence)
 * the broker saw always carried the same record (a resend keeps its sequence numbers).
 * Record values are the decimal record ids.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kproducer.h"
#include "producer_test_util.h"
#include "scripted_broker.h"
#include "test_wait.h"

#define TOPIC       "sb-topic"
#define MAX_RECORDS 2048

typedef struct rec {
    atomic_int calls;
    atomic_int err;
    atomic_llong offset;
    atomic_int partition;
} rec_t;

static rec_t recs[MAX_RECORDS];
static atomic_int script_calls;

static void on_delivery(void *opaque, int error, int32_t partition, int64_t offset)
{
    rec_t *r = opaque;
    atomic_store_explicit(&r->err, error, memory_order_relaxed);
    atomic_store_explicit(&r->offset, offset, memory_order_relaxed);
    atomic_store_explicit(&r->partition, partition, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->calls, 1, memory_order_release);
}

static void reset(void)
{
    memset(recs, 0, sizeof(recs));
    atomic_store(&script_calls, 0);
}

TestSuite(sender, .init = reset);

/* A producer for the scripted broker with short timeouts; kv adds settings (may be NULL). */
static kp_producer_t *producer(sb_broker_t *sb, const char *const *kv)
{
    const char *base[] = {"linger.ms",
                          "5",
                          "batch.size",
                          "200",
                          "request.timeout.ms",
                          "3000",
                          "retry.backoff.ms",
                          "20",
                          "retry.backoff.max.ms",
                          "100",
                          "reconnect.backoff.ms",
                          "10",
                          "reconnect.backoff.max.ms",
                          "50",
                          "delivery.timeout.ms",
                          "15000",
                          "metadata.max.age.ms",
                          "60000",
                          NULL};
    char err[256];
    kp_conf_t *c = kp_conf_new();
    cr_assert_eq(kp_conf_set(c, "bootstrap.servers", sb->bootstrap, err, sizeof(err)), 0);
    for (const char *const *k = base; k[0]; k += 2) {
        cr_assert_eq(kp_conf_set(c, k[0], k[1], err, sizeof(err)), 0, "%s", err);
    }
    for (; kv && kv[0]; kv += 2) {
        cr_assert_eq(kp_conf_set(c, kv[0], kv[1], err, sizeof(err)), 0, "%s", err);
    }
    kp_producer_t *p = NULL;
    int rc = kp_producer_new(c, &p, err, sizeof(err));
    kp_conf_destroy(c);
    cr_assert_eq(rc, KP_OK, "%s: %s", kp_err_name(rc), err);
    return p;
}

static void send_ids(kp_producer_t *p, int32_t partition, long from, long to)
{
    for (long id = from; id < to; id++) {
        char v[24];
        int n = snprintf(v, sizeof(v), "%ld", id);
        cr_assert_eq(
            kp_send(p, TOPIC, partition, NULL, 0, v, (size_t)n, NULL, 0, 0, on_delivery, &recs[id]),
            0, "kp_send of record %ld", id);
    }
}

struct count_arg {
    sb_broker_t *sb;
    int n;
};

static bool requests_at_least(void *arg)
{
    struct count_arg *a = arg;
    sb_lock(a->sb);
    bool ok = a->sb->n_requests >= a->n;
    sb_unlock(a->sb);
    return ok;
}

static void wait_requests(sb_broker_t *sb, int n)
{
    struct count_arg a = {sb, n};
    wait_until(requests_at_least, &a, "the scripted broker has seen enough Produce requests");
}

/* The checks every test makes (see the file comment), for records [0, n). */
static void check_common(sb_broker_t *sb, long n)
{
    sb_lock(sb);
    for (long id = 0; id < n; id++) {
        cr_expect_eq(atomic_load(&recs[id].calls), 1, "record %ld: %d callbacks", id,
                     atomic_load(&recs[id].calls));
        if (atomic_load(&recs[id].err) != 0) {
            continue;
        }
        int32_t k = atomic_load(&recs[id].partition);
        long long off = atomic_load(&recs[id].offset);
        cr_expect(off >= 0 && off < sb->log_len[k] && sb->log[k][off] == id,
                  "record %ld acknowledged at p%d offset %lld, which holds %ld", id, k, off,
                  off >= 0 && off < sb->log_len[k] ? sb->log[k][off] : -1L);
    }
    for (int32_t k = 0; k < sb->n_partitions; k++) {
        for (int64_t i = 1; i < sb->log_len[k]; i++) {
            cr_expect_gt(sb->log[k][i], sb->log[k][i - 1],
                         "p%d offset %lld holds %ld after %ld: duplicate or out of order", k,
                         (long long)i, sb->log[k][i], sb->log[k][i - 1]);
        }
    }
    /* (pid, partition, sequence) -> record id must be a function. */
    for (int a = 0; a < sb->n_requests; a++) {
        for (int i = 0; i < sb->requests[a].n; i++) {
            sb_batch_t *x = &sb->requests[a].batches[i];
            for (int b = a + 1; b < sb->n_requests; b++) {
                for (int j = 0; j < sb->requests[b].n; j++) {
                    sb_batch_t *y = &sb->requests[b].batches[j];
                    if (y->producer_id != x->producer_id || y->partition != x->partition ||
                        x->producer_id < 0) {
                        continue;
                    }
                    for (int r = 0; r < x->count && r < SB_MAX_IDS; r++) {
                        int32_t d = x->base_sequence + r - y->base_sequence;
                        if (d >= 0 && d < y->count && d < SB_MAX_IDS) {
                            cr_expect_eq(x->ids[r], y->ids[d],
                                         "pid %lld p%d seq %d: record %ld in request %d, %ld in "
                                         "request %d",
                                         (long long)x->producer_id, x->partition,
                                         x->base_sequence + r, x->ids[r], a, y->ids[d], b);
                        }
                    }
                }
            }
        }
    }
    sb_unlock(sb);
}

static void finish(kp_producer_t *p, sb_broker_t *sb, long n)
{
    cr_assert_eq(kp_flush(p, 20000), 0, "kp_flush did not finish");
    check_common(sb, n);
    cr_assert_eq(kp_close(p, 5000), 0);
    sb_stop(sb);
}

static int count_errors(sb_broker_t *sb, int16_t code)
{
    int n = 0;
    for (int a = 0; a < sb->n_requests; a++) {
        for (int i = 0; i < sb->requests[a].n; i++) {
            n += sb->requests[a].batches[i].error == code;
        }
    }
    return n;
}

/* The request index after `after` that carries record id first, or -1. */
static int request_with(sb_broker_t *sb, long id, int after)
{
    for (int a = after + 1; a < sb->n_requests; a++) {
        for (int i = 0; i < sb->requests[a].n; i++) {
            if (sb->requests[a].batches[i].ids[0] == id) {
                return a;
            }
        }
    }
    return -1;
}

static void expect_all_ok(long n)
{
    for (long id = 0; id < n; id++) {
        cr_expect_eq(atomic_load(&recs[id].err), 0, "record %ld failed with %s", id,
                     kp_err_name(atomic_load(&recs[id].err)));
    }
}

/* ---- one error on the first request ---- */

static int16_t first_error;
static void inject_first(void *arg, sb_broker_t *sb, sb_request_t *q)
{
    (void)arg;
    (void)sb;
    if (q->index == 0) {
        q->batches[0].inject = first_error;
    }
}

/* A retriable error: the batch goes again with its producer id and sequence numbers. */
static void retried_as_is(int16_t code, bool refreshes)
{
    first_error = code;
    sb_broker_t *sb = sb_start(TOPIC, 1, inject_first, NULL);
    kp_producer_t *p = producer(sb, NULL);
    send_ids(p, 0, 0, 10);
    wait_requests(sb, 1);
    cr_assert_eq(kp_flush(p, 20000), 0);
    sb_lock(sb);
    int md = sb->n_metadata;
    sb_batch_t first = sb->requests[0].batches[0];
    int again = request_with(sb, first.ids[0], 0);
    cr_assert(again > 0, "the batch of request 0 was not sent again");
    sb_batch_t *b = &sb->requests[again].batches[0];
    cr_expect_eq(b->producer_id, first.producer_id);
    cr_expect_eq(b->base_sequence, first.base_sequence, "resent with sequence %d, first %d",
                 b->base_sequence, first.base_sequence);
    cr_expect_eq(b->count, first.count);
    cr_expect_eq(b->error, 0);
    if (refreshes) {
        cr_expect_geq(md, 2, "no metadata refresh after %d", code);
    }
    sb_unlock(sb);
    expect_all_ok(10);
    finish(p, sb, 10);
}

Test(sender, not_leader_is_retried_after_a_metadata_refresh)
{
    retried_as_is(6, true);
}
Test(sender, request_timed_out_is_retried_with_the_same_sequence)
{
    retried_as_is(7, false);
}

/* A fatal producer-id error fails the batch; later records go under a new producer id from
 * sequence 0. */
static void fails_and_renews_pid(int16_t code)
{
    first_error = code;
    sb_broker_t *sb = sb_start(TOPIC, 1, inject_first, NULL);
    kp_producer_t *p = producer(sb, NULL);
    send_ids(p, 0, 0, 5);
    cr_assert_eq(kp_flush(p, 20000), 0);
    send_ids(p, 0, 5, 10);
    cr_assert_eq(kp_flush(p, 20000), 0);
    sb_lock(sb);
    int failed_n = sb->requests[0].batches[0].count;
    int64_t pid0 = sb->requests[0].batches[0].producer_id;
    int later = -1;
    for (int a = 1; a < sb->n_requests && later < 0; a++) {
        if (sb->requests[a].batches[0].producer_id != pid0) {
            later = a;
        }
    }
    cr_assert(later > 0, "no request under a new producer id");
    cr_expect_eq(sb->requests[later].batches[0].base_sequence, 0,
                 "the new producer id starts at sequence %d",
                 sb->requests[later].batches[0].base_sequence);
    cr_expect_eq(sb->n_init_pid, 2);
    sb_unlock(sb);
    for (long id = 0; id < 10; id++) {
        cr_expect_eq(atomic_load(&recs[id].err), id < failed_n ? KP_EBROKER : 0, "record %ld: %s",
                     id, kp_err_name(atomic_load(&recs[id].err)));
    }
    finish(p, sb, 10);
}

Test(sender, unknown_producer_id_fails_the_batch_and_renews_the_id)
{
    fails_and_renews_pid(59);
}
Test(sender, invalid_producer_epoch_fails_the_batch_and_renews_the_id)
{
    fails_and_renews_pid(47);
}

/* ---- five in flight ---- */

/* After request 0 (a first batch, acknowledged: until then only one batch of the partition
 * may be in flight) holds requests 1..4, then: the script's `last` action on request 5.
 * Request 1 gets `first_error` (0: appended). */
static int last_action;
static void five_in_flight(void *arg, sb_broker_t *sb, sb_request_t *q)
{
    (void)arg;
    (void)sb;
    int i = q->index - 1;
    if (i == 0 && first_error) {
        q->batches[0].inject = first_error;
    }
    if (i >= 0 && i < 4) {
        q->action = SB_HOLD;
    } else if (i == 4) {
        q->action = last_action;
    } else if (i == 9 && first_error) {
        q->batches[0].inject = 7; /* the last retry fails once more */
    }
}

/* One acknowledged record, then five single-batch requests of one partition before any
 * answer: records in five rounds, each a full batch (batch.size 200 B holds few of them). */
static long send_five_batches(kp_producer_t *p, sb_broker_t *sb)
{
    send_ids(p, 0, 0, 1);
    cr_assert_eq(kp_flush(p, 20000), 0);
    long id = 1;
    for (int r = 1; r < 6; r++) {
        send_ids(p, 0, id, id + 20);
        id += 20;
        wait_requests(sb, r + 1);
    }
    return id;
}

Test(sender, out_of_order_behind_a_retry_is_retried_in_order)
{
    first_error = 6;
    last_action = SB_RELEASE;
    sb_broker_t *sb = sb_start(TOPIC, 1, five_in_flight, NULL);
    kp_producer_t *p = producer(sb, (const char *[]){"linger.ms", "1000", NULL});
    long n = send_five_batches(p, sb);
    send_ids(p, 0, n, n + 5); /* new records behind the retries */
    n += 5;
    cr_assert_eq(kp_flush(p, 20000), 0);
    sb_lock(sb);
    /* Requests 2..5 were behind the failed one: out of order, and only they. */
    int ooo = count_errors(sb, 45);
    cr_expect_eq(ooo, 4, "%d OUT_OF_ORDER_SEQUENCE_NUMBER answers, expected the 4 held ones", ooo);
    /* Resent in sequence order, each with its first sequence. */
    int32_t last_seq = -1;
    for (int a = 6; a < sb->n_requests; a++) {
        sb_batch_t *b = &sb->requests[a].batches[0];
        cr_expect_geq(b->base_sequence, last_seq, "request %d: sequence %d after %d", a,
                      b->base_sequence, last_seq);
        last_seq = b->base_sequence;
    }
    sb_unlock(sb);
    expect_all_ok(n);
    finish(p, sb, n);
}

Test(sender, disconnect_with_five_in_flight_resends_all_without_duplicates)
{
    first_error = 0;
    last_action = SB_DISCONNECT;
    sb_broker_t *sb = sb_start(TOPIC, 1, five_in_flight, NULL);
    kp_producer_t *p = producer(sb, (const char *[]){"linger.ms", "1000", NULL});
    long n = send_five_batches(p, sb);
    cr_assert_eq(kp_flush(p, 20000), 0);
    sb_lock(sb);
    cr_expect_eq(sb->log_len[0], n, "log holds %lld records, sent %ld", (long long)sb->log_len[0],
                 n);
    /* The five were appended before the connection dropped: each resend is a duplicate. */
    int dup = count_errors(sb, 46);
    cr_expect_eq(dup, 5, "%d DUPLICATE_SEQUENCE_NUMBER answers, expected 5", dup);
    for (int a = 1; a < 6; a++) {
        cr_expect(request_with(sb, sb->requests[a].batches[0].ids[0], 5) > 0,
                  "request %d was not resent", a);
    }
    sb_unlock(sb);
    expect_all_ok(n);
    finish(p, sb, n);
}

/* ---- retries go first ---- */

static void retry_fails_slowly(void *arg, sb_broker_t *sb, sb_request_t *q)
{
    (void)arg;
    (void)sb;
    if (q->index == 1) {
        q->batches[0].inject = 7;
    }
    if (q->index == 2) { /* the retry: fails again, answered 300 ms later */
        q->batches[0].inject = 7;
        q->delay_ms = 300;
    }
}

/* A batch appended behind a retry is not sent while the retry is in flight: had it been, the
 * broker would answer it OUT_OF_ORDER_SEQUENCE_NUMBER when the retry fails again. Record 0
 * goes first and is acknowledged, so that the partition may have 5 batches in flight. */
Test(sender, new_batch_waits_while_a_retry_is_in_flight)
{
    sb_broker_t *sb = sb_start(TOPIC, 1, retry_fails_slowly, NULL);
    kp_producer_t *p =
        producer(sb, (const char *[]){"linger.ms", "50", "batch.size", "16384", "retry.backoff.ms",
                                      "200", "retry.backoff.max.ms", "400", NULL});
    send_ids(p, 0, 0, 1);
    cr_assert_eq(kp_flush(p, 20000), 0);
    send_ids(p, 0, 1, 6);
    wait_requests(sb, 2);
    send_ids(p, 0, 6, 11); /* behind the retry, within its 200 ms backoff */
    cr_assert_eq(kp_flush(p, 20000), 0);
    sb_lock(sb);
    cr_expect_eq(count_errors(sb, 45), 0, "%d OUT_OF_ORDER_SEQUENCE_NUMBER answers",
                 count_errors(sb, 45));
    int a = request_with(sb, 6, 1);
    cr_assert(a > 1);
    int64_t last_retry_answer = -1;
    for (int k = 0; k < a; k++) {
        if (sb->requests[k].batches[0].ids[0] == 1) {
            last_retry_answer = sb->requests[k].answered_ms;
        }
    }
    cr_expect_geq(sb->requests[a].at_ms, last_retry_answer,
                  "the later batch went out before the retry was answered");
    sb_unlock(sb);
    expect_all_ok(11);
    finish(p, sb, 11);
}

/* ---- DUPLICATE_SEQUENCE_NUMBER ---- */

static void disconnect_first(void *arg, sb_broker_t *sb, sb_request_t *q)
{
    (void)arg;
    (void)sb;
    if (q->index == 0) {
        q->action = SB_DISCONNECT;
    }
}

Test(sender, duplicate_sequence_is_success_with_the_original_offset)
{
    sb_broker_t *sb = sb_start(TOPIC, 1, disconnect_first, NULL);
    kp_producer_t *p = producer(sb, NULL);
    send_ids(p, 0, 0, 10);
    cr_assert_eq(kp_flush(p, 20000), 0);
    sb_lock(sb);
    cr_expect_eq(count_errors(sb, 46), 1);
    cr_expect_eq(sb->log_len[0], 10);
    sb_unlock(sb);
    expect_all_ok(10);
    finish(p, sb, 10); /* offsets checked against the log there */
}

/* ---- throttling ---- */

static void throttle_first(void *arg, sb_broker_t *sb, sb_request_t *q)
{
    (void)arg;
    (void)sb;
    if (q->index == 0) {
        q->throttle_ms = 400;
    }
}

Test(sender, throttle_time_is_honoured)
{
    sb_broker_t *sb = sb_start(TOPIC, 1, throttle_first, NULL);
    kp_producer_t *p = producer(sb, NULL);
    send_ids(p, 0, 0, 5);
    wait_requests(sb, 1);
    send_ids(p, 0, 5, 10);
    cr_assert_eq(kp_flush(p, 20000), 0);
    sb_lock(sb);
    cr_assert_geq(sb->n_requests, 2);
    int64_t gap = sb->requests[1].at_ms - sb->requests[0].answered_ms;
    cr_expect_geq(gap, 390, "next Produce %lld ms after a 400 ms throttle", (long long)gap);
    sb_unlock(sb);
    expect_all_ok(10);
    finish(p, sb, 10);
}

/* ---- MESSAGE_TOO_LARGE ---- */

static int too_large_at; /* the request answered MESSAGE_TOO_LARGE */
static void too_large_once(void *arg, sb_broker_t *sb, sb_request_t *q)
{
    (void)arg;
    (void)sb;
    if (q->index == too_large_at && q->batches[0].count > 1) {
        q->batches[0].inject = 10;
    }
    if (too_large_at == 0 && q->index == 0) {
        q->delay_ms = 300; /* time for the batches behind it to go out, if they may */
    }
    if (too_large_at > 0 && q->index == too_large_at) {
        q->action = SB_HOLD; /* until the batch behind it arrives */
    }
    if (too_large_at > 0 && q->index == too_large_at + 1) {
        q->action = SB_RELEASE;
    }
}

/* The first batch of a producer id is split: nothing else of the partition was in flight
 * (one batch until the first is acknowledged), so the pieces keep its producer id and
 * sequences, and the records behind them follow in order. */
Test(sender, message_too_large_on_a_first_batch_keeps_its_sequences)
{
    too_large_at = 0;
    sb_broker_t *sb = sb_start(TOPIC, 1, too_large_once, NULL);
    kp_producer_t *p = producer(sb, (const char *[]){"linger.ms", "1000", NULL});
    send_ids(p, 0, 0, 20);
    wait_requests(sb, 1);
    send_ids(p, 0, 20, 40);
    cr_assert_eq(kp_flush(p, 20000), 0);
    sb_lock(sb);
    sb_batch_t big = sb->requests[0].batches[0];
    cr_assert_gt(big.count, 1);
    cr_expect_eq(big.error, 10);
    cr_expect_eq(count_errors(sb, 45), 0, "%d OUT_OF_ORDER answers", count_errors(sb, 45));
    cr_expect_eq(sb->n_init_pid, 1, "the producer id was renewed");
    int a = request_with(sb, big.ids[0], 0);
    cr_assert(a > 0, "the split batch was not sent again");
    cr_expect_lt(sb->requests[a].batches[0].count, big.count);
    cr_expect_eq(sb->requests[a].batches[0].producer_id, big.producer_id);
    cr_expect_eq(sb->requests[a].batches[0].base_sequence, big.base_sequence);
    sb_unlock(sb);
    expect_all_ok(40);
    finish(p, sb, 40); /* order and exactly-once in the log checked there */
}

/* A later batch is split while the batch behind it is in flight: the broker answers that
 * one OUT_OF_ORDER_SEQUENCE_NUMBER; the pieces go first and the order holds. */
Test(sender, message_too_large_with_a_request_in_flight_keeps_order)
{
    too_large_at = 1;
    sb_broker_t *sb = sb_start(TOPIC, 1, too_large_once, NULL);
    kp_producer_t *p = producer(sb, (const char *[]){"linger.ms", "1000", NULL});
    send_ids(p, 0, 0, 1);
    cr_assert_eq(kp_flush(p, 20000), 0);
    send_ids(p, 0, 1, 21);
    wait_requests(sb, 2);
    send_ids(p, 0, 21, 41);
    wait_requests(sb, 3);
    cr_assert_eq(kp_flush(p, 20000), 0);
    sb_lock(sb);
    sb_batch_t big = sb->requests[1].batches[0];
    cr_assert_gt(big.count, 1);
    cr_expect_eq(big.error, 10);
    cr_expect_eq(sb->requests[2].batches[0].error, 45, "the batch behind: %d",
                 sb->requests[2].batches[0].error);
    int a = request_with(sb, big.ids[0], 2);
    cr_assert(a > 2, "the split batch was not sent again");
    cr_expect_lt(sb->requests[a].batches[0].count, big.count);
    sb_unlock(sb);
    expect_all_ok(41);
    finish(p, sb, 41); /* order and exactly-once in the log checked there */
}

/* ---- partial failure ---- */

static void second_partition_fails(void *arg, sb_broker_t *sb, sb_request_t *q)
{
    (void)arg;
    (void)sb;
    for (int i = 0; i < q->n && q->index == 0; i++) {
        if (q->batches[i].partition == 1) {
            q->batches[i].inject = 6;
        }
    }
}

/*
 * The scenario needs both partitions' batches in the producer's first request, so nothing may
 * become sendable before every record is appended. With linger.ms 200 and the tests'
 * batch.size of 200, partition 0's first batch went alone now and then under TSan (1 to 2
 * runs in 12, holding 2 of its 5 records): it became ready (its linger ran out, or it filled)
 * while the test thread was still appending; a 300 ms pause between the two partitions'
 * sends reproduces it every time. Here each partition's five records fit one batch that
 * lingers for 10 s, so only kp_flush makes both ready, together (the same pause passes).
 */
static kp_producer_t *partial_setup(sb_broker_t **sb_out)
{
    sb_broker_t *sb = sb_start(TOPIC, 2, second_partition_fails, NULL);
    kp_producer_t *p =
        producer(sb, (const char *[]){"linger.ms", "10000", "batch.size", "16384", NULL});
    send_ids(p, 0, 0, 5);
    send_ids(p, 1, 5, 10);
    cr_assert_eq(kp_flush(p, 20000), 0);
    sb_lock(sb);
    cr_assert_eq(sb->requests[0].n, 2, "the first request holds %d batches, not both partitions'",
                 sb->requests[0].n);
    sb_unlock(sb);
    *sb_out = sb;
    return p;
}

Test(sender, partial_response_completes_the_ok_partition_and_retries_the_other)
{
    sb_broker_t *sb = NULL;
    kp_producer_t *p = partial_setup(&sb);
    sb_lock(sb);
    int a = request_with(sb, 5, 0);
    cr_assert(a > 0);
    cr_expect_eq(sb->requests[a].n, 1, "only the failed partition is resent");
    cr_expect_eq(sb->requests[a].batches[0].partition, 1);
    cr_expect_eq(request_with(sb, 0, 0), -1, "the acknowledged partition was resent");
    sb_unlock(sb);
    expect_all_ok(10);
    finish(p, sb, 10);
}

/* ---- responses that do not answer their request ---- */

static int damage_mode;
static void damage_first(void *arg, sb_broker_t *sb, sb_request_t *q)
{
    (void)arg;
    (void)sb;
    if (q->index == 0) {
        q->damage = damage_mode;
    }
}

/* The damaged response closes the connection; the batch (appended) is resent with its
 * sequence and answered as a duplicate, so every record ends acknowledged once at the offset
 * the log has. */
static void damaged_closes_connection(int mode)
{
    damage_mode = mode;
    sb_broker_t *sb = sb_start(TOPIC, 2, damage_first, NULL);
    kp_producer_t *p = producer(sb, (const char *[]){"linger.ms", "100", NULL});
    send_ids(p, 0, 0, 5);
    send_ids(p, 1, 5, 10);
    cr_assert_eq(kp_flush(p, 20000), 0);
    sb_lock(sb);
    cr_expect_geq(sb->n_closed_by_client, 1, "the producer kept the connection");
    cr_expect_eq(sb->log_len[0] + sb->log_len[1], 10);
    sb_unlock(sb);
    expect_all_ok(10);
    finish(p, sb, 10);
}

Test(sender, response_with_an_extra_partition_closes_the_connection)
{
    damaged_closes_connection(SB_DAMAGE_EXTRA_PARTITION);
}
Test(sender, response_missing_a_partition_closes_the_connection)
{
    damaged_closes_connection(SB_DAMAGE_MISSING_PARTITION);
}
Test(sender, response_with_a_wrong_correlation_id_closes_the_connection)
{
    damaged_closes_connection(SB_DAMAGE_CORRELATION);
}
Test(sender, truncated_response_closes_the_connection)
{
    damaged_closes_connection(SB_DAMAGE_TRUNCATED);
}
Test(sender, response_with_an_unknown_error_code_closes_the_connection)
{
    damaged_closes_connection(SB_DAMAGE_UNKNOWN_ERROR);
}

/* A Metadata response that numbers a partition 3000 of 3 is refused (the connection is
 * closed) instead of growing the topic to 3001 partitions for good, in which partition 2 had
 * no leader and never sent again: the root of the wedge seen with corrupted responses. */
Test(sender, metadata_with_an_impossible_partition_is_refused)
{
    sb_broker_t *sb = sb_start(TOPIC, 3, NULL, NULL);
    sb_lock(sb);
    sb->damage_metadata = 1;
    sb_unlock(sb);
    kp_producer_t *p = producer(sb, NULL);
    send_ids(p, 0, 0, 3);
    send_ids(p, 1, 3, 6);
    send_ids(p, 2, 6, 9);
    cr_assert_eq(kp_flush(p, 20000), 0);
    sb_lock(sb);
    cr_expect_geq(sb->n_closed_by_client, 1, "the producer kept the connection");
    cr_expect_eq(sb->log_len[2], 3, "partition 2 got %lld records", (long long)sb->log_len[2]);
    sb_unlock(sb);
    expect_all_ok(9);
    finish(p, sb, 9);
}

/* ---- acks=0 ---- */

Test(sender, acks_0_completes_without_offsets)
{
    sb_broker_t *sb = sb_start(TOPIC, 1, NULL, NULL);
    kp_producer_t *p =
        producer(sb, (const char *[]){"acks", "0", "enable.idempotence", "false", NULL});
    send_ids(p, 0, 0, 10);
    cr_assert_eq(kp_flush(p, 20000), 0);
    for (long id = 0; id < 10; id++) {
        cr_expect_eq(atomic_load(&recs[id].calls), 1);
        cr_expect_eq(atomic_load(&recs[id].err), 0, "record %ld: %s", id,
                     kp_err_name(atomic_load(&recs[id].err)));
        cr_expect_eq(atomic_load(&recs[id].offset), -1);
    }
    struct count_arg a = {sb, 1};
    wait_until(requests_at_least, &a, "the broker got the acks=0 request");
    cr_assert_eq(kp_close(p, 5000), 0);
    sb_stop(sb);
}
