/* Interop of the wire layer (producer/src/wire) with a real Apache Kafka 4.x broker.
 *
 * Over a plain blocking socket, without the producer runtime: ApiVersions, Metadata for the
 * topic (to find the partition leader), then Produce with acks=-1 carrying RecordBatch v2
 * batches written by kp_record_batch_* (uncompressed, gzip, lz4 and zstd; keys, a null key, a null
 * value, empty key/value, binary bytes, headers with empty and null values, timestamps before and
 * after the base). The broker must accept them without error, and kcat (librdkafka, an
 * independent implementation) must read back every record byte for byte, with its timestamp
 * and headers, at the offsets the Produce response gave. Produce v3 (the oldest Kafka 4
 * accepts) and the newest version both broker and we speak are both exercised. */
#include <criterion/criterion.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "kafka_test_env.h"
#include "wire/codec.h"
#include "wire/protocol.h"
#include "wire/record_batch.h"

#define MAX_RECORDS   8
#define BIG_VALUE_LEN 20000

/* ---- the records every batch carries ---- */

typedef struct test_record {
    int64_t ts_offset; /* from the batch's base timestamp */
    const char *key;   /* NULL = null key */
    size_t key_len;
    const uint8_t *value; /* NULL = null value */
    size_t value_len;
    kp_record_header_t headers[3];
    size_t n_headers;
} test_record_t;

static uint8_t binary_value[256];
static uint8_t big_value[BIG_VALUE_LEN];
static test_record_t records[MAX_RECORDS];
static size_t n_records;

static void records_init(void)
{
    for (size_t i = 0; i < sizeof binary_value; i++) {
        binary_value[i] = (uint8_t)i; /* includes '\n', '|', NUL */
    }
    for (size_t i = 0; i < sizeof big_value; i++) {
        big_value[i] = (uint8_t)("skywalking-c segment "[i % 21] ^ (i / 997));
    }
    static const char text[] = "value-without-key";
    n_records = 0;
    records[n_records++] = (test_record_t){
        .ts_offset = 0,
        .key = "key-0",
        .key_len = 5,
        .value = binary_value,
        .value_len = sizeof binary_value,
        .n_headers = 3,
        .headers = {{"trace", 5, "abc", 3}, {"empty", 5, "", 0}, {"nullv", 5, NULL, 0}}};
    records[n_records++] = (test_record_t){
        .ts_offset = 7, .key = NULL, .value = (const uint8_t *)text, .value_len = sizeof text - 1};
    records[n_records++] =
        (test_record_t){.ts_offset = 1000, .key = "key-2", .key_len = 5, .value = NULL};
    /* Earlier than the base timestamp: a negative timestamp delta. */
    records[n_records++] = (test_record_t){
        .ts_offset = -3, .key = "", .key_len = 0, .value = (const uint8_t *)"", .value_len = 0};
    records[n_records++] = (test_record_t){.ts_offset = 42,
                                           .key = "key-4",
                                           .key_len = 5,
                                           .value = big_value,
                                           .value_len = sizeof big_value,
                                           .n_headers = 1,
                                           .headers = {{"sw8", 3, "1-abc-def", 9}}};
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- a blocking connection ---- */

static int conn_open(const char *host, int port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    char port_s[16];
    struct timeval tv = {.tv_sec = 30};
    int fd = -1;

    snprintf(port_s, sizeof port_s, "%d", port);
    cr_assert_eq(getaddrinfo(host, port_s, &hints, &ai), 0, "cannot resolve %s", host);
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    cr_assert(fd >= 0, "cannot connect to %s:%d", host, port);
    /* Bounded waits: a broker that never answers fails the test instead of hanging it. */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

static void io_all(int fd, void *buf, size_t len, bool writing)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = writing ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
        cr_assert(n > 0, "%s failed or timed out (%zd)", writing ? "send" : "recv", n);
        p += n;
        len -= (size_t)n;
    }
}

/* Sends the framed request in w and returns the response frame (without its size prefix) in
 * a heap buffer; checks the correlation id and leaves *r on the body. */
