/*
 * test_chunk.c - the chunks that carry encoded segments to the consumer (encode/chunk.h): the
 * record bytes (the same as sw__encode_segment's, which test_segment_encode proves identical
 * to protobuf-c's), the biased count in both orders, sealing a full chunk, the cap in units,
 * records larger than a chunk, holding credits, taking a record back, and a race of owner
 * threads against a consumer thread through a real DataCarrier (checked record by record).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datacarrier.h"
#include "encode/chunk.h"

/* The statement's bytes: no length or key byte next to it can have this value (lengths here are
   10..0x7f or encode as 0x80..0xd1 then 0x01; no key is 0x02), so its run in the record is
   exactly its length. An ASCII byte: the arena makes every string valid UTF-8 (util/utf8.h),
   so a byte such as 0xff would arrive as '?'. */
#define FILL 0x02

static sw__segment_t *segment_new(uint32_t arena_cap)
{
    size_t size = sw__segment_block_size(4, arena_cap);
    cr_assert_neq(size, 0);
    sw__segment_t *seg = aligned_alloc(64, (size + 63) & ~(size_t)63);
    cr_assert_not_null(seg);
    sw__segment_format(seg, 4, arena_cap);
    return seg;
}

/* One exit span with a statement tag of `statement_len` bytes, and the given segment id. */
static void segment_fill(sw__segment_t *seg, const char *segment_id, size_t statement_len)
{
    sw__segment_reset(seg);
    snprintf(seg->trace_id, sizeof seg->trace_id, "trace.%s", segment_id);
    snprintf(seg->segment_id, sizeof seg->segment_id, "%s", segment_id);
    sw__span_t *sp = &seg->spans[seg->span_count++];
    memset(sp, 0, sizeof *sp);
    sp->start_ms = 1700000000123;
    sp->end_ms = 1700000000456;
    sp->parent_id = -1;
    sp->type = SW_SPAN_EXIT;
    sp->operation = sw__segment_strdup_len(seg, "PostgreSQL/libpq/PQexec", &sp->operation_len);
    sp->peer = sw__segment_strdup_len(seg, "/tmp/.s.PGSQL.5432", &sp->peer_len);
    char *statement = malloc(statement_len + 1);
    cr_assert_not_null(statement);
    memset(statement, FILL, statement_len);
    statement[statement_len] = '\0';
    sw__attr_t *a = sw__segment_attr_add(seg);
    cr_assert_not_null(a);
    *a = (sw__attr_t){.kind = SW__ATTR_TAG, .span_id = 0};
    a->key = "db.statement";
    a->key_len = 12;
    a->value = sw__segment_strdup_len(seg, statement, &a->value_len);
    free(statement);
    cr_assert_eq(seg->truncations, 0, "the statement fits the arena");
}

static sw__encoder_t encoder_new(void)
{
    sw__encoder_t enc = {0};
    cr_assert_eq(sw__encoder_set_process(&enc, "orders", "orders-1"), 0);
    return enc;
}

/* The record's bytes are sw__encode_segment's bytes for the same segment. */
static void assert_record(const sw__encoder_t *enc, const sw__segment_t *seg,
                          const sw__encoded_t *rec)
{
    sw__bytes_t out = {0};
    size_t at;
    cr_assert_eq(sw__encode_segment(enc, seg, &out, &at), 0);
    cr_assert_eq(rec->len, out.len - at, "record of %u bytes, encoding of %zu", rec->len,
                 out.len - at);
    cr_assert_eq(memcmp(rec->data, out.data + at, rec->len), 0, "the bytes differ");
    cr_assert_str_eq(rec->segment_id, seg->segment_id);
    cr_assert_eq((uintptr_t)rec % _Alignof(sw__encoded_t), 0, "the header is aligned");
    sw__bytes_free(&out);
}

static size_t free_list_length(sw__chunk_pool_t *pool)
{
    size_t n = 0;
    for (sw__free_node_t *c = atomic_load(&pool->free.head); c != NULL; c = c->next) {
        n++;
    }
    return n;
}

