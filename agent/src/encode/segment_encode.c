/*
 * segment_encode.c - a finished segment straight into SkyWalking v3 SegmentObject bytes.
 *
 * No protobuf-c message structs: the segment's spans, attributes and references are written by
 * the backward writer (pb_reverse.h) into the free tail of the output buffer, where they stay
 * (the caller gets their offset; the room's unused start is skipped, not filled). The bytes are
 * identical to protobuf-c's packing of the same segment (tests/unit/test_segment_encode.c proves it
 * against the generated code).
 *
 * Field numbers are those of proto/tracing.proto and common.proto (DESIGN.md, "SkyWalking v3
 * wire facts"); every writer below writes them in descending order.
 */
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "pb_reverse.h"
#include "segment_fields.h"
#include "skywalking.h"
#include "../util/locality.h"

#define NONE UINT32_MAX

/*
 * Per-span chains of attribute indexes, built in insertion order by prepending, so that each
 * chain runs from the last attribute to the first: the order the backward writer needs.
 */
typedef struct chains {
    uint32_t *tag_head; /* [span_count] */
    uint32_t *log_head; /* [span_count] */
    uint32_t *next;     /* [attr_count] */
} chains_t;

/* Entries of a chains scratch kept on the stack; bigger segments allocate theirs. */
enum { CHAINS_STACK = 512 };

static void chains_build(uint32_t *scratch, const sw__segment_t *seg, chains_t *ch)
{
    size_t n = seg->span_count, na = seg->attr_count;
    ch->tag_head = scratch;
    ch->log_head = ch->tag_head + n;
    ch->next = ch->log_head + n;
    memset(ch->tag_head, 0xff, 2 * n * sizeof(uint32_t));
    for (uint32_t i = 0; i < na; i++) {
        const sw__attr_t *a = sw__segment_attr(seg, i);
        if (a->span_id >= n || a->kind == SW__ATTR_LOG_KV) {
            continue;
        }
        uint32_t *head =
            a->kind == SW__ATTR_TAG ? &ch->tag_head[a->span_id] : &ch->log_head[a->span_id];
        ch->next[i] = *head;
        *head = i;
    }
}

enum { FIELD = SW__PBR_VARINT_FIELD_MAX };

/* A KeyStringValuePair: one room check for the whole message. */
SW__HOT static void kv_write(sw__pbr_t *w, unsigned field, const sw__attr_t *a)
{
    size_t value_len = sw__pb_string_len(a->value, a->value_len);
    size_t key_len = sw__pb_string_len(a->key, a->key_len);
    if (!sw__pbr_room(w, value_len + key_len + 3 * FIELD)) {
        return;
    }
    uint8_t *mark = sw__pbr_mark(w);
    sw__pbr_string_u(w, SW__PB_KV_VALUE, a->value, value_len);
    sw__pbr_string_u(w, SW__PB_KV_KEY, a->key, key_len);
    sw__pbr_close_u(w, field, mark);
}

/* The log at attribute index `at`: its fields are the LOG_KV records right after it. */
static void log_write(sw__pbr_t *w, const sw__segment_t *seg, uint32_t at)
{
    const sw__attr_t *log = sw__segment_attr(seg, at);
    uint32_t last = at + log->kv_count;
    if (last >= seg->attr_count) {
        last = seg->attr_count - 1;
    }
    uint8_t *mark = sw__pbr_mark(w);
    for (uint32_t k = last; k > at; k--) {
        const sw__attr_t *kv = sw__segment_attr(seg, k);
        if (kv->kind == SW__ATTR_LOG_KV) {
            kv_write(w, SW__PB_LOG_DATA, kv);
        }
    }
    sw__pbr_int64(w, SW__PB_LOG_TIME, log->time_ms);
    sw__pbr_close(w, SW__PB_SPAN_LOGS, mark);
}

