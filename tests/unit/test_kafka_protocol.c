/*
 * test_kafka_protocol.c - requests and responses of every version the producer uses:
 * hand-made byte vectors for at least one version of each, encode/decode round trips through
 * test-side response encoders (a broker's side), version negotiation, the ApiVersions
 * UNSUPPORTED_VERSION fallback, truncation at every length, and the broker error table.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "wire/kafka_error.h"
#include "wire/protocol.h"

/* Writes into a fresh growable writer; the test frees it. */
static kp_writer_t writer_new(void)
{
    kp_writer_t w;
    cr_assert_eq(kp__writer_init_growable(&w, 64), 0);
    return w;
}

/* ---------- test encoders: what a broker sends ---------- */

static void enc_api_versions(kp_writer_t *w, int16_t v, int16_t error,
                             const kp_api_version_range_t *apis, size_t n)
{
    bool flex = v >= 3;
    kp__write_i16(w, error);
    kp__write_array_len_v(w, flex, (int32_t)n);
    for (size_t i = 0; i < n; i++) {
        kp__write_i16(w, apis[i].api_key);
        kp__write_i16(w, apis[i].min_version);
        kp__write_i16(w, apis[i].max_version);
        if (flex) {
            kp__write_tagged_fields_empty(w);
        }
    }
    if (v >= 1) {
        kp__write_i32(w, 7);
    }
    if (flex) {
        /* one unknown tag (FinalizedFeaturesEpoch = tag 1, int64) to be skipped */
        kp__write_uvarint(w, 1);
        kp__write_uvarint(w, 1);
        kp__write_uvarint(w, 8);
        kp__write_i64(w, 42);
    }
}

static void enc_metadata(kp_writer_t *w, int16_t v)
{
    bool flex = v >= 9;
    if (v >= 3) {
        kp__write_i32(w, 11);
    }
    kp__write_array_len_v(w, flex, 2);
    for (int b = 0; b < 2; b++) {
        kp__write_i32(w, b + 1);
        kp__write_str(w, flex, b ? "h2" : "host1", b ? 2 : 5);
        kp__write_i32(w, 9092 + b);
        kp__write_nullable_str(w, flex, b ? NULL : "rack-a", 6);
        if (flex) {
            kp__write_tagged_fields_empty(w);
        }
    }
    if (v >= 2) {
        kp__write_nullable_str(w, flex, "cluster", 7);
    }
    kp__write_i32(w, 2);
    kp__write_array_len_v(w, flex, 1);
    kp__write_i16(w, 0);
    kp__write_str(w, flex, "segments", 8);
    if (v >= 10) {
        uint8_t id[16];
        for (int i = 0; i < 16; i++) {
            id[i] = (uint8_t)(i + 1);
        }
        kp__write_uuid(w, id);
    }
    kp__write_bool(w, false);
    kp__write_array_len_v(w, flex, 2);
    for (int p = 0; p < 2; p++) {
        kp__write_i16(w, p ? 5 : 0);
        kp__write_i32(w, p);
        kp__write_i32(w, p ? -1 : 1);
        if (v >= 7) {
            kp__write_i32(w, 3);
        }
        kp__write_array_len_v(w, flex, 2);
        kp__write_i32(w, 1);
        kp__write_i32(w, 2);
        kp__write_array_len_v(w, flex, 1);
        kp__write_i32(w, 1);
        if (v >= 5) {
            kp__write_array_len_v(w, flex, 0);
        }
        if (flex) {
            kp__write_tagged_fields_empty(w);
        }
    }
    if (v >= 8) {
        kp__write_i32(w, 0x55);
    }
    if (flex) {
        kp__write_tagged_fields_empty(w);
    }
    if (v >= 8 && v <= 10) {
        kp__write_i32(w, 0x66);
    }
    if (flex) {
        kp__write_tagged_fields_empty(w);
    }
}