/* What every test uses: an encoder, a pool of `units`, one owner's current chunk, a segment. */
typedef struct fixture {
    sw__encoder_t enc;
    sw__chunk_pool_t pool;
    sw__chunk_t *current;
    sw__segment_t *seg;
} fixture_t;

static void fixture_start(fixture_t *f, uint64_t units, uint32_t arena_cap, const char *id,
                          size_t statement_len)
{
    f->enc = encoder_new();
    sw__chunk_pool_init(&f->pool, units);
    f->current = NULL;
    f->seg = segment_new(arena_cap);
    segment_fill(f->seg, id, statement_len);
}

static void fixture_end(fixture_t *f)
{
    sw__chunk_pool_destroy(&f->pool);
    sw__encoder_free(&f->enc);
    free(f->seg);
}

Test(chunk, a_record_holds_the_encoded_segment_and_its_id)
{
    fixture_t f;
    fixture_start(&f, 8, 4096, "seg.0", 10);
    for (int i = 0; i < 3; i++) {
        char id[32];
        snprintf(id, sizeof id, "seg.%d", i);
        segment_fill(f.seg, id, 10 + 100 * (size_t)i);
        sw__encoded_t *rec = sw__chunk_encode(&f.pool, &f.current, &f.enc, f.seg);
        cr_assert_not_null(rec);
        cr_assert_eq(rec->chunk, f.current, "all three fit the first chunk");
        assert_record(&f.enc, f.seg, rec);
    }
    cr_expect_eq(f.current->handed, 3);
    sw__chunk_release(&f.pool, f.current, 3);
    sw__chunk_seal(&f.pool, f.current);
    fixture_end(&f);
}

/* The chunk returns to the pool after the LAST of seal and release, whichever order. */
static void reuse_after_both(bool seal_first)
{
    fixture_t f;
    fixture_start(&f, 8, 4096, "a.1", 20);
    cr_assert_not_null(sw__chunk_encode(&f.pool, &f.current, &f.enc, f.seg));
    cr_assert_not_null(sw__chunk_encode(&f.pool, &f.current, &f.enc, f.seg));
    sw__chunk_t *first = f.current;
    if (seal_first) {
        sw__chunk_seal(&f.pool, first);
        f.current = NULL;
        sw__chunk_release(&f.pool, first, 1);
        cr_expect_eq(free_list_length(&f.pool), 0, "one record is still out");
        sw__chunk_release(&f.pool, first, 1);
    } else {
        sw__chunk_release(&f.pool, first, 2);
        cr_expect_eq(free_list_length(&f.pool), 0, "the owner still writes into it");
        sw__chunk_seal(&f.pool, first);
        f.current = NULL;
    }
    cr_expect_eq(free_list_length(&f.pool), 1, "back in the pool");
    cr_expect_eq(atomic_load(&f.pool.allocated), 1, "one unit, not freed");
    cr_assert_not_null(sw__chunk_encode(&f.pool, &f.current, &f.enc, f.seg));
    cr_expect_eq(f.current, first, "the pooled chunk is reused");
    cr_expect_eq(f.current->handed, 1);
    sw__chunk_release(&f.pool, f.current, 1);
    sw__chunk_seal(&f.pool, f.current);
    fixture_end(&f);
}

Test(chunk, release_then_seal_returns_the_chunk_once)
{
    reuse_after_both(false);
}

Test(chunk, seal_then_release_returns_the_chunk_once)
{
    reuse_after_both(true);
}