static uint8_t *rpc(int fd, kp_writer_t *w, int16_t api_key, int16_t version, int32_t corr,
                    kp_reader_t *r)
{
    uint8_t size_be[4];
    int32_t got_corr = -1;

    cr_assert_eq(w->err, 0, "request encoding failed: %s", kp_err_name(w->err));
    io_all(fd, w->buf, w->len, true);
    io_all(fd, size_be, 4, false);
    uint32_t size = (uint32_t)size_be[0] << 24 | (uint32_t)size_be[1] << 16 |
                    (uint32_t)size_be[2] << 8 | size_be[3];
    cr_assert(size >= 4 && size < 64u * 1024 * 1024, "response size %u", size);
    uint8_t *body = malloc(size);
    cr_assert_not_null(body);
    io_all(fd, body, size, false);
    kp__reader_init(r, body, size);
    cr_assert_eq(kp__response_header_read(r, api_key, version, &got_corr), 0,
                 "bad response header (api %d v%d)", api_key, version);
    cr_assert_eq(got_corr, corr, "correlation id %d, expected %d", got_corr, corr);
    return body;
}

/* ---- one session with the broker ---- */

typedef struct session {
    int fd;
    int32_t corr;
    kp_api_versions_response_t apis;
} session_t;

static void session_api_versions(session_t *s)
{
    int16_t version = 3;
    for (int attempt = 0; attempt < 2; attempt++) {
        kp_writer_t w;
        kp_reader_t r;
        size_t frame;
        int32_t corr = ++s->corr;
        cr_assert_eq(kp__writer_init_growable(&w, 0), 0);
        kp__request_begin(&w, KP_API_API_VERSIONS, version, corr, "sw-interop", &frame);
        kp__api_versions_request_write(&w, version, NULL, NULL);
        kp__request_end(&w, frame);
        uint8_t *body = rpc(s->fd, &w, KP_API_API_VERSIONS, version, corr, &r);
        kp__writer_free(&w);
        int rc = kp__api_versions_response_read(&r, version, &s->apis);
        free(body);
        cr_assert_eq(rc, 0, "ApiVersions v%d response: %s", version, kp_err_name(rc));
        if (s->apis.error_code == 0) {
            return;
        }
        cr_assert_eq(s->apis.error_code, 35, "ApiVersions error %d", s->apis.error_code);
        cr_assert_eq(
            kp__api_version_pick(s->apis.apis, s->apis.n_apis, KP_API_API_VERSIONS, &version), 0);
        kp__api_versions_response_free(&s->apis);
    }
    cr_assert_fail("ApiVersions failed twice");
}

static int16_t session_pick(const session_t *s, int16_t api_key)
{
    int16_t v = -1;
    int rc = kp__api_version_pick(s->apis.apis, s->apis.n_apis, api_key, &v);
    cr_assert_eq(rc, 0, "no common version for api %d: %s", api_key, kp_err_name(rc));
    return v;
}

/* True when the broker accepts `version` of api_key. */
static bool session_supports(const session_t *s, int16_t api_key, int16_t version)
{
    for (size_t i = 0; i < s->apis.n_apis; i++) {
        if (s->apis.apis[i].api_key == api_key) {
            return version >= s->apis.apis[i].min_version && version <= s->apis.apis[i].max_version;
        }
    }
    return false;
}

static void session_open(session_t *s, const char *host, int port)
{
    memset(s, 0, sizeof *s);
    s->fd = conn_open(host, port);
    session_api_versions(s);
}

static void session_close(session_t *s)
{
    kp__api_versions_response_free(&s->apis);
    close(s->fd);
    s->fd = -1;
}

/* Connects to the first bootstrap address, asks Metadata for `topic`, and reconnects to the
 * leader of `partition` if that is another broker. */