static void enc_produce(kp_writer_t *w, int16_t v)
{
    bool flex = v >= 9;
    kp__write_array_len_v(w, flex, 1);
    kp__write_str(w, flex, "segments", 8);
    kp__write_array_len_v(w, flex, 1);
    kp__write_i32(w, 3);
    kp__write_i16(w, 6);
    kp__write_i64(w, 1000);
    kp__write_i64(w, -1);
    if (v >= 5) {
        kp__write_i64(w, 17);
    }
    if (v >= 8) {
        kp__write_array_len_v(w, flex, 1);
        kp__write_i32(w, 4);
        kp__write_nullable_str(w, flex, "bad", 3);
        if (flex) {
            kp__write_tagged_fields_empty(w);
        }
        kp__write_nullable_str(w, flex, "why", 3);
    }
    if (flex) {
        if (v >= 10) { /* CurrentLeader, tag 0: leader 2, epoch 9, no tags */
            kp__write_uvarint(w, 1);
            kp__write_uvarint(w, 0);
            kp__write_uvarint(w, 9);
            kp__write_i32(w, 2);
            kp__write_i32(w, 9);
            kp__write_tagged_fields_empty(w);
        } else {
            kp__write_tagged_fields_empty(w);
        }
        kp__write_tagged_fields_empty(w); /* topic */
    }
    kp__write_i32(w, 5);
    if (flex) {
        kp__write_tagged_fields_empty(w);
    }
}

static void enc_init_producer_id(kp_writer_t *w, int16_t v)
{
    kp__write_i32(w, 0);
    kp__write_i16(w, 0);
    kp__write_i64(w, 4000);
    kp__write_i16(w, 3);
    if (v >= 2) {
        kp__write_tagged_fields_empty(w);
    }
}

/* ---------- hand-made byte vectors ---------- */

Test(protocol, api_versions_v3_request_bytes)
{
    kp_writer_t w = writer_new();
    size_t start;
    cr_assert_eq(kp__request_begin(&w, KP_API_API_VERSIONS, 3, 1, "c", &start), 0);
    cr_assert_eq(kp__api_versions_request_write(&w, 3, "sw", "1"), 0);
    cr_assert_eq(kp__request_end(&w, start), 0);
    static const uint8_t want[] = {0, 0,   0,   18,                             /* size */
                                   0, 18,  0,   3,  0,   0, 0, 1, 0, 1, 'c', 0, /* header v2 */
                                   3, 's', 'w', 2,  '1', 0};
    cr_assert_eq(w.len, sizeof want);
    cr_assert_arr_eq(w.buf, want, sizeof want);
    kp__writer_free(&w);
}

Test(protocol, metadata_requests_bytes)
{
    const char *topics[] = {"t"};
    kp_metadata_request_t req = {
        .topics = topics, .n_topics = 1, .allow_auto_topic_creation = true};
    kp_writer_t w = writer_new();
    cr_assert_eq(kp__metadata_request_write(&w, 1, &req), 0);
    static const uint8_t v1[] = {0, 0, 0, 1, 0, 1, 't'};
    cr_assert_eq(w.len, sizeof v1);
    cr_assert_arr_eq(w.buf, v1, sizeof v1);
    kp__writer_free(&w);

    w = writer_new();
    cr_assert_eq(kp__metadata_request_write(&w, 12, &req), 0);
    static const uint8_t v12[] = {2, 0,   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* uuid */
                                  2, 't', 0, 1, 0, 0};
    cr_assert_eq(w.len, sizeof v12);
    cr_assert_arr_eq(w.buf, v12, sizeof v12);
    kp__writer_free(&w);

    kp_metadata_request_t all = {.all_topics = true};
    w = writer_new();
    cr_assert_eq(kp__metadata_request_write(&w, 8, &all), 0);
    static const uint8_t v8[] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0};
    cr_assert_eq(w.len, sizeof v8);
    cr_assert_arr_eq(w.buf, v8, sizeof v8);
    kp__writer_free(&w);
}

