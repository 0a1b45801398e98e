/*
 * test_accumulator.c - RecordAccumulator without a broker: appends fill batches in pool
 * blocks, sticky and keyed partitioning, readiness (full, linger, flush) and drain.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "core/accumulator.h"
#include "swc_clock.h"
#include "wire/murmur2.h"

static kp_buffer_pool_t *pool;
static kp__accumulator_t acc;
static kp__topic_md_t md;
static int32_t leaders[4] = {1, 1, 2, -1};

static void setup(void)
{
    pool = kp__buffer_pool_new(64 * 1024, 4096);
    kp__accumulator_init(&acc, pool, 4096, 0 /* no growth */, 1000000 /* linger: never by time */);
    md = (kp__topic_md_t){.name = "t", .n_partitions = 4, .leaders = leaders};
}

static void teardown(void)
{
    kp__accumulator_destroy(&acc);
    kp__buffer_pool_destroy(pool);
}

static int append(int32_t partition, const char *key, size_t value_len, int32_t *chosen)
{
    static char value[3000];
    bool nb = false;
    return kp__accumulator_append(&acc, &md, 4, partition, 1000, key, key ? strlen(key) : 0, value,
                                  value_len, NULL, 0, NULL, NULL, swc__monotonic_ms() + 1000, &nb,
                                  chosen);
}

struct taken {
    kp__batch_t *b[16];
    int32_t leader[16];
    int n;
    int limit;
};

static bool take(void *arg, kp__partition_t *p, kp__batch_t *b, int32_t leader)
{
    (void)p;
    struct taken *t = arg;
    if (t->n >= t->limit) {
        return false;
    }
    t->b[t->n] = b;
    t->leader[t->n++] = leader;
    return true;
}

static void give_back(struct taken *t)
{
    for (int i = 0; i < t->n; i++) {
        kp__buffer_pool_deallocate(pool, t->b[i], t->b[i]->block_size);
    }
    t->n = 0;
}

static bool always(void *arg, kp__batch_t *b)
{
    (void)arg;
    (void)b;
    return true;
}

static void release(void *arg, kp__batch_t *b)
{
    (void)arg;
    kp__buffer_pool_deallocate(pool, b, b->block_size);
}

TestSuite(accumulator, .init = setup, .fini = teardown);

Test(accumulator, appends_share_the_tail_batch_until_full)
{
    int32_t chosen = -1;
    cr_assert_eq(append(0, NULL, 1000, &chosen), 0);
    cr_assert_eq(append(0, NULL, 1000, &chosen), 0);
    cr_assert_eq(kp__buffer_pool_available(pool), 60 * 1024, "two records, one 4 KiB block");
    cr_assert_eq(append(0, NULL, 1000, &chosen), 0);
    cr_assert_eq(append(0, NULL, 1000, &chosen), 0); /* does not fit: a second batch */
    cr_assert_eq(kp__buffer_pool_available(pool), 56 * 1024);
    cr_assert_eq(acc.n_batches, 2);

    struct taken t = {.limit = 16};
    bool unknown = false;
    kp__accumulator_drain(&acc, swc__monotonic_ms(), take, &t, &unknown);
    cr_assert_eq(t.n, 1, "only the full batch is ready while lingering");
    cr_assert_eq(t.b[0]->rb.count, 3);
    cr_assert_eq(t.leader[0], 1);
    give_back(&t);
    kp__accumulator_begin_flush(&acc);
    kp__accumulator_drain(&acc, swc__monotonic_ms(), take, &t, &unknown);
    kp__accumulator_end_flush(&acc);
    cr_assert_eq(t.n, 1, "flush makes the lingering batch ready");
    give_back(&t);
    cr_assert_eq(kp__buffer_pool_available(pool), 64 * 1024);
}

Test(accumulator, keyed_records_go_to_murmur2_partition)
{
    const char *keys[] = {"a", "segment-1", "segment-2", "xyz"};
    for (int i = 0; i < 4; i++) {
        int32_t chosen = -1;
        cr_assert_eq(append(-1, keys[i], 10, &chosen), 0);
        cr_assert_eq(chosen, kp__murmur2_partition(keys[i], strlen(keys[i]), 4));
    }
    kp__accumulator_begin_flush(&acc);
    struct taken t = {.limit = 16};
    bool unknown = false;
    kp__accumulator_drain(&acc, swc__monotonic_ms(), take, &t, &unknown);
    give_back(&t);
    /* Partition 3 has no leader: its batch stays and the drain says so. */
    if (acc.n_batches > 0) {
        cr_assert(unknown);
    }
    kp__accumulator_expire(&acc, always, release, NULL);
    kp__accumulator_end_flush(&acc);
    cr_assert_eq(acc.n_batches, 0);
    cr_assert_eq(kp__buffer_pool_available(pool), 64 * 1024);
}