static void session_open_leader(session_t *s, const char *topic, int32_t partition)
{
    sw_test_kafka_t k;
    char host[256];
    int port;

    cr_assert_eq(sw_test_kafka_fixture(&k), 0, "the fixture broker is not available");
    cr_assert_eq(sscanf(k.bootstrap, "%255[^:]:%d", host, &port), 2, "bootstrap '%s'", k.bootstrap);
    session_open(s, host, port);

    int16_t version = session_pick(s, KP_API_METADATA);
    const char *topics[] = {topic};
    kp_metadata_request_t req = {.topics = topics, .n_topics = 1};
    kp_metadata_response_t md;
    kp_writer_t w;
    kp_reader_t r;
    size_t frame;
    int32_t corr = ++s->corr;

    cr_assert_eq(kp__writer_init_growable(&w, 0), 0);
    kp__request_begin(&w, KP_API_METADATA, version, corr, "sw-interop", &frame);
    kp__metadata_request_write(&w, version, &req);
    kp__request_end(&w, frame);
    uint8_t *body = rpc(s->fd, &w, KP_API_METADATA, version, corr, &r);
    kp__writer_free(&w);
    int rc = kp__metadata_response_read(&r, version, &md);
    free(body);
    cr_assert_eq(rc, 0, "Metadata v%d response: %s", version, kp_err_name(rc));
    cr_assert_eq(md.n_topics, 1);
    cr_assert_eq(md.topics[0].error_code, 0, "topic %s: error %d", topic, md.topics[0].error_code);
    int32_t leader = -1;
    for (size_t i = 0; i < md.topics[0].n_partitions; i++) {
        if (md.topics[0].partitions[i].partition == partition) {
            leader = md.topics[0].partitions[i].leader_id;
        }
    }
    cr_assert(leader >= 0, "%s[%d] has no leader", topic, partition);
    for (size_t i = 0; i < md.n_brokers; i++) {
        if (md.brokers[i].node_id != leader) {
            continue;
        }
        if (strcmp(md.brokers[i].host, host) != 0 || md.brokers[i].port != port) {
            session_close(s);
            session_open(s, md.brokers[i].host, md.brokers[i].port);
        }
        kp__metadata_response_free(&md);
        return;
    }
    kp__metadata_response_free(&md);
    cr_assert_fail("leader %d of %s[%d] is not among the brokers", leader, topic, partition);
}

/* ---- batches ---- */

typedef struct batch {
    uint8_t block[64 * 1024];
    kp_record_batch_t b;
    int64_t base_ts;
    const uint8_t *data;
    size_t len;
} batch_t;

static void batch_build(batch_t *bt, kp_compression_t compression)
{
    bt->base_ts = now_ms();
    cr_assert_eq(kp__record_batch_init(&bt->b, bt->block, sizeof bt->block, bt->base_ts), 0);
    for (size_t i = 0; i < n_records; i++) {
        const test_record_t *t = &records[i];
        int rc = kp__record_batch_try_append(&bt->b, bt->base_ts + t->ts_offset, t->key, t->key_len,
                                             t->value, t->value_len,
                                             t->n_headers ? t->headers : NULL, t->n_headers);
        cr_assert_eq(rc, 0, "append of record %zu: %s", i, kp_err_name(rc));
    }
    kp_batch_compression_t c = {.type = compression, .level = -1};
    int rc = kp__record_batch_close(&bt->b, -1, -1, -1, &c);
    cr_assert_eq(rc, 0, "close: %s", kp_err_name(rc));
    bt->data = kp__record_batch_data(&bt->b, &bt->len);
    cr_assert_not_null(bt->data);
    if (compression != KP_COMPRESSION_NONE) {
        cr_assert_lt(bt->len, (size_t)BIG_VALUE_LEN,
                     "codec %d did not shrink the batch (%zu bytes)", (int)compression, bt->len);
    }
}

/* ---- Produce ---- */

/* Sends one Produce (acks=-1) with one batch per partition of `topic` and checks that every
 * partition answers without error; stores the base offsets in base_offsets[]. */