Test(protocol, produce_v3_and_v9_request_bytes)
{
    static const uint8_t batch[] = {0xde, 0xad};
    kp_produce_partition_data_t part = {.partition = 2, .records = batch, .records_len = 2};
    kp_produce_topic_data_t topic = {.topic = "t", .partitions = &part, .n_partitions = 1};
    kp_produce_request_t req = {.acks = -1, .timeout_ms = 30000, .topics = &topic, .n_topics = 1};
    kp_writer_t w = writer_new();
    cr_assert_eq(kp__produce_request_write(&w, 3, &req), 0);
    static const uint8_t v3[] = {0xff, 0xff, 0xff, 0xff, 0,   0, 0x75, 0x30, 0,   0,
                                 0,    1,    0,    1,    't', 0, 0,    0,    1,   0,
                                 0,    0,    2,    0,    0,   0, 2,    0xde, 0xad};
    cr_assert_eq(w.len, sizeof v3);
    cr_assert_arr_eq(w.buf, v3, sizeof v3);
    kp__writer_free(&w);

    w = writer_new();
    cr_assert_eq(kp__produce_request_write(&w, 9, &req), 0);
    static const uint8_t v9[] = {0, 0xff, 0xff, 0, 0, 0x75, 0x30, 2, 2, 't', 2,
                                 0, 0,    0,    2, 3, 0xde, 0xad, 0, 0, 0};
    cr_assert_eq(w.len, sizeof v9);
    cr_assert_arr_eq(w.buf, v9, sizeof v9);
    kp__writer_free(&w);
}

Test(protocol, init_producer_id_request_bytes)
{
    kp_init_producer_id_request_t req = {
        .transaction_timeout_ms = 0x7fffffff, .producer_id = -1, .producer_epoch = -1};
    kp_writer_t w = writer_new();
    cr_assert_eq(kp__init_producer_id_request_write(&w, 4, &req), 0);
    static const uint8_t v4[] = {0,    0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0};
    cr_assert_eq(w.len, sizeof v4);
    cr_assert_arr_eq(w.buf, v4, sizeof v4);
    kp__writer_free(&w);
    w = writer_new();
    cr_assert_eq(kp__init_producer_id_request_write(&w, 0, &req), 0);
    static const uint8_t v0[] = {0xff, 0xff, 0x7f, 0xff, 0xff, 0xff};
    cr_assert_eq(w.len, sizeof v0);
    cr_assert_arr_eq(w.buf, v0, sizeof v0);
    kp__writer_free(&w);
}

Test(protocol, api_versions_v0_fallback_bytes)
{
    /* A broker that cannot do our v3 answers: error 35, v0 body with its ApiVersions 0..2. */
    static const uint8_t body[] = {0, 35, 0, 0, 0, 1, 0, 18, 0, 0, 0, 2};
    kp_reader_t r;
    kp__reader_init(&r, body, sizeof body);
    kp_api_versions_response_t resp;
    cr_assert_eq(kp__api_versions_response_read(&r, 3, &resp), 0);
    cr_expect_eq(resp.error_code, 35);
    cr_expect_eq(resp.decoded_as_version, 0);
    cr_assert_eq(resp.n_apis, 1);
    int16_t v;
    cr_expect_eq(kp__api_version_pick(resp.apis, resp.n_apis, KP_API_API_VERSIONS, &v), 0);
    cr_expect_eq(v, 2, "retry ApiVersions with the broker's max");
    kp__api_versions_response_free(&resp);
}

Test(protocol, response_header_bytes)
{
    static const uint8_t v1[] = {0, 0, 0, 9, 1, 0, 1, 0x99, 0x42}; /* tag 0 = 0x99 */
    kp_reader_t r;
    kp__reader_init(&r, v1, sizeof v1);
    int32_t corr;
    cr_assert_eq(kp__response_header_read(&r, KP_API_METADATA, 12, &corr), 0);
    cr_expect_eq(corr, 9);
    cr_expect_eq(kp__read_i8(&r), 0x42, "header v1 tagged fields skipped");
    kp__reader_init(&r, v1, sizeof v1);
    cr_assert_eq(kp__response_header_read(&r, KP_API_API_VERSIONS, 3, &corr), 0);
    cr_expect_eq(r.pos, 4, "ApiVersions v3 still has header v0");
}

