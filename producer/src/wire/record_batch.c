/*
 * record_batch.c - RecordBatch v2 writer (in place, no allocation on append) and reader.
 */
#include "wire/record_batch.h"

#include <stdlib.h>
#include <string.h>

#include "wire/crc32c.h"
#include "wire/gzip.h"
#include "wire/lz4.h"
#include "wire/zstd.h"

/* Header field offsets (see record_batch.h). */
enum {
    OFF_BASE_OFFSET = 0,
    OFF_LENGTH = 8,
    OFF_LEADER_EPOCH = 12,
    OFF_MAGIC = 16,
    OFF_CRC = 17,
    OFF_ATTRIBUTES = 21,
    OFF_LAST_OFFSET_DELTA = 23,
    OFF_BASE_TIMESTAMP = 27,
    OFF_MAX_TIMESTAMP = 35,
    OFF_PRODUCER_ID = 43,
    OFF_PRODUCER_EPOCH = 51,
    OFF_BASE_SEQUENCE = 53,
    OFF_RECORD_COUNT = 57,
};

static inline void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

static inline uint8_t *put_uvarint64(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint8_t *put_varint(uint8_t *p, int32_t v)
{
    return put_uvarint64(p, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

static inline uint8_t *put_varlong(uint8_t *p, int64_t v)
{
    return put_uvarint64(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* Size of a nullable varint-prefixed field: -1 (1 byte) for NULL, else prefix + bytes. */
static inline size_t field_size(const void *p, size_t len)
{
    return p == NULL ? 1 : kp__varint_size((int32_t)len) + len;
}

static inline uint8_t *put_field(uint8_t *dst, const void *p, size_t len)
{
    if (p == NULL) {
        return put_varint(dst, -1);
    }
    dst = put_varint(dst, (int32_t)len);
    if (len > 0) {
        memcpy(dst, p, len);
    }
    return dst + len;
}

/* Size of the record body (everything after the length prefix); 0 for an unencodable record. */
static size_t record_body_size(int64_t ts_delta, int32_t offset_delta, const void *key,
                               size_t key_len, const void *value, size_t value_len,
                               const kp_record_header_t *headers, size_t n_headers)
{
    if (key_len > INT32_MAX || value_len > INT32_MAX || n_headers > INT32_MAX) {
        return 0;
    }
    size_t size = 1 + kp__varlong_size(ts_delta) + kp__varint_size(offset_delta) +
                  field_size(key, key_len) + field_size(value, value_len) +
                  kp__varint_size((int32_t)n_headers);
    for (size_t i = 0; i < n_headers; i++) {
        const kp_record_header_t *h = &headers[i];
        if (h->key == NULL || h->key_len > INT32_MAX || h->value_len > INT32_MAX) {
            return 0;
        }
        size += field_size(h->key, h->key_len) + field_size(h->value, h->value_len);
    }
    return size > INT32_MAX ? 0 : size;
}

size_t kp__record_size(int64_t timestamp_delta, int32_t offset_delta, const void *key,
                       size_t key_len, const void *value, size_t value_len,
                       const kp_record_header_t *headers, size_t n_headers)
{
    size_t body = record_body_size(timestamp_delta, offset_delta, key, key_len, value, value_len,
                                   headers, n_headers);
    return body == 0 ? 0 : kp__varint_size((int32_t)body) + body;
}

size_t kp__record_batch_size_upper_bound(size_t key_len, size_t value_len,
                                         const kp_record_header_t *headers, size_t n_headers)
{
    size_t size = KP_RECORD_BATCH_HEADER_SIZE + KP_RECORD_MAX_OVERHEAD + key_len + value_len;
    for (size_t i = 0; i < n_headers; i++) {
        size += 10 + headers[i].key_len + headers[i].value_len;
    }
    return size;
}

int kp__record_batch_init(kp_record_batch_t *b, uint8_t *buf, size_t cap, int64_t base_timestamp)
{
    memset(b, 0, sizeof *b);
    if (buf == NULL || cap < KP_RECORD_BATCH_HEADER_SIZE) {
        return KP_EINVAL;
    }
    b->buf = buf;
    b->cap = cap;
    b->len = KP_RECORD_BATCH_HEADER_SIZE;
    b->head_len = KP_RECORD_BATCH_HEADER_SIZE;
    b->base_timestamp = base_timestamp;
    b->max_timestamp = base_timestamp;
    return 0;
}

int kp__record_batch_chain(kp_record_batch_t *b, kp_record_segment_t *seg, uint8_t *data,
                           size_t cap)
{
    if (b->closed || seg == NULL || data == NULL) {
        return KP_EINVAL;
    }
    seg->next = NULL;
    seg->data = data;
    seg->len = 0;
    seg->cap = cap;
    if (b->more_tail) {
        b->more_tail->next = seg;
    } else {
        b->more_head = seg;
    }
    b->more_tail = seg;
    return 0;
}

int kp__record_batch_try_append(kp_record_batch_t *b, int64_t timestamp, const void *key,
                                size_t key_len, const void *value, size_t value_len,
                                const kp_record_header_t *headers, size_t n_headers)
{
    if (b->closed || (n_headers > 0 && headers == NULL)) {
        return KP_EINVAL;
    }
    /* Wrapping subtraction: the delta of absurd timestamps is wrong, never undefined. */
    int64_t ts_delta = (int64_t)((uint64_t)timestamp - (uint64_t)b->base_timestamp);
    size_t body =
        record_body_size(ts_delta, b->count, key, key_len, value, value_len, headers, n_headers);
    if (body == 0) {
        return KP_EINVAL;
    }
    size_t total = kp__varint_size((int32_t)body) + body;
    kp_record_segment_t *seg = b->more_tail;
    size_t used = seg ? seg->len : b->head_len, cap = seg ? seg->cap : b->cap;
    if (used > cap || total > cap - used || b->count == INT32_MAX) {
        return KP_ENOSPACE;
    }
    uint8_t *p = (seg ? seg->data : b->buf) + used;
    p = put_varint(p, (int32_t)body);
    *p++ = 0; /* record attributes: unused */
    p = put_varlong(p, ts_delta);
    p = put_varint(p, b->count);
    p = put_field(p, key, key_len);
    p = put_field(p, value, value_len);
    p = put_varint(p, (int32_t)n_headers);
    for (size_t i = 0; i < n_headers; i++) {
        p = put_field(p, headers[i].key, headers[i].key_len);
        p = put_field(p, headers[i].value, headers[i].value_len);
    }
    if (seg) {
        seg->len += total;
    } else {
        b->head_len += total;
    }
    b->len += total;
    b->count++;
    if (timestamp > b->max_timestamp) {
        b->max_timestamp = timestamp;
    }
    return 0;
}

size_t kp__record_batch_compressed_bound(const kp_record_batch_t *b, kp_compression_t type)
{
    size_t in = b->len - KP_RECORD_BATCH_HEADER_SIZE;
    switch (type) {
    case KP_COMPRESSION_GZIP:
        return KP_RECORD_BATCH_HEADER_SIZE + kp__gzip_bound(in);
    case KP_COMPRESSION_LZ4:
        return KP_RECORD_BATCH_HEADER_SIZE + kp__lz4_bound(in);
    case KP_COMPRESSION_ZSTD:
        return KP_RECORD_BATCH_HEADER_SIZE + kp__zstd_bound(in);
    default:
        return 0;
    }
}

/* Compresses in[0..in_len) with codec c into out[0..cap). */
static int codec_compress(const kp_batch_compression_t *c, const uint8_t *in, size_t in_len,
                          uint8_t *out, size_t cap, size_t *out_len)
{
    switch (c->type) {
    case KP_COMPRESSION_GZIP:
        return kp__gzip_compress(in, in_len, out, cap, c->level, out_len);
    case KP_COMPRESSION_LZ4:
        return kp__lz4_compress(in, in_len, out, cap, out_len);
    case KP_COMPRESSION_ZSTD:
        return kp__zstd_compress(in, in_len, out, cap,
                                 c->level < 0 ? KP_ZSTD_LEVEL_DEFAULT : c->level, out_len);
    default:
        return KP_EINVAL;
    }
}

static void stamp_crc(uint8_t *out, size_t out_len)
{
    uint32_t crc = kp__crc32c(0, out + OFF_ATTRIBUTES, out_len - OFF_ATTRIBUTES);
    put_be32(out + OFF_CRC, crc);
}

/* Compresses the records section (records[0..len - 61)) into the output buffer; sets b->out,
 * b->out_len. */
static int compress_records(kp_record_batch_t *b, const kp_batch_compression_t *c,
                            const uint8_t *records)
{
    size_t bound = kp__record_batch_compressed_bound(b, c->type);
    uint8_t *out = c->out;
    size_t cap = c->out_cap;
    if (out == NULL) {
        out = malloc(bound);
        if (out == NULL) {
            return KP_ENOMEM;
        }
        cap = bound;
    } else if (cap < KP_RECORD_BATCH_HEADER_SIZE) {
        return KP_ENOSPACE;
    }
    size_t clen;
    int rc =
        codec_compress(c, records, b->len - KP_RECORD_BATCH_HEADER_SIZE,
                       out + KP_RECORD_BATCH_HEADER_SIZE, cap - KP_RECORD_BATCH_HEADER_SIZE, &clen);
    if (rc != 0) {
        if (out != c->out) {
            free(out);
        }
        return rc;
    }
    if (out != c->out) {
        b->owned_out = out;
    }
    b->out = out;
    b->out_len = KP_RECORD_BATCH_HEADER_SIZE + clen;
    return 0;
}

/* A chained batch as one heap buffer (header space + every segment's records), or NULL. */
static uint8_t *linearize(const kp_record_batch_t *b)
{
    uint8_t *lin = malloc(b->len);
    if (lin == NULL) {
        return NULL;
    }
    memcpy(lin, b->buf, b->head_len);
    size_t at = b->head_len;
    for (const kp_record_segment_t *s = b->more_head; s; s = s->next) {
        memcpy(lin + at, s->data, s->len);
        at += s->len;
    }
    return lin;
}

int kp__record_batch_close(kp_record_batch_t *b, int64_t producer_id, int16_t producer_epoch,
                           int32_t base_sequence, const kp_batch_compression_t *compression)
{
    kp_compression_t type = compression ? compression->type : KP_COMPRESSION_NONE;
    if (b->closed || b->count == 0 || b->buf == NULL) {
        return KP_EINVAL;
    }
    if (type != KP_COMPRESSION_NONE && type != KP_COMPRESSION_GZIP && type != KP_COMPRESSION_LZ4 &&
        type != KP_COMPRESSION_ZSTD) {
        return KP_EINVAL;
    }
    uint8_t *lin = NULL;
    if (b->more_head && (lin = linearize(b)) == NULL) {
        return KP_ENOMEM;
    }
    if (type == KP_COMPRESSION_NONE) {
        b->out = lin ? lin : b->buf;
        b->out_len = b->len;
        b->owned_out = lin;
    } else {
        const uint8_t *records = (lin ? lin : b->buf) + KP_RECORD_BATCH_HEADER_SIZE;
        int rc = compress_records(b, compression, records);
        free(lin);
        if (rc != 0) {
            return rc;
        }
    }
    if (b->out_len - 12 > INT32_MAX) {
        kp__record_batch_release(b);
        return KP_EINVAL;
    }
    uint8_t *h = b->out;
    put_be64(h + OFF_BASE_OFFSET, 0);
    put_be32(h + OFF_LENGTH, (uint32_t)(b->out_len - 12));
    put_be32(h + OFF_LEADER_EPOCH, UINT32_MAX); /* -1: set by the broker */
    h[OFF_MAGIC] = KP_RECORD_BATCH_MAGIC;
    put_be16(h + OFF_ATTRIBUTES, (uint16_t)type); /* CreateTime, not transactional */
    put_be32(h + OFF_LAST_OFFSET_DELTA, (uint32_t)(b->count - 1));
    put_be64(h + OFF_BASE_TIMESTAMP, (uint64_t)b->base_timestamp);
    put_be64(h + OFF_MAX_TIMESTAMP, (uint64_t)b->max_timestamp);
    put_be32(h + OFF_RECORD_COUNT, (uint32_t)b->count);
    b->compression = type;
    b->closed = true;
    return kp__record_batch_set_producer(b, producer_id, producer_epoch, base_sequence);
}

int kp__record_batch_set_producer(kp_record_batch_t *b, int64_t producer_id, int16_t producer_epoch,
                                  int32_t base_sequence)
{
    if (!b->closed) {
        return KP_EINVAL;
    }
    put_be64(b->out + OFF_PRODUCER_ID, (uint64_t)producer_id);
    put_be16(b->out + OFF_PRODUCER_EPOCH, (uint16_t)producer_epoch);
    put_be32(b->out + OFF_BASE_SEQUENCE, (uint32_t)base_sequence);
    stamp_crc(b->out, b->out_len);
    return 0;
}

const uint8_t *kp__record_batch_data(const kp_record_batch_t *b, size_t *len)
{
    if (!b->closed) {
        *len = 0;
        return NULL;
    }
    *len = b->out_len;
    return b->out;
}

void kp__record_batch_release(kp_record_batch_t *b)
{
    if (b->owned_out != NULL && b->out == b->owned_out) {
        b->out = NULL;
        b->out_len = 0;
        b->closed = false;
    }
    free(b->owned_out);
    b->owned_out = NULL;
}
