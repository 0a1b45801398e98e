/*
 * metadata.c - Metadata (key 3) v1-v12. Flexible from v9; topic ids in the response from v10;
 * allow_auto_topic_creation from v4; cluster authorized operations v8-v10.
 */
#include "wire/protocol.h"

#include <stdlib.h>
#include <string.h>

int kp__metadata_request_write(kp_writer_t *w, int16_t version, const kp_metadata_request_t *req)
{
    if (version < 1 || version > 12) {
        return KP_EINVAL;
    }
    if (!req->all_topics && req->n_topics > INT32_MAX) {
        return KP_EINVAL;
    }
    bool flexible = version >= 9;
    static const uint8_t zero_uuid[16];
    if (req->all_topics) {
        kp__write_array_len_v(w, flexible, -1);
    } else {
        kp__write_array_len_v(w, flexible, (int32_t)req->n_topics);
        for (size_t i = 0; i < req->n_topics; i++) {
            const char *name = req->topics[i];
            if (name == NULL) {
                return KP_EINVAL;
            }
            if (version >= 10) {
                kp__write_uuid(w, zero_uuid);
            }
            kp__write_str(w, flexible, name, strlen(name));
            if (flexible) {
                kp__write_tagged_fields_empty(w);
            }
        }
    }
    if (version >= 4) {
        kp__write_bool(w, req->allow_auto_topic_creation);
    }
    if (version >= 8 && version <= 10) {
        kp__write_bool(w, false); /* include_cluster_authorized_operations */
    }
    if (version >= 8) {
        kp__write_bool(w, false); /* include_topic_authorized_operations */
    }
    if (flexible) {
        kp__write_tagged_fields_empty(w);
    }
    return w->err;
}

static void partition_free(kp_metadata_partition_t *p)
{
    free(p->replicas);
    free(p->isr);
    free(p->offline_replicas);
}

static void topic_free(kp_metadata_topic_t *t)
{
    free(t->name);
    for (size_t i = 0; i < t->n_partitions; i++) {
        partition_free(&t->partitions[i]);
    }
    free(t->partitions);
}

void kp__metadata_response_free(kp_metadata_response_t *resp)
{
    for (size_t i = 0; i < resp->n_brokers; i++) {
        free(resp->brokers[i].host);
        free(resp->brokers[i].rack);
    }
    free(resp->brokers);
    free(resp->cluster_id);
    for (size_t i = 0; i < resp->n_topics; i++) {
        topic_free(&resp->topics[i]);
    }
    free(resp->topics);
    memset(resp, 0, sizeof *resp);
}

/* An array length at most `limit` long; beyond it the reader fails with KP_ELIMIT (and out says
 * what was over) before anything is allocated for the array. */
static size_t read_len_capped(kp_reader_t *r, bool flexible, size_t min_elem_size, size_t limit,
                              const char *what, kp_metadata_response_t *out)
{
    size_t n = kp__read_array_len(r, flexible, min_elem_size, NULL);
    if (r->err == 0 && n > limit) {
        r->err = KP_ELIMIT;
        out->over_what = what;
        out->over_count = n;
        out->over_limit = limit;
        return 0;
    }
    return n;
}

static int32_t *read_int32_array(kp_reader_t *r, bool flexible, size_t *n,
                                 kp_metadata_response_t *out)
{
    *n = 0;
    size_t count =
        read_len_capped(r, flexible, 4, KP_METADATA_MAX_BROKERS, "replicas of a partition", out);
    int32_t *arr = kp__reader_alloc_array(r, count, sizeof *arr);
    if (arr == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        arr[i] = kp__read_i32(r);
    }
    *n = count;
    return arr;
}