Test(protocol, produce_v8_response_bytes)
{
    static const uint8_t body[] = {
        0,    0,    0,    1,    0,    1,    't',  0,    0,    0,    1, /* topic t, 1 partition */
        0,    0,    0,    0,    0,    87,                              /* p0, INVALID_RECORD */
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0,    0,    0,    0,    0,    0,    0,    0, /* log start 0 */
        0,    0,    0,    1,    0,    0,    0,    3,    0,    1,    'x',     /* record 3: "x" */
        0,    2,    'e',  'm',                                               /* error message */
        0,    0,    0,    0};                                                /* throttle */
    kp_reader_t r;
    kp__reader_init(&r, body, sizeof body);
    kp_produce_response_t resp;
    cr_assert_eq(kp__produce_response_read(&r, 8, &resp), 0);
    cr_assert_eq(resp.n_topics, 1);
    cr_expect_str_eq(resp.topics[0].topic, "t");
    kp_produce_partition_response_t *p = &resp.topics[0].partitions[0];
    cr_expect_eq(p->error_code, 87);
    cr_expect_eq(p->base_offset, -1);
    cr_assert_eq(p->n_record_errors, 1);
    cr_expect_eq(p->record_errors[0].batch_index, 3);
    cr_expect_str_eq(p->record_errors[0].message, "x");
    cr_expect_str_eq(p->error_message, "em");
    cr_expect_eq(kp__reader_remaining(&r), 0);
    kp__produce_response_free(&resp);
}

Test(protocol, metadata_v1_and_init_producer_id_v0_response_bytes)
{
    static const uint8_t md[] = {0,    0, 0, 1, 0, 0, 0, 1, 0,   1, 'h', 0, 0, 0x23, 0x84, 0xff,
                                 0xff, 0, 0, 0, 1,                                /* controller */
                                 0,    0, 0, 1, 0, 0, 0, 1, 't', 0,               /* topic t */
                                 0,    0, 0, 1, 0, 0, 0, 0, 0,   0, 0,   0, 0, 1, /* p0 leader 1 */
                                 0,    0, 0, 1, 0, 0, 0, 1, 0,   0, 0,   1, 0, 0,    0,    1};
    kp_reader_t r;
    kp__reader_init(&r, md, sizeof md);
    kp_metadata_response_t m;
    cr_assert_eq(kp__metadata_response_read(&r, 1, &m), 0);
    cr_assert_eq(m.n_brokers, 1);
    cr_expect_str_eq(m.brokers[0].host, "h");
    cr_expect_eq(m.brokers[0].port, 9092);
    cr_expect_null(m.brokers[0].rack);
    cr_expect_eq(m.controller_id, 1);
    cr_assert_eq(m.n_topics, 1);
    cr_expect_str_eq(m.topics[0].name, "t");
    cr_assert_eq(m.topics[0].n_partitions, 1);
    cr_expect_eq(m.topics[0].partitions[0].leader_id, 1);
    cr_expect_eq(m.topics[0].partitions[0].leader_epoch, -1);
    cr_expect_eq(m.topics[0].partitions[0].n_isr, 1);
    kp__metadata_response_free(&m);

    static const uint8_t ip[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 1};
    kp__reader_init(&r, ip, sizeof ip);
    kp_init_producer_id_response_t resp;
    cr_assert_eq(kp__init_producer_id_response_read(&r, 0, &resp), 0);
    cr_expect_eq(resp.producer_id, 4096);
    cr_expect_eq(resp.producer_epoch, 1);
}

/* ---------- round trips over every version ---------- */