static void produce(session_t *s, int16_t version, const char *topic, const int32_t *partitions,
                    batch_t *const *batches, size_t n, int64_t *base_offsets)
{
    kp_produce_partition_data_t pd[4];
    kp_produce_topic_data_t td = {.topic = topic, .partitions = pd, .n_partitions = n};
    kp_produce_request_t req = {.acks = -1, .timeout_ms = 30000, .topics = &td, .n_topics = 1};
    kp_produce_response_t resp;
    kp_writer_t w;
    kp_reader_t r;
    size_t frame;
    int32_t corr = ++s->corr;

    cr_assert(n <= 4);
    for (size_t i = 0; i < n; i++) {
        pd[i] = (kp_produce_partition_data_t){partitions[i], batches[i]->data, batches[i]->len};
    }
    cr_assert_eq(kp__writer_init_growable(&w, 0), 0);
    kp__request_begin(&w, KP_API_PRODUCE, version, corr, "sw-interop", &frame);
    int rc = kp__produce_request_write(&w, version, &req);
    cr_assert_eq(rc, 0, "Produce v%d encoding: %s", version, kp_err_name(rc));
    kp__request_end(&w, frame);
    uint8_t *body = rpc(s->fd, &w, KP_API_PRODUCE, version, corr, &r);
    kp__writer_free(&w);
    rc = kp__produce_response_read(&r, version, &resp);
    free(body);
    cr_assert_eq(rc, 0, "Produce v%d response: %s", version, kp_err_name(rc));
    cr_assert_eq(resp.n_topics, 1);
    cr_assert_str_eq(resp.topics[0].topic, topic);
    cr_assert_eq(resp.topics[0].n_partitions, n);
    for (size_t i = 0; i < n; i++) {
        const kp_produce_partition_response_t *p = NULL;
        for (size_t j = 0; j < n; j++) {
            if (resp.topics[0].partitions[j].partition == partitions[i]) {
                p = &resp.topics[0].partitions[j];
            }
        }
        cr_assert_not_null(p, "no response for partition %d", partitions[i]);
        cr_assert_eq(p->error_code, 0, "Produce v%d %s[%d]: broker error %d (%s)", version, topic,
                     partitions[i], p->error_code,
                     p->error_message ? p->error_message : "no message");
        cr_assert_geq(p->base_offset, 0);
        cr_assert_eq(p->log_append_time_ms, -1, "topic should use CreateTime");
        if (version >= 5) {
            cr_assert(p->log_start_offset >= 0 && p->log_start_offset <= p->base_offset);
        }
        base_offsets[i] = p->base_offset;
    }
    kp__produce_response_free(&resp);
}

/* ---- read back with kcat ---- */

/* kcat's rendering of a record's headers: "name=value" joined by ',', a null value as NULL. */
static void headers_render(const test_record_t *t, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t h = 0; h < t->n_headers; h++) {
        const kp_record_header_t *hd = &t->headers[h];
        len += (size_t)snprintf(out + len, cap - len, "%s%.*s=%.*s", h ? "," : "", (int)hd->key_len,
                                hd->key, hd->value ? (int)hd->value_len : 4,
                                hd->value ? (const char *)hd->value : "NULL");
        cr_assert_lt(len, cap);
    }
}

/* Parses one record printed with "%o|%T|%K|%S|%k%s|%h\n" at *pos and compares it with t. */
static void record_check(const char *out, size_t len, size_t *pos, const test_record_t *t,
                         int64_t want_offset, int64_t want_ts)
{
    long long offset, ts;
    long key_len, value_len;
    int used = 0;
    char want_headers[256];

    cr_assert_lt(*pos, len, "kcat printed fewer records than produced");
    cr_assert_eq(
        sscanf(out + *pos, "%lld|%lld|%ld|%ld|%n", &offset, &ts, &key_len, &value_len, &used), 4,
        "unparsable kcat output at byte %zu", *pos);
    *pos += (size_t)used;
    cr_assert_eq(offset, want_offset);
    cr_assert_eq(ts, want_ts, "offset %lld: timestamp", offset);
    cr_assert_eq(key_len, t->key ? (long)t->key_len : -1, "offset %lld: key length", offset);
    cr_assert_eq(value_len, t->value ? (long)t->value_len : -1, "offset %lld: value length",
                 offset);
    size_t kl = key_len > 0 ? (size_t)key_len : 0, vl = value_len > 0 ? (size_t)value_len : 0;
    cr_assert_leq(*pos + kl + vl + 1, len, "kcat output truncated");
    cr_assert(kl == 0 || memcmp(out + *pos, t->key, kl) == 0, "offset %lld: key bytes", offset);
    *pos += kl;
    cr_assert(vl == 0 || memcmp(out + *pos, t->value, vl) == 0, "offset %lld: value bytes", offset);
    *pos += vl;
    cr_assert_eq(out[(*pos)++], '|');
    headers_render(t, want_headers, sizeof want_headers);
    size_t hl = strlen(want_headers);
    cr_assert_leq(*pos + hl + 1, len);
    cr_assert(memcmp(out + *pos, want_headers, hl) == 0 && out[*pos + hl] == '\n',
              "offset %lld: headers differ, want '%s' got '%.*s'", offset, want_headers,
              (int)(hl + 1), out + *pos);
    *pos += hl + 1;
}