static void read_partition(kp_reader_t *r, int16_t version, kp_metadata_partition_t *p,
                           kp_metadata_response_t *out)
{
    bool flexible = version >= 9;
    p->error_code = kp__read_i16(r);
    p->partition = kp__read_i32(r);
    p->leader_id = kp__read_i32(r);
    p->leader_epoch = version >= 7 ? kp__read_i32(r) : -1;
    p->replicas = read_int32_array(r, flexible, &p->n_replicas, out);
    p->isr = read_int32_array(r, flexible, &p->n_isr, out);
    if (version >= 5) {
        p->offline_replicas = read_int32_array(r, flexible, &p->n_offline_replicas, out);
    }
    if (flexible) {
        kp__read_tagged_fields_skip(r);
    }
}

static void read_topic(kp_reader_t *r, int16_t version, kp_metadata_topic_t *t,
                       kp_metadata_response_t *out)
{
    bool flexible = version >= 9;
    t->error_code = kp__read_i16(r);
    if (version >= 12) {
        t->name = kp__read_nullable_str_dup(r, flexible);
    } else {
        t->name = kp__read_str_dup(r, flexible);
    }
    if (version >= 10) {
        kp__read_uuid(r, t->topic_id);
    }
    t->is_internal = kp__read_bool(r);
    /* error(2) + partition(4) + leader(4) + replicas(>=1) + isr(>=1) */
    size_t n =
        read_len_capped(r, flexible, 12, KP_METADATA_MAX_PARTITIONS, "partitions of a topic", out);
    t->partitions = kp__reader_alloc_array(r, n, sizeof *t->partitions);
    for (size_t i = 0; i < n && r->err == 0; i++) {
        t->n_partitions = i + 1;
        read_partition(r, version, &t->partitions[i], out);
    }
    t->topic_authorized_operations = version >= 8 ? kp__read_i32(r) : INT32_MIN;
    if (flexible) {
        kp__read_tagged_fields_skip(r);
    }
}

static void read_brokers(kp_reader_t *r, int16_t version, kp_metadata_response_t *out)
{
    bool flexible = version >= 9;
    /* node_id(4) + host(>=1) + port(4) + rack(>=1) */
    size_t n = read_len_capped(r, flexible, 10, KP_METADATA_MAX_BROKERS, "brokers", out);
    out->brokers = kp__reader_alloc_array(r, n, sizeof *out->brokers);
    for (size_t i = 0; i < n && r->err == 0; i++) {
        kp_metadata_broker_t *b = &out->brokers[i];
        out->n_brokers = i + 1;
        b->node_id = kp__read_i32(r);
        b->host = kp__read_str_dup(r, flexible);
        b->port = kp__read_i32(r);
        b->rack = kp__read_nullable_str_dup(r, flexible);
        if (flexible) {
            kp__read_tagged_fields_skip(r);
        }
    }
}

int kp__metadata_response_read(kp_reader_t *r, int16_t version, kp_metadata_response_t *out)
{
    memset(out, 0, sizeof *out);
    out->controller_id = -1;
    out->cluster_authorized_operations = INT32_MIN;
    if (version < 1 || version > 12) {
        return KP_EINVAL;
    }
    bool flexible = version >= 9;
    if (version >= 3) {
        out->throttle_time_ms = kp__read_i32(r);
    }
    read_brokers(r, version, out);
    if (version >= 2) {
        out->cluster_id = kp__read_nullable_str_dup(r, flexible);
    }
    out->controller_id = kp__read_i32(r);
    /* error(2) + name(>=1) + internal(1) + partitions(>=1) */
    size_t n = read_len_capped(r, flexible, 5, KP_METADATA_MAX_TOPICS, "topics", out);
    out->topics = kp__reader_alloc_array(r, n, sizeof *out->topics);
    for (size_t i = 0; i < n && r->err == 0; i++) {
        out->n_topics = i + 1;
        read_topic(r, version, &out->topics[i], out);
    }
    if (version >= 8 && version <= 10) {
        out->cluster_authorized_operations = kp__read_i32(r);
    }
    if (flexible) {
        kp__read_tagged_fields_skip(r);
    }
    if (r->err != 0) {
        const char *what = out->over_what;
        size_t count = out->over_count, limit = out->over_limit;
        kp__metadata_response_free(out);
        out->over_what = what;
        out->over_count = count;
        out->over_limit = limit;
    }
    return r->err;
}