Test(protocol, api_versions_all_versions)
{
    kp_api_version_range_t apis[] = {{0, 3, 11}, {3, 0, 12}, {18, 0, 4}, {22, 0, 5}};
    for (int16_t v = 0; v <= 3; v++) {
        kp_writer_t w = writer_new();
        cr_assert_eq(kp__api_versions_request_write(&w, v, NULL, NULL), 0);
        cr_expect_eq(w.len == 0, v < 3, "v%d request body", v);
        w.len = 0;
        enc_api_versions(&w, v, 0, apis, 4);
        cr_assert_eq(w.err, 0);
        kp_reader_t r;
        kp__reader_init(&r, w.buf, w.len);
        kp_api_versions_response_t resp;
        cr_assert_eq(kp__api_versions_response_read(&r, v, &resp), 0, "v%d", v);
        cr_expect_eq(resp.decoded_as_version, v);
        cr_assert_eq(resp.n_apis, 4);
        cr_expect_eq(resp.apis[2].max_version, 4);
        cr_expect_eq(resp.throttle_time_ms, v >= 1 ? 7 : 0);
        cr_expect_eq(kp__reader_remaining(&r), 0);
        int16_t pv;
        cr_expect_eq(kp__api_version_pick(resp.apis, resp.n_apis, KP_API_PRODUCE, &pv), 0);
        cr_expect_eq(pv, 11);
        cr_expect_eq(kp__api_version_pick(resp.apis, resp.n_apis, KP_API_METADATA, &pv), 0);
        cr_expect_eq(pv, 12);
        cr_expect_eq(kp__api_version_pick(resp.apis, resp.n_apis, KP_API_INIT_PRODUCER_ID, &pv), 0);
        cr_expect_eq(pv, 4, "min(our 4, broker 5)");
        kp__api_versions_response_free(&resp);
        kp__writer_free(&w);
    }
}

Test(protocol, metadata_all_versions)
{
    for (int16_t v = 1; v <= 12; v++) {
        kp_writer_t w = writer_new();
        const char *topics[] = {"a", "segments"};
        kp_metadata_request_t req = {.topics = topics, .n_topics = 2};
        cr_assert_eq(kp__metadata_request_write(&w, v, &req), 0, "v%d request", v);
        w.len = 0;
        enc_metadata(&w, v);
        cr_assert_eq(w.err, 0);
        kp_reader_t r;
        kp__reader_init(&r, w.buf, w.len);
        kp_metadata_response_t m;
        cr_assert_eq(kp__metadata_response_read(&r, v, &m), 0, "v%d", v);
        cr_expect_eq(kp__reader_remaining(&r), 0, "v%d consumed", v);
        cr_expect_eq(m.throttle_time_ms, v >= 3 ? 11 : 0);
        cr_assert_eq(m.n_brokers, 2);
        cr_expect_str_eq(m.brokers[0].host, "host1");
        cr_expect_str_eq(m.brokers[0].rack, "rack-a");
        cr_expect_null(m.brokers[1].rack);
        cr_expect_eq(m.brokers[1].port, 9093);
        if (v >= 2) {
            cr_expect_str_eq(m.cluster_id, "cluster");
        }
        cr_expect_eq(m.controller_id, 2);
        cr_assert_eq(m.n_topics, 1);
        kp_metadata_topic_t *t = &m.topics[0];
        cr_expect_str_eq(t->name, "segments");
        cr_expect_eq(t->topic_id[15], v >= 10 ? 16 : 0);
        cr_assert_eq(t->n_partitions, 2);
        cr_expect_eq(t->partitions[1].error_code, 5);
        cr_expect_eq(t->partitions[1].leader_id, -1);
        cr_expect_eq(t->partitions[0].leader_epoch, v >= 7 ? 3 : -1);
        cr_expect_eq(t->partitions[0].n_replicas, 2);
        cr_expect_eq(t->partitions[0].replicas[1], 2);
        cr_expect_eq(t->topic_authorized_operations, v >= 8 ? 0x55 : INT32_MIN);
        cr_expect_eq(m.cluster_authorized_operations, (v >= 8 && v <= 10) ? 0x66 : INT32_MIN);
        kp__metadata_response_free(&m);
        kp__writer_free(&w);
    }
}