/* Records go on until one does not fit; then the full chunk is sealed and a new one taken. */
Test(chunk, a_full_chunk_is_sealed_and_returns_once_its_records_are_released)
{
    fixture_t f;
    fixture_start(&f, 8, 4096, "full.1", 1000);
    uint64_t in_first = 0;
    sw__chunk_t *first = NULL;
    for (int i = 0; i < 100; i++) {
        sw__encoded_t *rec = sw__chunk_encode(&f.pool, &f.current, &f.enc, f.seg);
        cr_assert_not_null(rec);
        if (first == NULL) {
            first = f.current;
        }
        if (f.current != first) {
            break;
        }
        in_first++;
    }
    cr_assert_neq(f.current, first, "a second chunk was taken");
    cr_expect_geq(in_first, 10, "a 16 KiB chunk holds more than ten 1 KB records");
    cr_expect_lt(in_first * 1000, SW__CHUNK_BYTES);
    cr_expect_eq(free_list_length(&f.pool), 0);
    sw__chunk_release(&f.pool, first, in_first);
    cr_expect_eq(free_list_length(&f.pool), 1, "the sealed chunk came back with its last record");
    sw__chunk_release(&f.pool, f.current, 1);
    sw__chunk_seal(&f.pool, f.current);
    cr_expect_eq(free_list_length(&f.pool), 2);
    cr_expect_eq(atomic_load(&f.pool.allocated), 2);
    fixture_end(&f);
}

/* At the cap sw__chunk_encode returns NULL and keeps the f.current chunk; once the records are
   released, encoding works again without a new allocation. */
Test(chunk, at_the_cap_a_segment_gets_no_record_and_nothing_changes)
{
    fixture_t f;
    fixture_start(&f, 1, 4096, "cap.1", 1000);
    uint64_t handed = 0;
    sw__encoded_t *rec;
    while ((rec = sw__chunk_encode(&f.pool, &f.current, &f.enc, f.seg)) != NULL) {
        handed++;
        cr_assert_lt(handed, 100, "the cap of one unit never bound");
    }
    sw__chunk_t *only = f.current;
    cr_expect_eq(only->handed, handed, "the full chunk is still f.current");
    cr_expect_eq(atomic_load(&f.pool.allocated), 1);
    sw__chunk_release(&f.pool, only, handed);
    /* The owner still holds it: the next record needs a new chunk, and the cap allows none
       until the owner gives this one up. */
    cr_expect_null(sw__chunk_encode(&f.pool, &f.current, &f.enc, f.seg));
    sw__chunk_seal(&f.pool, only);
    f.current = NULL;
    cr_assert_not_null(sw__chunk_encode(&f.pool, &f.current, &f.enc, f.seg));
    cr_expect_eq(f.current, only, "the one chunk is reused");
    cr_expect_eq(atomic_load(&f.pool.allocated), 1);
    sw__chunk_release(&f.pool, f.current, 1);
    sw__chunk_seal(&f.pool, f.current);
    fixture_end(&f);
}

/* A record of ~40 KB gets a chunk of its own that counts 3 units and is freed, not pooled. */
Test(chunk, a_record_larger_than_a_chunk_gets_its_own_and_counts_its_units)
{
    fixture_t f;
    fixture_start(&f, 8, 48 * 1024, "big.1", 40 * 1024);
    sw__encoded_t *rec = sw__chunk_encode(&f.pool, &f.current, &f.enc, f.seg);
    cr_assert_not_null(rec);
    assert_record(&f.enc, f.seg, rec);
    cr_expect_gt(f.current->cap, SW__CHUNK_BYTES);
    cr_expect_eq(atomic_load(&f.pool.allocated), 3, "%llu units",
                 (unsigned long long)atomic_load(&f.pool.allocated));
    cr_expect_not(f.current->held, "a big chunk takes no holding credit");
    sw__chunk_after_hand_off(&f.pool, &f.current);
    cr_expect_null(f.current, "sealed at once");
    sw__chunk_release(&f.pool, rec->chunk, 1);
    cr_expect_eq(atomic_load(&f.pool.allocated), 0, "freed, units returned");
    cr_expect_eq(free_list_length(&f.pool), 0, "not pooled");
    /* Too big for the cap: no record. */
    sw__chunk_pool_t small;
    sw__chunk_pool_init(&small, 2);
    cr_expect_null(sw__chunk_encode(&small, &f.current, &f.enc, f.seg));
    cr_expect_eq(atomic_load(&small.allocated), 0);
    sw__chunk_pool_destroy(&small);
    fixture_end(&f);
}

