/*
 * test_segment_encode.c - the direct SegmentObject writer (agent/src/encode/segment_encode.c)
 * against protobuf-c: for varied segments the bytes must be IDENTICAL to protobuf-c's packing of
 * the same segment (tests/support/segment_pbc.c), and protobuf-c must decode them to the fields
 * the segment holds.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode/encode.h"
#include "segment_pbc.h"
#include "tracing.pb-c.h"

static sw__segment_t *segment_new(uint32_t span_limit, uint32_t arena_cap)
{
    size_t size = sw__segment_block_size(span_limit, arena_cap);
    cr_assert_neq(size, 0);
    sw__segment_t *seg = aligned_alloc(64, (size + 63) & ~(size_t)63);
    cr_assert_not_null(seg);
    sw__segment_format(seg, span_limit, arena_cap);
    return seg;
}

static sw__span_t *span_add(sw__segment_t *seg, int32_t parent, const char *op, const char *peer)
{
    cr_assert_lt(seg->span_count, seg->span_limit);
    sw__span_t *sp = &seg->spans[seg->span_count++];
    memset(sp, 0, sizeof *sp);
    sp->start_ms = 1700000000123;
    sp->end_ms = 1700000000456;
    /* The operation's length is stored, the peer's is not (0: the encoder measures it): both
       ways must give protobuf-c's bytes. */
    sp->operation = sw__segment_strdup_len(seg, op, &sp->operation_len);
    sp->peer = peer != NULL ? sw__segment_strdup(seg, peer) : NULL;
    sp->parent_id = parent;
    return sp;
}

static void tag_add(sw__segment_t *seg, uint16_t span, const char *k, const char *v)
{
    sw__attr_t *a = sw__segment_attr_add(seg);
    if (a == NULL) {
        return;
    }
    *a = (sw__attr_t){.kind = SW__ATTR_TAG, .span_id = span};
    a->key = sw__segment_strdup(seg, k);
    a->value = sw__segment_strdup_len(seg, v, &a->value_len);
}

static void log_add(sw__segment_t *seg, uint16_t span, int64_t t, uint32_t nkv)
{
    sw__attr_t *log = sw__segment_attr_add(seg);
    if (log == NULL) {
        return;
    }
    *log = (sw__attr_t){.kind = SW__ATTR_LOG, .span_id = span, .time_ms = t};
    for (uint32_t i = 0; i < nkv; i++) {
        sw__attr_t *kv = sw__segment_attr_add(seg);
        if (kv == NULL) {
            break;
        }
        *kv = (sw__attr_t){.kind = SW__ATTR_LOG_KV, .span_id = span};
        kv->key = sw__segment_strdup_len(seg, i % 2 ? "stack" : "event", &kv->key_len);
        kv->value = sw__segment_strdup(seg, i % 3 ? "frame" : "");
        log->kv_count++;
    }
}

static void ref_add(sw__segment_t *seg, uint16_t span, uint8_t type, int32_t parent_span)
{
    cr_assert_lt(seg->ref_count, SW__REFS_MAX);
    sw__ref_t *r = &seg->refs[seg->ref_count++];
    r->type = type;
    r->span_id = span;
    r->parent_span_id = parent_span;
    r->trace_id = sw__segment_strdup(seg, "upstream-trace.1.2");
    r->parent_segment_id = sw__segment_strdup(seg, "upstream-segment.1.2");
    r->parent_service = sw__segment_strdup(seg, "gateway");
    r->parent_instance = sw__segment_strdup(seg, "gateway-1");
    r->parent_endpoint = sw__segment_strdup(seg, type ? "" : "POST /checkout");
    r->address = sw__segment_strdup(seg, type ? "" : "orders:8080");
}

static void ids_set(sw__segment_t *seg, const char *trace, const char *segment)
{
    snprintf(seg->trace_id, sizeof seg->trace_id, "%s", trace);
    snprintf(seg->segment_id, sizeof seg->segment_id, "%s", segment);
}

/* Encodes with both encoders (ours appended after a prefix already in the buffer) and asserts
   the bytes are the same; returns protobuf-c's decoding (free with ..._free_unpacked). */