Test(protocol, produce_all_versions)
{
    for (int16_t v = 3; v <= 11; v++) {
        kp_writer_t w = writer_new();
        enc_produce(&w, v);
        cr_assert_eq(w.err, 0);
        kp_reader_t r;
        kp__reader_init(&r, w.buf, w.len);
        kp_produce_response_t resp;
        cr_assert_eq(kp__produce_response_read(&r, v, &resp), 0, "v%d", v);
        cr_expect_eq(kp__reader_remaining(&r), 0, "v%d consumed", v);
        cr_assert_eq(resp.n_topics, 1);
        cr_assert_eq(resp.topics[0].n_partitions, 1);
        kp_produce_partition_response_t *p = &resp.topics[0].partitions[0];
        cr_expect_eq(p->partition, 3);
        cr_expect_eq(p->error_code, 6);
        cr_expect_eq(p->base_offset, 1000);
        cr_expect_eq(p->log_start_offset, v >= 5 ? 17 : -1);
        cr_expect_eq(p->n_record_errors, v >= 8 ? 1u : 0u);
        if (v >= 8) {
            cr_expect_str_eq(p->error_message, "why");
        }
        cr_expect_eq(p->current_leader_id, v >= 10 ? 2 : -1);
        cr_expect_eq(p->current_leader_epoch, v >= 10 ? 9 : -1);
        cr_expect_eq(resp.throttle_time_ms, 5);
        kp__produce_response_free(&resp);
        kp__writer_free(&w);
    }
}

Test(protocol, init_producer_id_all_versions)
{
    for (int16_t v = 0; v <= 4; v++) {
        kp_writer_t w = writer_new();
        kp_init_producer_id_request_t req = {.transactional_id = NULL,
                                             .transaction_timeout_ms = 60000,
                                             .producer_id = -1,
                                             .producer_epoch = -1};
        cr_assert_eq(kp__init_producer_id_request_write(&w, v, &req), 0);
        size_t want = (v >= 2 ? 1 : 2) + 4 + (v >= 3 ? 10 : 0) + (v >= 2 ? 1 : 0);
        cr_expect_eq(w.len, want, "v%d request size", v);
        w.len = 0;
        enc_init_producer_id(&w, v);
        kp_reader_t r;
        kp__reader_init(&r, w.buf, w.len);
        kp_init_producer_id_response_t resp;
        cr_assert_eq(kp__init_producer_id_response_read(&r, v, &resp), 0);
        cr_expect_eq(resp.producer_id, 4000);
        cr_expect_eq(resp.producer_epoch, 3);
        cr_expect_eq(kp__reader_remaining(&r), 0);
        kp__writer_free(&w);
    }
}

/* Every prefix of a valid response must fail cleanly (and leak nothing under ASan). */
Test(protocol, truncation_at_every_length)
{
    for (int16_t v = 1; v <= 12; v++) {
        kp_writer_t w = writer_new();
        enc_metadata(&w, v);
        for (size_t len = 0; len < w.len; len++) {
            kp_reader_t r;
            kp__reader_init(&r, w.buf, len);
            kp_metadata_response_t m;
            int rc = kp__metadata_response_read(&r, v, &m);
            cr_assert(rc == KP_ETRUNCATED || rc == KP_EMALFORMED, "metadata v%d len %zu: %d", v,
                      len, rc);
            cr_assert_null(m.brokers);
            kp__metadata_response_free(&m);
        }
        kp__writer_free(&w);
    }
    for (int16_t v = 3; v <= 11; v++) {
        kp_writer_t w = writer_new();
        enc_produce(&w, v);
        for (size_t len = 0; len < w.len; len++) {
            kp_reader_t r;
            kp__reader_init(&r, w.buf, len);
            kp_produce_response_t p;
            int rc = kp__produce_response_read(&r, v, &p);
            cr_assert(rc < 0, "produce v%d len %zu", v, len);
            kp__produce_response_free(&p);
        }
        kp__writer_free(&w);
    }
}