Test(accumulator, unkeyed_records_stick_to_a_partition_per_batch)
{
    leaders[3] = 2;
    int32_t first = -1, chosen = -1;
    cr_assert_eq(append(-1, NULL, 1000, &first), 0);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(append(-1, NULL, 1000, &chosen), 0);
        cr_assert_eq(chosen, first, "sticky within a batch");
    }
    cr_assert_eq(append(-1, NULL, 1000, &chosen), 0);
    cr_assert_neq(chosen, first, "a new batch switches the sticky partition");
    kp__accumulator_expire(&acc, always, release, NULL);
    leaders[3] = -1;
}

Test(accumulator, too_many_blocks_time_out_and_bad_partition_fails)
{
    int32_t chosen = -1;
    for (int i = 0; i < 16; i++) {
        cr_assert_eq(append(i % 3, NULL, 3000, &chosen), 0, "append %d", i);
    }
    leaders[3] = -1;
    bool nb = false;
    static char value[3000];
    cr_assert_eq(kp__accumulator_append(&acc, &md, 4, 0, 1000, NULL, 0, value, sizeof(value), NULL,
                                        0, NULL, NULL, swc__monotonic_ms(), &nb, &chosen),
                 KP_EBUFFER_TIMEOUT);
    cr_assert_eq(append(9, NULL, 10, &chosen), KP_EUNKNOWN_PARTITION);
    struct taken t = {.limit = 16};
    bool unknown = false;
    /* Drain limits: the callback refuses after 2; the rest stay queued. */
    t.limit = 2;
    kp__accumulator_drain(&acc, swc__monotonic_ms(), take, &t, &unknown);
    cr_assert_eq(t.n, 2);
    cr_assert_eq(acc.n_batches, 14);
    give_back(&t);
    kp__accumulator_begin_flush(&acc); /* the last batch of each partition is lingering */
    for (int round = 0; round < 8 && acc.n_batches > 0; round++) {
        t.limit = 16;
        kp__accumulator_drain(&acc, swc__monotonic_ms(), take, &t, &unknown);
        give_back(&t);
    }
    kp__accumulator_end_flush(&acc);
    cr_assert_eq(acc.n_batches, 0);
    cr_assert_eq(kp__buffer_pool_available(pool), 64 * 1024);
}

Test(accumulator, partitions_added_to_the_topic_are_used)
{
    /* First use with 4 partitions; then metadata reports 6 (partitions added): partition 5
     * becomes valid, keyed records follow murmur2 over 6, and the old partitions' batches
     * stay where they are. */
    int32_t chosen = -1;
    cr_assert_eq(append(3, NULL, 100, &chosen), 0);
    cr_assert_eq(append(5, NULL, 100, &chosen), KP_EUNKNOWN_PARTITION);
    static int32_t leaders6[6] = {1, 1, 2, 2, 3, 3};
    md.leaders = leaders6;
    md.n_partitions = 6;
    static char value[100];
    bool nb = false;
    cr_assert_eq(kp__accumulator_append(&acc, &md, 6, 5, 1000, NULL, 0, value, sizeof(value), NULL,
                                        0, NULL, NULL, swc__monotonic_ms() + 1000, &nb, &chosen),
                 0);
    cr_assert_eq(chosen, 5);
    /* A key that maps to new partition 4 (impossible with 4 partitions) goes there. */
    char key[16];
    int kl = 0;
    for (int i = 0; i < 1000; i++) {
        kl = snprintf(key, sizeof(key), "key-%d", i);
        if (kp__murmur2_partition(key, (size_t)kl, 6) == 4) {
            break;
        }
    }
    int32_t want = kp__murmur2_partition(key, (size_t)kl, 6);
    cr_assert_eq(want, 4, "no key maps to new partition 4");
    cr_assert_eq(kp__accumulator_append(&acc, &md, 6, -1, 1000, key, (size_t)kl, value,
                                        sizeof(value), NULL, 0, NULL, NULL,
                                        swc__monotonic_ms() + 1000, &nb, &chosen),
                 0);
    cr_assert_eq(chosen, want);
    /* Every batch drains, from the old and the new partitions, with their leaders. */
    kp__accumulator_begin_flush(&acc);
    struct taken t = {.limit = 16};
    bool unknown = false;
    kp__accumulator_drain(&acc, swc__monotonic_ms(), take, &t, &unknown);
    kp__accumulator_end_flush(&acc);
    cr_assert_eq(t.n, 3, "drained %d batches", t.n);
    int32_t seen_parts = 0;
    for (int i = 0; i < t.n; i++) {
        seen_parts |= 1 << t.b[i]->part->id;
        cr_assert_eq(t.leader[i], leaders6[t.b[i]->part->id]);
    }
    cr_assert_eq(seen_parts, (1 << 3) | (1 << 5) | (1 << want));
    give_back(&t);
}

/* Expires batches whose created_ms is below *(int64_t *)arg and counts the calls. */
static int expire_calls;
static bool older_than(void *arg, kp__batch_t *b)
{
    expire_calls++;
    return b->created_ms < *(int64_t *)arg;
}