/* max_units 4 gives 2 holding credits: the third owner's chunk is sealed after each record. */
Test(chunk, owners_beyond_the_holding_credits_seal_after_each_record)
{
    fixture_t f;
    fixture_start(&f, 4, 4096, "hold.1", 10);
    sw__chunk_t *owner[3] = {NULL, NULL, NULL};
    sw__encoded_t *rec[3];
    for (int i = 0; i < 3; i++) {
        rec[i] = sw__chunk_encode(&f.pool, &owner[i], &f.enc, f.seg);
        cr_assert_not_null(rec[i]);
        sw__chunk_after_hand_off(&f.pool, &owner[i]);
    }
    cr_expect_not_null(owner[0], "kept with a credit");
    cr_expect_not_null(owner[1], "kept with a credit");
    cr_expect_null(owner[2], "no credit left: sealed");
    sw__chunk_release(&f.pool, rec[2]->chunk, 1);
    cr_expect_eq(free_list_length(&f.pool), 1, "and back in the pool after its one record");
    sw__chunk_seal(&f.pool, owner[0]); /* gives its credit back */
    sw__chunk_t *again = NULL;
    cr_assert_not_null(sw__chunk_encode(&f.pool, &again, &f.enc, f.seg));
    sw__chunk_after_hand_off(&f.pool, &again);
    cr_expect_not_null(again, "the returned credit lets a new owner keep its chunk");
    sw__chunk_release(&f.pool, rec[0]->chunk, 1);
    sw__chunk_release(&f.pool, rec[1]->chunk, 1);
    sw__chunk_seal(&f.pool, owner[1]);
    sw__chunk_release(&f.pool, again, 1);
    sw__chunk_seal(&f.pool, again);
    cr_expect_eq(atomic_load(&f.pool.hold_credits), 2, "every credit is back");
    cr_expect_eq(free_list_length(&f.pool), atomic_load(&f.pool.allocated), "every chunk is back");
    fixture_end(&f);
}

/* A record the carrier refused is taken back: the next one takes its place. */
Test(chunk, unencode_takes_the_last_record_back)
{
    fixture_t f;
    fixture_start(&f, 8, 4096, "un.1", 50);
    cr_assert_not_null(sw__chunk_encode(&f.pool, &f.current, &f.enc, f.seg));
    size_t used = f.current->used;
    sw__encoded_t *refused = sw__chunk_encode(&f.pool, &f.current, &f.enc, f.seg);
    cr_assert_not_null(refused);
    sw__chunk_unencode(refused);
    cr_expect_eq(f.current->used, used);
    cr_expect_eq(f.current->handed, 1);
    sw__encoded_t *next = sw__chunk_encode(&f.pool, &f.current, &f.enc, f.seg);
    cr_expect_eq(next, refused, "the same place");
    sw__chunk_release(&f.pool, f.current, 2);
    sw__chunk_seal(&f.pool, f.current);
    cr_expect_eq(free_list_length(&f.pool), 1);
    fixture_end(&f);
}

/* ---- race: owners encode, a consumer thread releases ------------------------------------- */

#define RACE_OWNERS  4
#define RACE_RECORDS 20000
#define RACE_UNITS   16

static sw__encoder_t race_enc;
static sw__chunk_pool_t race_pool;
static dc_carrier_t *race_carrier;
static _Atomic uint64_t race_consumed, race_bad, race_cap_waits;
static uint64_t race_next[RACE_OWNERS]; /* consumer thread only: next sequence per owner */

/* Checks every record: its id names an owner and exactly the next sequence of that owner (a
   chunk reused too early shows as a wrong, skipped or repeated id; a BLOCKING carrier keeps each
   owner's records in order on its ring), and its statement has the owner's length (10 + seq %
   200 bytes of FILL). */