Test(protocol, version_negotiation)
{
    kp_api_version_range_t old[] = {{0, 0, 2}, {3, 0, 0}};
    int16_t v = -1;
    cr_expect_eq(kp__api_version_pick(old, 2, KP_API_PRODUCE, &v), KP_EUNSUPPORTED_VERSION,
                 "broker max 2 < our min 3");
    cr_expect_eq(kp__api_version_pick(old, 2, KP_API_METADATA, &v), KP_EUNSUPPORTED_VERSION);
    cr_expect_eq(kp__api_version_pick(old, 2, KP_API_INIT_PRODUCER_ID, &v), KP_EUNSUPPORTED_VERSION,
                 "not listed");
    kp_api_version_range_t future[] = {{3, 13, 20}};
    cr_expect_eq(kp__api_version_pick(future, 1, KP_API_METADATA, &v), KP_EUNSUPPORTED_VERSION,
                 "broker min 13 > our max 12");
    kp_api_version_range_t kafka4[] = {{0, 3, 12}};
    cr_expect_eq(kp__api_version_pick(kafka4, 1, KP_API_PRODUCE, &v), 0);
    cr_expect_eq(v, 11, "never v12/v13 even if offered");
    cr_expect_eq(kp__api_version_pick(kafka4, 1, 99, &v), KP_EINVAL);
    cr_expect(kp__api_is_flexible(KP_API_PRODUCE, 9));
    cr_expect(!kp__api_is_flexible(KP_API_PRODUCE, 8));
    cr_expect_eq(kp__request_header_version(KP_API_INIT_PRODUCER_ID, 2), 2);
    cr_expect_eq(kp__response_header_version(KP_API_API_VERSIONS, 3), 0);
    cr_expect_eq(kp__response_header_version(KP_API_METADATA, 9), 1);
    kp_writer_t w = writer_new();
    size_t start;
    cr_expect_eq(kp__request_begin(&w, KP_API_PRODUCE, 2, 1, NULL, &start), KP_EINVAL,
                 "Produce v2 is never sent");
    kp__writer_free(&w);
}

Test(protocol, kafka_error_table)
{
    cr_expect_str_eq(kp__kafka_error_name(6), "NOT_LEADER_OR_FOLLOWER");
    cr_expect_str_eq(kp__kafka_error_name(-1), "UNKNOWN_SERVER_ERROR");
    cr_expect_str_eq(kp__kafka_error_name(46), "DUPLICATE_SEQUENCE_NUMBER");
    cr_expect_str_eq(kp__kafka_error_name(3000), "UNKNOWN_ERROR_CODE");
    /* DESIGN.md's lists, then the Java client's other retriable errors. */
    static const int16_t refresh[] = {3, 5, 6, 13, 56, 8, 9, 72, 74, 75, 100, 103};
    static const int16_t retry[] = {7,  19, 20, 89, 2,  14, 15, 16, 41,
                                    70, 71, 78, 80, 83, 84, 88, 106};
    static const int16_t fatal[] = {18, 29, 45, 47, 59, 87, -1, 35, 90, 120, 999};
    for (size_t i = 0; i < sizeof refresh / sizeof refresh[0]; i++) {
        cr_expect_eq(kp__kafka_error_classify(refresh[i], 5), KP_KAFKA_ERROR_RETRIABLE_REFRESH,
                     "%d", refresh[i]);
    }
    for (size_t i = 0; i < sizeof retry / sizeof retry[0]; i++) {
        cr_expect_eq(kp__kafka_error_classify(retry[i], 5), KP_KAFKA_ERROR_RETRIABLE, "%d",
                     retry[i]);
    }
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
        cr_expect_eq(kp__kafka_error_classify(fatal[i], 5), KP_KAFKA_ERROR_FATAL, "%d", fatal[i]);
    }
    cr_expect_eq(kp__kafka_error_classify(10, 1), KP_KAFKA_ERROR_FATAL);
    cr_expect_eq(kp__kafka_error_classify(10, 2), KP_KAFKA_ERROR_SPLIT);
    cr_expect_eq(kp__kafka_error_classify(46, 2), KP_KAFKA_ERROR_SUCCESS);
    cr_expect_eq(kp__kafka_error_classify(0, 2), KP_KAFKA_ERROR_SUCCESS);
    cr_expect_str_eq(kp__kafka_error_class_name(KP_KAFKA_ERROR_SPLIT), "SPLIT");
}
