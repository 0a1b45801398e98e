/*
 * fuzz_segment_encode.c - libFuzzer target for the way strings enter a segment and leave it
 * encoded: any bytes given as operation names, peers, tags, span log fields, an sw8 header and
 * a tracestate `sw` member go into a segment through the agent's entry points (the arena copy
 * sw__segment_strndup_len, the sw8 and tracestate decoders, the log field cap), with a small
 * arena so that truncation runs too; the segment is encoded by the agent's SegmentObject writer
 * (encode/segment_encode.c). The output must always decode with protobuf-c, and every string
 * field of it must be valid UTF-8 (the tests' own oracle, utf8_valid.h: protobuf-c does not
 * check, the OAP does and rejects the whole collect call).
 *
 * Input: byte 0 sizes the arena (256 + 16 * byte); the rest is split at NUL bytes into strings.
 * String 0 is tried as an sw8 value, string 1 as a tracestate `sw` member; the others are, in
 * turn, a new span's operation, its peer, a tag key and value, a log field key and value.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "util/utf8.h"
#include "propagation/sw8.h"
#include "propagation/tracestate.h"
#include "encode/encode.h"
#include "skywalking.h"
#include "tracing.pb-c.h"
#include "utf8_valid.h"

#define SPAN_LIMIT  8
#define STRINGS_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *s)
{
    if (!test_utf8_valid_str(s)) {
        abort(); /* a string field that would fail the segment's gRPC call */
    }
}

static void check_kvs(Skywalking__V3__KeyStringValuePair **kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        check(kv[i]->key);
        check(kv[i]->value);
    }
}

static void check_decoded(const uint8_t *bytes, size_t len)
{
    Skywalking__V3__SegmentObject *m = skywalking__v3__segment_object__unpack(NULL, len, bytes);
    if (m == NULL) {
        abort(); /* the encoder wrote something protobuf-c cannot decode */
    }
    check(m->traceid);
    check(m->tracesegmentid);
    check(m->service);
    check(m->serviceinstance);
    for (size_t i = 0; i < m->n_spans; i++) {
        const Skywalking__V3__SpanObject *sp = m->spans[i];
        check(sp->operationname);
        check(sp->peer);
        check_kvs(sp->tags, sp->n_tags);
        for (size_t k = 0; k < sp->n_logs; k++) {
            check_kvs(sp->logs[k]->data, sp->logs[k]->n_data);
        }
        for (size_t r = 0; r < sp->n_refs; r++) {
            const Skywalking__V3__SegmentReference *ref = sp->refs[r];
            check(ref->traceid);
            check(ref->parenttracesegmentid);
            check(ref->parentservice);
            check(ref->parentserviceinstance);
            check(ref->parentendpoint);
            check(ref->networkaddressusedatpeer);
        }
    }
    skywalking__v3__segment_object__free_unpacked(m, NULL);
}

/* A reference added by the agent's own sw__context_add_ref (it reads only the context's segment
   and active span). */
static void ref_add(sw__segment_t *seg, const char *trace, const char *segment, int32_t span,
                    const char *service, const char *instance, const char *endpoint,
                    const char *address)
{
    static sw__context_t ctx;
    if (seg->span_count == 0) {
        return;
    }
    ctx.segment = seg;
    ctx.active = 0;
    (void)sw__context_add_ref(&ctx, 0, trace, segment, span, service, instance, endpoint, address);
}