static Skywalking__V3__SegmentObject *assert_identical(sw__encoder_t *enc, const sw__segment_t *seg,
                                                       const char *service, const char *instance)
{
    uint8_t *ref = NULL;
    size_t ref_len = pbc_encode_segment(seg, service, instance, &ref);
    sw__bytes_t out = {0};
    cr_assert_eq(sw__bytes_reserve(&out, 3), 0);
    memcpy(out.data, "abc", 3);
    out.len = 3;
    cr_assert_eq(sw__encoder_set_process(enc, service, instance), 0);
    size_t at = 0;
    cr_assert_eq(sw__encode_segment(enc, seg, &out, &at), 0);
    cr_assert_geq(at, 3, "the segment overlaps the bytes before it");
    size_t len = out.len - at;
    cr_assert_eq(len, ref_len, "length %zu, protobuf-c packs %zu", len, ref_len);
    cr_assert_eq(memcmp(out.data, "abc", 3), 0, "the bytes before the segment changed");
    for (size_t i = 0; i < ref_len; i++) {
        cr_assert_eq(out.data[at + i], ref[i], "byte %zu of %zu: 0x%02x, protobuf-c 0x%02x", i,
                     ref_len, out.data[at + i], ref[i]);
    }
    Skywalking__V3__SegmentObject *m =
        skywalking__v3__segment_object__unpack(NULL, len, out.data + at);
    cr_assert_not_null(m, "protobuf-c cannot decode the bytes");
    free(ref);
    sw__bytes_free(&out);
    return m;
}

Test(segment_encode, three_spans_with_tags_logs_refs)
{
    sw__encoder_t enc = {0};
    sw__segment_t *seg = segment_new(300, 8192);
    ids_set(seg, "trace.1.17000000001230001", "segment.1.17000000001230002");
    sw__span_t *entry = span_add(seg, -1, "GET /orders", NULL);
    entry->type = SW_SPAN_ENTRY;
    entry->layer = SW_LAYER_HTTP;
    entry->component_id = 49;
    entry->is_error = 1;
    entry->reserved = 1;
    sw__span_t *exit = span_add(seg, 0, "SELECT", "db:5432");
    exit->type = SW_SPAN_EXIT;
    exit->layer = SW_LAYER_DATABASE;
    exit->component_id = 22;
    span_add(seg, 0, "render", NULL)->type = SW_SPAN_LOCAL;
    tag_add(seg, 0, "http.method", "GET");
    tag_add(seg, 1, "db.statement", "SELECT 1");
    log_add(seg, 0, 1700000000200, 2);
    tag_add(seg, 0, "http.status_code", "500"); /* a tag after a log of the same span */
    log_add(seg, 2, 1700000000300, 3);
    ref_add(seg, 0, 0, 3);
    ref_add(seg, 2, 1, 1);
    Skywalking__V3__SegmentObject *m = assert_identical(&enc, seg, "orders", "orders-1");
    cr_assert_str_eq(m->traceid, "trace.1.17000000001230001");
    cr_assert_str_eq(m->service, "orders");
    cr_assert_eq(m->n_spans, 3);
    cr_assert_eq(m->spans[0]->parentspanid, -1);
    cr_assert_eq(m->spans[0]->n_tags, 2);
    cr_assert_str_eq(m->spans[0]->tags[1]->key, "http.status_code");
    cr_assert_eq(m->spans[0]->n_logs, 1);
    cr_assert_eq(m->spans[0]->logs[0]->n_data, 2);
    cr_assert_eq(m->spans[0]->n_refs, 1);
    cr_assert_str_eq(m->spans[0]->refs[0]->networkaddressusedatpeer, "orders:8080");
    cr_assert(m->spans[0]->iserror && m->spans[0]->skipanalysis);
    cr_assert_eq(m->spans[1]->componentid, 22);
    cr_assert_str_eq(m->spans[1]->peer, "db:5432");
    cr_assert_eq(m->spans[2]->n_logs, 1);
    cr_assert_eq(m->spans[2]->logs[0]->n_data, 3);
    cr_assert_eq(m->spans[2]->refs[0]->reftype, SKYWALKING__V3__REF_TYPE__CrossThread);
    skywalking__v3__segment_object__free_unpacked(m, NULL);
    free(seg);
    sw__encoder_free(&enc);
}