static void ref_write(sw__pbr_t *w, const sw__ref_t *r)
{
    uint8_t *mark = sw__pbr_mark(w);
    sw__pbr_string(w, SW__PB_REF_ADDRESS, r->address);
    sw__pbr_string(w, SW__PB_REF_ENDPOINT, r->parent_endpoint);
    sw__pbr_string(w, SW__PB_REF_INSTANCE, r->parent_instance);
    sw__pbr_string(w, SW__PB_REF_SERVICE, r->parent_service);
    sw__pbr_int32(w, SW__PB_REF_SPAN_ID, r->parent_span_id);
    sw__pbr_string(w, SW__PB_REF_SEGMENT_ID, r->parent_segment_id);
    sw__pbr_string(w, SW__PB_REF_TRACE_ID, r->trace_id);
    sw__pbr_int32(w, SW__PB_REF_TYPE, r->type);
    sw__pbr_close(w, SW__PB_SPAN_REFS, mark);
}

/*
 * A SpanObject. Its fixed fields are written in two groups with one room check each (the
 * tags, logs and references between them check their own); a failed check stops the writer
 * (overflow), as any failed put does.
 */
static void span_write(sw__pbr_t *w, const sw__segment_t *seg, const chains_t *ch, uint32_t id)
{
    const sw__span_t *sp = &seg->spans[id];
    uint8_t *mark = sw__pbr_mark(w);
    sw__pbr_bool(w, SW__PB_SPAN_SKIP, sp->reserved != 0); /* reserved carries skipAnalysis */
    for (uint32_t i = ch->log_head[id]; i != NONE; i = ch->next[i]) {
        log_write(w, seg, i);
    }
    for (uint32_t i = ch->tag_head[id]; i != NONE; i = ch->next[i]) {
        kv_write(w, SW__PB_SPAN_TAGS, sw__segment_attr(seg, i));
    }
    size_t peer_len = sw__pb_string_len(sp->peer, sp->peer_len);
    size_t op_len = sw__pb_string_len(sp->operation, sp->operation_len);
    if (!sw__pbr_room(w, peer_len + op_len + 6 * FIELD)) {
        return;
    }
    sw__pbr_bool_u(w, SW__PB_SPAN_ERROR, sp->is_error != 0);
    sw__pbr_int32_u(w, SW__PB_SPAN_COMPONENT, sp->component_id);
    sw__pbr_int32_u(w, SW__PB_SPAN_LAYER, sp->layer);
    sw__pbr_int32_u(w, SW__PB_SPAN_TYPE, sp->type);
    sw__pbr_string_u(w, SW__PB_SPAN_PEER, sp->peer, peer_len);
    sw__pbr_string_u(w, SW__PB_SPAN_OP, sp->operation, op_len);
    for (uint32_t r = seg->ref_count; r-- > 0;) {
        if (seg->refs[r].span_id == id) {
            ref_write(w, &seg->refs[r]);
        }
    }
    if (!sw__pbr_room(w, 5 * FIELD)) {
        return;
    }
    sw__pbr_int64_u(w, SW__PB_SPAN_END, sp->end_ms);
    sw__pbr_int64_u(w, SW__PB_SPAN_START, sp->start_ms);
    sw__pbr_int32_u(w, SW__PB_SPAN_PARENT, sp->parent_id);
    sw__pbr_int32_u(w, SW__PB_SPAN_ID, (int32_t)id);
    sw__pbr_close_u(w, SW__PB_SEGMENT_SPANS, mark);
}

static void segment_write(sw__pbr_t *w, const sw__encoder_t *enc, const sw__segment_t *seg,
                          const chains_t *ch, size_t trace_id_len, size_t segment_id_len)
{
    sw__pbr_bool(w, SW__PB_SEGMENT_SIZE_LIMITED, seg->size_limited);
    sw__pbr_raw(w, enc->process_fields, enc->process_fields_len); /* instance, service */
    for (uint32_t i = seg->span_count; i-- > 0;) {
        span_write(w, seg, ch, i);
    }
    sw__pbr_string_n(w, SW__PB_SEGMENT_SEGMENT_ID, seg->segment_id, segment_id_len);
    sw__pbr_string_n(w, SW__PB_SEGMENT_TRACE_ID, seg->trace_id, trace_id_len);
}