static sw__span_t *span_add(sw__segment_t *seg, const char *op)
{
    if (seg->span_count >= seg->span_limit) {
        return NULL;
    }
    uint32_t id = seg->span_count++;
    sw__span_t *sp = &seg->spans[id];
    memset(sp, 0, sizeof *sp);
    sp->start_ms = 1700000000000;
    sp->end_ms = 1700000000001;
    sp->parent_id = (int32_t)id - 1;
    sp->operation = sw__segment_strdup_len(seg, op, &sp->operation_len);
    return sp;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sw__encoder_t enc;
    static char block[1 << 16] __attribute__((aligned(64)));
    if (enc.process_fields == NULL &&
        sw__encoder_set_process(&enc, "fuzz-service", "fuzz-instance") != 0) {
        abort();
    }
    if (size < 1) {
        return 0;
    }
    uint32_t arena = 256u + 16u * data[0];
    size_t need = sw__segment_block_size(SPAN_LIMIT, arena);
    if (need == 0 || need > sizeof block) {
        abort();
    }
    sw__segment_t *seg = (sw__segment_t *)(void *)block;
    sw__segment_format(seg, SPAN_LIMIT, arena);

    /* The input's strings (NUL-separated), copied so that each is NUL-terminated. */
    char *text = malloc(size);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    const char *str[STRINGS_MAX];
    size_t n = 0;
    for (size_t at = 0; at < size && n < STRINGS_MAX;) {
        str[n++] = text + at;
        at += strlen(text + at) + 1;
    }

    snprintf(seg->trace_id, sizeof seg->trace_id, "fuzz.trace.1");
    snprintf(seg->segment_id, sizeof seg->segment_id, "fuzz.segment.1");
    (void)span_add(seg, n > 2 ? str[2] : "entry");

    /* An entry's sw8: the trace id is taken as entry_open does, the reference as
       entry_ref_sw8 does. */
    char scratch[SW__SW8_HEADER_MAX + 16];
    sw__sw8_t up;
    if (n > 0 && sw__sw8_decode(str[0], strlen(str[0]), &up, scratch, sizeof scratch, NULL) == 0) {
        memcpy(seg->trace_id, up.trace_id, strlen(up.trace_id) + 1);
        ref_add(seg, up.trace_id, up.parent_segment_id, up.parent_span_id, up.parent_service,
                up.parent_instance, up.parent_endpoint, up.address);
    }
    /* A tracestate `sw` member: its reference as entry_w3c adds it. */
    char st_scratch[SW__TRACESTATE_ENTRY_MAX + 16];
    sw__swstate_t st;
    if (n > 1 &&
        sw__swstate_decode(str[1], strlen(str[1]), &st, st_scratch, sizeof st_scratch, NULL) == 0) {
        ref_add(seg, st.trace_id[0] != '\0' ? st.trace_id : seg->trace_id, st.segment_id,
                st.span_id, st.service, st.instance, st.endpoint, st.peer);
    }

    sw__span_t *sp = &seg->spans[0];
    for (size_t i = 3; i < n; i++) {
        switch (i % 6) {
        case 3: {
            sw__span_t *next = span_add(seg, str[i]);
            sp = next != NULL ? next : sp;
            break;
        }
        case 4:
            sp->peer = sw__segment_strdup_len(seg, str[i], &sp->peer_len);
            break;
        case 5: { /* a tag, as sw_span_tag copies it */
            sw__attr_t *a = sw__segment_attr_add(seg);
            if (a != NULL) {
                *a = (sw__attr_t){.kind = SW__ATTR_TAG, .span_id = (uint16_t)(seg->span_count - 1)};
                a->key = sw__segment_strdup_len(seg, str[i], &a->key_len);
                a->value =
                    sw__segment_strdup_len(seg, i + 1 < n ? str[i + 1] : NULL, &a->value_len);
            }
            break;
        }
        case 0: { /* a log of one field, cut as sw_span_log cuts it */
            sw__attr_t *log = sw__segment_attr_add(seg);
            if (log == NULL) {
                break;
            }
            *log = (sw__attr_t){.kind = SW__ATTR_LOG,
                                .span_id = (uint16_t)(seg->span_count - 1),
                                .time_ms = 1700000000000};
            sw__attr_t *kv = sw__segment_attr_add(seg);
            if (kv == NULL) {
                seg->attr_count--; /* a log without fields is not kept */
                break;
            }
            *kv = (sw__attr_t){.kind = SW__ATTR_LOG_KV, .span_id = log->span_id};
            kv->key = sw__segment_strndup_len(
                seg, str[i], sw__utf8_len_capped(str[i], SW_LOG_TAG_MAX), &kv->key_len);
            const char *v = i + 1 < n ? str[i + 1] : "";
            kv->value = sw__segment_strndup_len(seg, v, sw__utf8_len_capped(v, SW_LOG_TAG_MAX),
                                                &kv->value_len);
            log->kv_count = 1;
            break;
        }
        default:
            break;
        }
    }

    sw__bytes_t out = {0};
    size_t at = 0;
    if (sw__encode_segment(&enc, seg, &out, &at) == 0) {
        check_decoded(out.data + at, out.len - at);
    }
    sw__bytes_free(&out);
    free(text);
    return 0;
}