Test(segment_encode, empty_strings_zero_values_and_no_spans)
{
    sw__encoder_t enc = {0};
    sw__segment_t *seg = segment_new(4, 256);
    Skywalking__V3__SegmentObject *m = assert_identical(&enc, seg, "", NULL); /* no spans */
    cr_assert_eq(m->n_spans, 0);
    skywalking__v3__segment_object__free_unpacked(m, NULL);
    ids_set(seg, "", "s");
    sw__span_t *sp = span_add(seg, 0, "", "");
    sp->start_ms = sp->end_ms = 0;
    tag_add(seg, 0, "", "");
    ref_add(seg, 0, 1, 0);
    m = assert_identical(&enc, seg, "svc", "");
    cr_assert_eq(m->spans[0]->n_tags, 1);
    cr_assert_str_eq(m->spans[0]->operationname, "");
    skywalking__v3__segment_object__free_unpacked(m, NULL);
    free(seg);
    sw__encoder_free(&enc);
}

Test(segment_encode, size_limited_and_truncated_arena)
{
    sw__encoder_t enc = {0};
    sw__segment_t *seg = segment_new(300, 256); /* a small arena: strings truncate, tags drop */
    ids_set(seg, "t", "s");
    for (int i = 0; i < 300; i++) {
        span_add(seg, i - 1, "an operation name that fills the arena quickly", NULL);
    }
    for (int i = 0; i < 40; i++) {
        tag_add(seg, (uint16_t)(i % 3), "key", "value");
    }
    log_add(seg, 1, 5, 40);
    seg->size_limited = true;
    cr_assert_gt(seg->truncations, 0);
    Skywalking__V3__SegmentObject *m = assert_identical(&enc, seg, "svc", "inst");
    cr_assert(m->issizelimited);
    cr_assert_eq(m->n_spans, 300);
    skywalking__v3__segment_object__free_unpacked(m, NULL);
    free(seg);
    sw__encoder_free(&enc);
}

/* Strings whose lengths cross the varint boundaries (127/128, 16383/16384) and large times,
   negative ids and component ids (10-byte varints). */
Test(segment_encode, varint_boundaries)
{
    sw__encoder_t enc = {0};
    sw__segment_t *seg = segment_new(16, 1 << 20);
    ids_set(seg, "trace", "segment");
    static char text[20000];
    memset(text, 'x', sizeof text - 1);
    size_t lens[] = {1, 127, 128, 129, 16383, 16384, 16385};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        text[lens[i]] = '\0';
        sw__span_t *sp = span_add(seg, (int32_t)i - 1, text, i % 2 ? text : NULL);
        sp->component_id = i % 2 ? -5 : INT32_MAX;
        sp->start_ms = INT64_MAX - (int64_t)i;
        sp->end_ms = -1;
        tag_add(seg, (uint16_t)i, text, text);
        text[lens[i]] = 'x';
    }
    Skywalking__V3__SegmentObject *m = assert_identical(&enc, seg, text + 19000, "i");
    cr_assert_eq(strlen(m->spans[5]->operationname), 16384);
    skywalking__v3__segment_object__free_unpacked(m, NULL);
    free(seg);
    sw__encoder_free(&enc);
}

/* Every room smaller than the encoding is refused (SW_ELIMIT) without a byte written outside
   it; every room at least as large gives the same bytes. Guards the writer's room checks, which
   are made once per group of fields. */
Test(segment_encode, every_short_room_is_refused_without_writing_outside_it)
{
    sw__encoder_t enc = {0};
    cr_assert_eq(sw__encoder_set_process(&enc, "orders", "orders-1"), 0);
    sw__segment_t *seg = segment_new(300, 8192);
    ids_set(seg, "trace.1.17000000001230001", "segment.1.17000000001230002");
    span_add(seg, -1, "GET /orders", "gateway:80")->component_id = 49;
    span_add(seg, 0, "SELECT", "db:5432")->is_error = 1;
    tag_add(seg, 1, "db.statement", "SELECT * FROM orders WHERE id = $1");
    log_add(seg, 0, 1700000000200, 2);
    ref_add(seg, 0, 0, 3);
    sw__ids_len_t ids = sw__ids_len(seg);
    sw__bytes_t whole = {0};
    size_t at;
    cr_assert_eq(sw__encode_segment(&enc, seg, &whole, &at), 0);
    size_t exact = whole.len - at;
    enum { GUARD = 64 };
    uint8_t *buf = malloc(exact + 2 * GUARD + 16);
    cr_assert_not_null(buf);
    for (size_t room = 0; room <= exact + 16; room++) {
        memset(buf, 0xa5, room + 2 * GUARD);
        uint8_t *start = buf + GUARD, *end = start + room, *first = NULL;
        int rc = sw__encode_segment_room(&enc, seg, &ids, start, end, &first);
        for (size_t i = 0; i < GUARD; i++) {
            cr_assert_eq(buf[i], 0xa5, "room %zu: byte %zu before the room written", room, i);
            cr_assert_eq(end[i], 0xa5, "room %zu: byte %zu after the room written", room, i);
        }
        if (room < exact) {
            cr_assert_eq(rc, SW_ELIMIT, "room %zu of %zu needed: %d", room, exact, rc);
        } else {
            cr_assert_eq(rc, 0, "room %zu of %zu needed: %d", room, exact, rc);
            cr_assert_eq((size_t)(end - first), exact);
            cr_assert_eq(memcmp(first, whole.data + at, exact), 0, "room %zu: other bytes", room);
        }
    }
    free(buf);
    sw__bytes_free(&whole);
    free(seg);
    sw__encoder_free(&enc);
}

