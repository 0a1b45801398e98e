/*
 * produce.c - Produce (key 0) v3-v11. v3+ carries RecordBatch v2; flexible from v9; the
 * response has record errors and an error message from v8, and the tagged CurrentLeader per
 * partition (tag 0) and NodeEndpoints at the top (tag 0) from v10 (KIP-951).
 */
#include "wire/protocol.h"

#include <stdlib.h>
#include <string.h>

int kp__produce_request_write(kp_writer_t *w, int16_t version, const kp_produce_request_t *req)
{
    if (version < 3 || version > 11) {
        return KP_EINVAL;
    }
    if (req->n_topics > INT32_MAX || (req->n_topics > 0 && req->topics == NULL)) {
        return KP_EINVAL;
    }
    bool flexible = version >= 9;
    const char *tid = req->transactional_id;
    kp__write_nullable_str(w, flexible, tid, tid ? strlen(tid) : 0);
    kp__write_i16(w, req->acks);
    kp__write_i32(w, req->timeout_ms);
    kp__write_array_len_v(w, flexible, (int32_t)req->n_topics);
    for (size_t t = 0; t < req->n_topics; t++) {
        const kp_produce_topic_data_t *topic = &req->topics[t];
        if (topic->topic == NULL || topic->n_partitions > INT32_MAX ||
            (topic->n_partitions > 0 && topic->partitions == NULL)) {
            return KP_EINVAL;
        }
        kp__write_str(w, flexible, topic->topic, strlen(topic->topic));
        kp__write_array_len_v(w, flexible, (int32_t)topic->n_partitions);
        for (size_t p = 0; p < topic->n_partitions; p++) {
            const kp_produce_partition_data_t *part = &topic->partitions[p];
            kp__write_i32(w, part->partition);
            kp__write_nullable_bytes_v(w, flexible, part->records, part->records_len);
            if (flexible) {
                kp__write_tagged_fields_empty(w);
            }
        }
        if (flexible) {
            kp__write_tagged_fields_empty(w);
        }
    }
    if (flexible) {
        kp__write_tagged_fields_empty(w);
    }
    return w->err;
}

void kp__produce_response_free(kp_produce_response_t *resp)
{
    for (size_t t = 0; t < resp->n_topics; t++) {
        kp_produce_topic_response_t *topic = &resp->topics[t];
        for (size_t p = 0; p < topic->n_partitions; p++) {
            kp_produce_partition_response_t *part = &topic->partitions[p];
            for (size_t e = 0; e < part->n_record_errors; e++) {
                free(part->record_errors[e].message);
            }
            free(part->record_errors);
            free(part->error_message);
        }
        free(topic->partitions);
        free(topic->topic);
    }
    free(resp->topics);
    memset(resp, 0, sizeof *resp);
}

/* Tagged fields of a partition response: tag 0 = CurrentLeader {leader_id, leader_epoch,
 * tagged fields}; other tags are skipped. */
static void read_partition_tags(kp_reader_t *r, kp_produce_partition_response_t *p)
{
    uint32_t n = kp__read_uvarint(r);
    for (uint32_t i = 0; i < n && r->err == 0; i++) {
        uint32_t tag = kp__read_uvarint(r);
        uint32_t size = kp__read_uvarint(r);
        const uint8_t *field = kp__read_raw(r, size);
        if (field == NULL || tag != 0) {
            continue;
        }
        kp_reader_t sub;
        kp__reader_init(&sub, field, size);
        p->current_leader_id = kp__read_i32(&sub);
        p->current_leader_epoch = kp__read_i32(&sub);
        kp__read_tagged_fields_skip(&sub);
        if (sub.err != 0) {
            r->err = KP_EMALFORMED;
        }
    }
}

static void read_partition(kp_reader_t *r, int16_t version, kp_produce_partition_response_t *p)
{
    bool flexible = version >= 9;
    p->partition = kp__read_i32(r);
    p->error_code = kp__read_i16(r);
    p->base_offset = kp__read_i64(r);
    p->log_append_time_ms = kp__read_i64(r);
    p->log_start_offset = version >= 5 ? kp__read_i64(r) : -1;
    p->current_leader_id = -1;
    p->current_leader_epoch = -1;
    if (version >= 8) {
        /* batch_index(4) + message(>=1) */
        size_t n = kp__read_array_len(r, flexible, 5, NULL);
        p->record_errors = kp__reader_alloc_array(r, n, sizeof *p->record_errors);
        for (size_t i = 0; i < n && r->err == 0; i++) {
            p->n_record_errors = i + 1;
            p->record_errors[i].batch_index = kp__read_i32(r);
            p->record_errors[i].message = kp__read_nullable_str_dup(r, flexible);
            if (flexible) {
                kp__read_tagged_fields_skip(r);
            }
        }
        p->error_message = kp__read_nullable_str_dup(r, flexible);
    }
    if (flexible) {
        read_partition_tags(r, p);
    }
}

int kp__produce_response_read(kp_reader_t *r, int16_t version, kp_produce_response_t *out)
{
    memset(out, 0, sizeof *out);
    if (version < 3 || version > 11) {
        return KP_EINVAL;
    }
    bool flexible = version >= 9;
    /* name(>=1) + partitions(>=1) */
    size_t n_topics = kp__read_array_len(r, flexible, 2, NULL);
    out->topics = kp__reader_alloc_array(r, n_topics, sizeof *out->topics);
    for (size_t t = 0; t < n_topics && r->err == 0; t++) {
        kp_produce_topic_response_t *topic = &out->topics[t];
        out->n_topics = t + 1;
        topic->topic = kp__read_str_dup(r, flexible);
        /* partition(4) + error(2) + base_offset(8) + log_append_time(8) */
        size_t n_parts = kp__read_array_len(r, flexible, 22, NULL);
        topic->partitions = kp__reader_alloc_array(r, n_parts, sizeof *topic->partitions);
        for (size_t p = 0; p < n_parts && r->err == 0; p++) {
            topic->n_partitions = p + 1;
            read_partition(r, version, &topic->partitions[p]);
        }
        if (flexible) {
            kp__read_tagged_fields_skip(r);
        }
    }
    out->throttle_time_ms = kp__read_i32(r);
    if (flexible) {
        kp__read_tagged_fields_skip(r); /* NodeEndpoints (tag 0, v10+) */
    }
    if (r->err != 0) {
        kp__produce_response_free(out);
    }
    return r->err;
}