static void race_consume(void *ctx, void **items, size_t count)
{
    (void)ctx;
    for (size_t i = 0; i < count; i++) {
        const sw__encoded_t *rec = items[i];
        unsigned owner;
        unsigned long long seq;
        if (sscanf(rec->segment_id, "o%u.%llu", &owner, &seq) != 2 || owner >= RACE_OWNERS ||
            seq != race_next[owner]) {
            atomic_fetch_add(&race_bad, 1);
        } else {
            race_next[owner] = seq + 1;
            size_t run = 0, longest = 0;
            for (uint32_t k = 0; k < rec->len; k++) {
                run = rec->data[k] == FILL ? run + 1 : 0;
                longest = run > longest ? run : longest;
            }
            if (longest != 10 + seq % 200) {
                atomic_fetch_add(&race_bad, 1);
            }
        }
        sw__chunk_release(&race_pool, rec->chunk, 1);
    }
    atomic_fetch_add(&race_consumed, count);
}

/* Encodes RACE_RECORDS segments; at the cap it waits (bounded) for the consumer to release
   chunks, counting each wait, and tries the same segment again. */
static void *race_owner(void *arg)
{
    unsigned me = (unsigned)(uintptr_t)arg;
    sw__segment_t *seg = segment_new(4096);
    sw__chunk_t *current = NULL;
    for (uint64_t seq = 0; seq < RACE_RECORDS; seq++) {
        char id[48];
        snprintf(id, sizeof id, "o%u.%llu", me, (unsigned long long)seq);
        segment_fill(seg, id, 10 + seq % 200);
        sw__encoded_t *rec;
        for (int tries = 0; (rec = sw__chunk_encode(&race_pool, &current, &race_enc, seg)) == NULL;
             tries++) {
            cr_assert_lt(tries, 10 * 1000 * 1000, "no chunk came back for record %llu",
                         (unsigned long long)seq);
            atomic_fetch_add(&race_cap_waits, 1);
            sched_yield();
        }
        cr_assert(dc_produce(race_carrier, rec), "a BLOCKING carrier takes every record");
        sw__chunk_after_hand_off(&race_pool, &current);
    }
    if (current != NULL) {
        sw__chunk_seal(&race_pool, current);
    }
    free(seg);
    return NULL;
}

Test(chunk, owners_and_a_consumer_race_and_every_chunk_comes_back, .timeout = 120)
{
    race_enc = encoder_new();
    sw__chunk_pool_init(&race_pool, RACE_UNITS);
    char err[128];
    cr_assert_eq(dc_carrier_create("chunk-race", RACE_OWNERS, 256, DC_STRATEGY_BLOCKING,
                                   dc_partitioner_thread(RACE_OWNERS), &race_carrier, err,
                                   sizeof err),
                 DC_OK, "%s", err);
    cr_assert_eq(dc_consume(race_carrier, race_consume, NULL, NULL, 1, 1), DC_OK);
    pthread_t t[RACE_OWNERS];
    for (unsigned i = 0; i < RACE_OWNERS; i++) {
        cr_assert_eq(pthread_create(&t[i], NULL, race_owner, (void *)(uintptr_t)i), 0);
    }
    for (unsigned i = 0; i < RACE_OWNERS; i++) {
        pthread_join(t[i], NULL);
    }
    cr_assert_eq(dc_carrier_shutdown(race_carrier), DC_OK); /* drains every stored record */
    uint64_t consumed = atomic_load(&race_consumed);
    cr_expect_eq(consumed, (uint64_t)RACE_OWNERS * RACE_RECORDS, "%llu records consumed",
                 (unsigned long long)consumed);
    cr_expect_eq(atomic_load(&race_bad), 0, "%llu records with a wrong id, order or content",
                 (unsigned long long)atomic_load(&race_bad));
    cr_log_info("owners waited %llu times at the cap of %d units",
                (unsigned long long)atomic_load(&race_cap_waits), RACE_UNITS);
    uint64_t allocated = atomic_load(&race_pool.allocated);
    cr_expect_leq(allocated, RACE_UNITS);
    cr_expect_eq(free_list_length(&race_pool), allocated, "%zu of %llu chunks back",
                 free_list_length(&race_pool), (unsigned long long)allocated);
    cr_expect_eq(atomic_load(&race_pool.hold_credits), RACE_UNITS / 2);
    dc_carrier_destroy(race_carrier);
    sw__chunk_pool_destroy(&race_pool);
    sw__encoder_free(&race_enc);
}