/* A string outside the arena (the room guess does not count it): the writer must notice it is
   short and retry with more room, never write out of bounds. */
Test(segment_encode, string_outside_the_arena_grows_the_room)
{
    sw__encoder_t enc = {0};
    sw__segment_t *seg = segment_new(4, 256);
    ids_set(seg, "t", "s");
    static char big[100000];
    memset(big, 'p', sizeof big - 1);
    span_add(seg, -1, "op", NULL)->peer = big;
    Skywalking__V3__SegmentObject *m = assert_identical(&enc, seg, "svc", "inst");
    cr_assert_eq(strlen(m->spans[0]->peer), sizeof big - 1);
    skywalking__v3__segment_object__free_unpacked(m, NULL);
    free(seg);
    sw__encoder_free(&enc);
}

/* Many random segments (seeded, reproducible): random shapes, strings, attributes, refs. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

static const char *rnd_string(char *buf, size_t cap)
{
    size_t n = rnd(4) == 0 ? 0 : rnd(rnd(8) == 0 ? (uint32_t)cap - 1 : 24);
    for (size_t i = 0; i < n; i++) {
        buf[i] = (char)('a' + rnd(26));
    }
    buf[n] = '\0';
    return buf;
}

Test(segment_encode, random_segments_match_protobuf_c)
{
    sw__encoder_t enc = {0};
    char a[400], b[400];
    for (int round = 0; round < 400; round++) {
        sw__segment_t *seg = segment_new(64, 256 + rnd(16384));
        ids_set(seg, rnd_string(a, 60), rnd_string(b, 60));
        uint32_t spans = rnd(65);
        for (uint32_t i = 0; i < spans; i++) {
            sw__span_t *sp = span_add(seg, (int32_t)rnd(i + 1) - 1, rnd_string(a, sizeof a),
                                      rnd(2) ? rnd_string(b, sizeof b) : NULL);
            sp->type = (uint8_t)rnd(3);
            sp->layer = (uint8_t)rnd(7);
            sp->component_id = (int32_t)rnd(3) - 1;
            sp->is_error = (uint8_t)rnd(2);
            sp->reserved = (uint8_t)rnd(2);
            sp->start_ms = rnd(2) ? (int64_t)rnd(1u << 30) * 1000 : 0;
            sp->end_ms = sp->start_ms + rnd(100);
        }
        for (uint32_t i = 0, n = spans ? rnd(40) : 0; i < n; i++) {
            if (rnd(3) == 0) {
                log_add(seg, (uint16_t)rnd(spans), (int64_t)rnd(1u << 31), rnd(4));
            } else {
                tag_add(seg, (uint16_t)rnd(spans), rnd_string(a, sizeof a),
                        rnd_string(b, sizeof b));
            }
        }
        for (uint32_t i = 0, n = spans ? rnd(SW__REFS_MAX + 1) : 0; i < n; i++) {
            ref_add(seg, (uint16_t)rnd(spans), (uint8_t)rnd(2), (int32_t)rnd(5) - 1);
        }
        seg->size_limited = rnd(2);
        Skywalking__V3__SegmentObject *m = assert_identical(&enc, seg, "svc", rnd_string(a, 30));
        cr_assert_eq(m->n_spans, spans);
        skywalking__v3__segment_object__free_unpacked(m, NULL);
        free(seg);
    }
    sw__encoder_free(&enc);
}