static void read_back(const char *topic, int32_t partition, int64_t base_offset, const batch_t *bt)
{
    sw_test_kafka_t k;
    size_t len = 0, pos = 0;

    cr_assert_eq(sw_test_kafka_fixture(&k), 0);
    char *out = sw_test_kafka_consume(k.bootstrap, topic, partition, base_offset, (int)n_records,
                                      "%o|%T|%K|%S|%k%s|%h\n", &len);
    cr_assert_not_null(out, "kcat could not read %s[%d] from offset %lld", topic, partition,
                       (long long)base_offset);
    for (size_t i = 0; i < n_records; i++) {
        record_check(out, len, &pos, &records[i], base_offset + (int64_t)i,
                     bt->base_ts + records[i].ts_offset);
    }
    cr_assert_eq(pos, len, "kcat printed more than the %zu records", n_records);
    free(out);
}

/* ---- tests ---- */

/* version 0: the newest version both sides speak. */
static void produce_one(int16_t version, kp_compression_t compression)
{
    static batch_t bt; /* 64 KiB: not on the stack */
    session_t s;
    const char *topic = "sw-test-1p";
    int32_t partition = 0;
    int64_t base = -1;

    records_init();
    session_open_leader(&s, topic, partition);
    if (version == 0) {
        version = session_pick(&s, KP_API_PRODUCE);
    }
    cr_assert(session_supports(&s, KP_API_PRODUCE, version), "broker rejects Produce v%d", version);
    batch_build(&bt, compression);
    batch_t *batches[] = {&bt};
    produce(&s, version, topic, &partition, batches, 1, &base);
    session_close(&s);
    read_back(topic, partition, base, &bt);
    kp__record_batch_release(&bt.b);
}

Test(kafka_wire_interop, produce_v3_uncompressed)
{
    produce_one(3, KP_COMPRESSION_NONE);
}
Test(kafka_wire_interop, produce_v3_gzip)
{
    produce_one(3, KP_COMPRESSION_GZIP);
}
Test(kafka_wire_interop, produce_newest_uncompressed)
{
    produce_one(0, KP_COMPRESSION_NONE);
}
Test(kafka_wire_interop, produce_newest_gzip)
{
    produce_one(0, KP_COMPRESSION_GZIP);
}
Test(kafka_wire_interop, produce_v3_lz4)
{
    produce_one(3, KP_COMPRESSION_LZ4);
}
Test(kafka_wire_interop, produce_newest_lz4)
{
    produce_one(0, KP_COMPRESSION_LZ4);
}
/* zstd needs Produce v7 or later (a broker answers UNSUPPORTED_COMPRESSION_TYPE below). */
Test(kafka_wire_interop, produce_v7_zstd)
{
    produce_one(7, KP_COMPRESSION_ZSTD);
}
Test(kafka_wire_interop, produce_newest_zstd)
{
    produce_one(0, KP_COMPRESSION_ZSTD);
}

/* Two partitions in one request, one batch of each codec, at v3 and at the newest version. */
static void produce_two_partitions(int16_t version)
{
    static batch_t plain, zipped;
    session_t s;
    const char *topic = "sw-test-6p";
    int32_t partitions[2] = {2, 3};
    int64_t base[2] = {-1, -1};

    records_init();
    session_open_leader(&s, topic, partitions[0]);
    if (version == 0) {
        version = session_pick(&s, KP_API_PRODUCE);
    }
    batch_build(&plain, KP_COMPRESSION_NONE);
    batch_build(&zipped, KP_COMPRESSION_GZIP);
    batch_t *batches[] = {&plain, &zipped};
    produce(&s, version, topic, partitions, batches, 2, base);
    session_close(&s);
    read_back(topic, partitions[0], base[0], &plain);
    read_back(topic, partitions[1], base[1], &zipped);
    kp__record_batch_release(&plain.b);
    kp__record_batch_release(&zipped.b);
}

Test(kafka_wire_interop, two_partitions_v3)
{
    produce_two_partitions(3);
}
Test(kafka_wire_interop, two_partitions_newest)
{
    produce_two_partitions(0);
}