Test(accumulator, expiry_takes_the_expired_front_and_stops_at_the_first_live_batch)
{
    int32_t chosen = -1;
    for (int i = 0; i < 6; i++) { /* 3000-byte records in 4096-byte batches: 6 batches */
        cr_assert_eq(append(0, NULL, 3000, &chosen), 0);
    }
    cr_assert_eq(acc.n_batches, 6);
    int64_t cut = 100;
    int k = 0;
    for (kp__batch_t *b = acc.topics[0]->parts[0]->head; b; b = b->next) {
        b->created_ms = k++ < 2 ? 50 : 150; /* the two oldest are past the cut */
    }
    expire_calls = 0;
    kp__accumulator_expire(&acc, older_than, release, &cut);
    cr_assert_eq(acc.n_batches, 4, "the two expired front batches are removed");
    cr_assert_eq(expire_calls, 3, "the walk stops at the first batch that has not expired");
    cr_assert_eq(acc.topics[0]->parts[0]->head->created_ms, 150);
    kp__accumulator_expire(&acc, always, release, NULL);
    cr_assert_eq(acc.n_batches, 0);
    cr_assert_null(acc.topics[0]->parts[0]->tail, "an emptied deque has no tail");
    cr_assert_eq(kp__buffer_pool_available(pool), 64 * 1024);
}

static int64_t completed_offsets[64];
static int n_completed;

static void record_done(void *opaque, int error, int32_t partition, int64_t offset)
{
    (void)opaque;
    (void)partition;
    cr_assert_eq(error, 0);
    completed_offsets[n_completed++] = offset;
}

Test(accumulator, a_batch_with_a_backlog_grows_in_pool_blocks_up_to_batch_max_size)
{
    kp__accumulator_destroy(&acc);
    kp__accumulator_init(&acc, pool, 4096, 3 * 4096, 1000000);
    static char value[1000];
    bool nb = false;
    int32_t chosen = -1;
    for (int i = 0; i < 14; i++) {
        memset(value, 'a' + i, sizeof value);
        cr_assert_eq(kp__accumulator_append(&acc, &md, 4, 0, 1000 + i, NULL, 0, value, sizeof value,
                                            NULL, 0, record_done, NULL, swc__monotonic_ms() + 1000,
                                            &nb, &chosen),
                     0);
    }
    kp__partition_t *p = acc.topics[0]->parts[0];
    /* 3 records fill a 4096-byte block. The first batch has no backlog ahead of it: one block.
     * The second has the first ahead of it: it grows to three blocks (9 records). */
    cr_assert_null(p->head->ext_head, "the head batch did not grow");
    cr_assert_eq(p->head->rb.count, 3);
    kp__batch_t *grown = p->head->next;
    cr_assert_eq(grown->total_size, 3 * 4096, "grown to batch.max.size");
    cr_assert_eq(grown->rb.count, 9);
    cr_assert_eq(acc.n_batches, 3, "the third batch opened when the second could not grow");
    cr_assert_eq(kp__buffer_pool_available(pool), 64 * 1024 - 5 * 4096, "5 pool blocks in use");

    /* The grown batch closes into one contiguous RecordBatch with every record in order. */
    cr_assert_eq(kp__record_batch_close(&grown->rb, -1, -1, -1, NULL), 0);
    size_t len = 0;
    const uint8_t *data = kp__record_batch_data(&grown->rb, &len);
    kp_record_batch_reader_t rd;
    cr_assert_eq(kp__record_batch_reader_open(&rd, data, len, len), 0);
    kp_record_view_t rec;
    for (int i = 0; i < 9; i++) {
        cr_assert_eq(kp__record_batch_reader_next(&rd, &rec), 1);
        cr_assert_eq(rec.offset, i);
        cr_assert_eq(rec.timestamp, 1003 + i);
        cr_assert_eq(rec.value[0], 'a' + 3 + i, "record %d comes from block %d", i, i / 3);
    }
    cr_assert_eq(kp__record_batch_reader_next(&rd, &rec), 0);
    kp__record_batch_reader_close(&rd);
    /* Callbacks run once per record in offset order across the blocks. */
    n_completed = 0;
    kp__batch_complete(grown, 0, 0, 100);
    cr_assert_eq(n_completed, 9);
    for (int i = 0; i < 9; i++) {
        cr_assert_eq(completed_offsets[i], 100 + i);
    }

    /* Take the batches out of the deque, then every block goes back to the pool. */
    kp__accumulator_begin_flush(&acc);
    struct taken t = {.limit = 16};
    bool unknown = false;
    kp__accumulator_drain(&acc, swc__monotonic_ms(), take, &t, &unknown);
    cr_assert_eq(t.n, 1, "one batch per partition per drain");
    kp__accumulator_drain(&acc, swc__monotonic_ms(), take, &t, &unknown);
    kp__accumulator_drain(&acc, swc__monotonic_ms(), take, &t, &unknown);
    kp__accumulator_end_flush(&acc);
    cr_assert_eq(t.n, 3);
    for (int i = 0; i < t.n; i++) {
        kp__record_batch_release(&t.b[i]->rb);
        kp__batch_free(t.b[i], pool);
    }
    cr_assert_eq(kp__buffer_pool_available(pool), 64 * 1024);
}