/*
 * Room that is enough for every segment whose strings all live in its arena (each string adds
 * at most a key and a 5-byte length; the fixed fields of a span, an attribute and a reference
 * take at most 76, 17 and 55 bytes). A guess only: the writer checks, and a short guess costs
 * a retry, not a wrong byte.
 */
static size_t room_guess(const sw__segment_t *seg, size_t fixed_strings)
{
    return 64 + fixed_strings + seg->arena_used + (size_t)seg->span_count * 96 +
           (size_t)seg->attr_count * 40 + (size_t)seg->ref_count * 96;
}

/* Writes the string field forwards at `o` (NULL and "" are not written); returns its end. */
static uint8_t *field_forward(uint8_t *o, unsigned field, const char *s)
{
    size_t n = s != NULL ? strlen(s) : 0;
    if (n == 0) {
        return o;
    }
    *o++ = (uint8_t)(field << 3 | SW__PB_LEN);
    uint64_t v = n;
    for (; v >= 0x80; v >>= 7) {
        *o++ = (uint8_t)(v | 0x80);
    }
    *o++ = (uint8_t)v;
    memcpy(o, s, n);
    return o + n;
}

/* The service and instance fields of every segment, as protobuf-c packs them (service first:
   field 4, then 5). */
int sw__encoder_set_process(sw__encoder_t *enc, const char *service, const char *instance)
{
    size_t need = 2 * 11 + (service ? strlen(service) : 0) + (instance ? strlen(instance) : 0);
    uint8_t *buf = malloc(need);
    if (buf == NULL) {
        return SW_ENOMEM;
    }
    uint8_t *end = field_forward(buf, SW__PB_SEGMENT_SERVICE, service);
    end = field_forward(end, SW__PB_SEGMENT_INSTANCE, instance);
    free(enc->process_fields);
    enc->process_fields = buf;
    enc->process_fields_len = (size_t)(end - buf);
    return 0;
}

SW__HOT size_t sw__encode_room_guess(const sw__encoder_t *enc, const sw__segment_t *seg,
                                     const sw__ids_len_t *ids)
{
    return room_guess(seg, ids->trace_id + ids->segment_id + enc->process_fields_len);
}

SW__HOT int sw__encode_segment_room(const sw__encoder_t *enc, const sw__segment_t *seg,
                                    const sw__ids_len_t *ids, uint8_t *start, uint8_t *end,
                                    uint8_t **first)
{
    uint32_t local[CHAINS_STACK];
    size_t need = 2 * (size_t)seg->span_count + seg->attr_count;
    uint32_t *scratch = need <= CHAINS_STACK ? local : malloc(need * sizeof(uint32_t));
    if (scratch == NULL) {
        return SW_ENOMEM;
    }
    chains_t ch;
    chains_build(scratch, seg, &ch);
    sw__pbr_t w = {start, end, false};
    segment_write(&w, enc, seg, &ch, ids->trace_id, ids->segment_id);
    if (scratch != local) {
        free(scratch);
    }
    *first = w.p;
    return w.overflow ? SW_ELIMIT : 0;
}

int sw__encode_segment(const sw__encoder_t *enc, const sw__segment_t *seg, sw__bytes_t *out,
                       size_t *at)
{
    sw__ids_len_t ids = sw__ids_len(seg);
    for (size_t room = sw__encode_room_guess(enc, seg, &ids);; room *= 2) {
        if (sw__bytes_reserve(out, room) != 0) {
            return SW_ENOMEM;
        }
        uint8_t *base = out->data + out->len, *first;
        int rc = sw__encode_segment_room(enc, seg, &ids, base, base + room, &first);
        if (rc == SW_ENOMEM) {
            return rc;
        }
        if (rc == 0) {
            /* The bytes stay where the backward writer put them, at the end of the room: no
               move; the unused start of the room is skipped. */
            *at = (size_t)(first - out->data);
            out->len += room;
            return 0;
        }
    }
}
