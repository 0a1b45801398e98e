/*
 * record_batch_reader.c - parses and verifies one RecordBatch v2 and walks its records.
 * For tests, fuzzing and diagnostics: every length is checked against the bytes present.
 */
#include "wire/record_batch.h"

#include <stdlib.h>
#include <string.h>

#include "wire/crc32c.h"
#include "wire/gzip.h"
#include "wire/lz4.h"
#include "wire/zstd.h"

static int header_parse(kp_record_batch_reader_t *rd, const uint8_t *data, size_t len)
{
    if (len < KP_RECORD_BATCH_HEADER_SIZE) {
        return KP_ETRUNCATED;
    }
    kp_reader_t r;
    kp__reader_init(&r, data, len);
    rd->base_offset = kp__read_i64(&r);
    rd->batch_length = kp__read_i32(&r);
    rd->partition_leader_epoch = kp__read_i32(&r);
    rd->magic = kp__read_i8(&r);
    rd->crc = kp__read_u32(&r);
    rd->attributes = kp__read_i16(&r);
    rd->last_offset_delta = kp__read_i32(&r);
    rd->base_timestamp = kp__read_i64(&r);
    rd->max_timestamp = kp__read_i64(&r);
    rd->producer_id = kp__read_i64(&r);
    rd->producer_epoch = kp__read_i16(&r);
    rd->base_sequence = kp__read_i32(&r);
    rd->record_count = kp__read_i32(&r);
    if (r.err != 0) {
        return r.err;
    }
    if (rd->batch_length < KP_RECORD_BATCH_HEADER_SIZE - 12 || rd->record_count < 0) {
        return KP_EMALFORMED;
    }
    if ((size_t)rd->batch_length > len - 12) {
        return KP_ETRUNCATED;
    }
    if (rd->magic != KP_RECORD_BATCH_MAGIC) {
        return KP_EUNSUPPORTED_VERSION;
    }
    rd->batch_size = 12 + (size_t)rd->batch_length;
    return 0;
}

int kp__record_batch_reader_open(kp_record_batch_reader_t *rd, const uint8_t *data, size_t len,
                                 size_t max_inflated)
{
    memset(rd, 0, sizeof *rd);
    if (data == NULL) {
        return KP_EINVAL;
    }
    int rc = header_parse(rd, data, len);
    if (rc != 0) {
        return rc;
    }
    uint32_t crc = kp__crc32c(0, data + 21, rd->batch_size - 21);
    if (crc != rd->crc) {
        return KP_ECORRUPT;
    }
    const uint8_t *records = data + KP_RECORD_BATCH_HEADER_SIZE;
    size_t records_len = rd->batch_size - KP_RECORD_BATCH_HEADER_SIZE;
    switch (rd->attributes & 7) {
    case KP_COMPRESSION_NONE:
        kp__reader_init(&rd->records, records, records_len);
        return 0;
    case KP_COMPRESSION_GZIP:
    case KP_COMPRESSION_LZ4:
    case KP_COMPRESSION_ZSTD: {
        size_t out_len;
        int codec = rd->attributes & 7;
        rc = codec == KP_COMPRESSION_GZIP
                 ? kp__gzip_decompress(records, records_len, max_inflated, &rd->inflated, &out_len)
             : codec == KP_COMPRESSION_LZ4
                 ? kp__lz4_decompress(records, records_len, max_inflated, &rd->inflated, &out_len)
                 : kp__zstd_decompress(records, records_len, max_inflated, &rd->inflated, &out_len);
        if (rc != 0) {
            return rc;
        }
        kp__reader_init(&rd->records, rd->inflated, out_len);
        return 0;
    }
    default:
        return KP_ECOMPRESSION;
    }
}

/* Reads a varint length (-1 = null) and the bytes. Returns false on error (r->err set). */
static bool read_field(kp_reader_t *r, const uint8_t **p, int32_t *len)
{
    int32_t n = kp__read_varint(r);
    *p = NULL;
    *len = -1;
    if (r->err != 0) {
        return false;
    }
    if (n < -1) {
        r->err = KP_EMALFORMED;
        return false;
    }
    if (n >= 0) {
        *p = kp__read_raw(r, (size_t)n);
        *len = n;
    }
    return r->err == 0;
}

int kp__record_batch_reader_next(kp_record_batch_reader_t *rd, kp_record_view_t *rec)
{
    memset(rec, 0, sizeof *rec);
    if (rd->records.err != 0) {
        return rd->records.err;
    }
    if (rd->next_index >= rd->record_count) {
        return kp__reader_remaining(&rd->records) == 0 ? 0 : KP_EMALFORMED;
    }
    int32_t len = kp__read_varint(&rd->records);
    if (rd->records.err == 0 && len < 0) {
        rd->records.err = KP_EMALFORMED;
    }
    const uint8_t *body = kp__read_raw(&rd->records, (size_t)(len < 0 ? 0 : len));
    if (rd->records.err != 0) {
        return rd->records.err;
    }
    kp_reader_t r;
    kp__reader_init(&r, body, (size_t)len);
    rec->attributes = kp__read_i8(&r);
    int64_t ts_delta = kp__read_varlong(&r);
    int32_t offset_delta = kp__read_varint(&r);
    read_field(&r, &rec->key, &rec->key_len);
    read_field(&r, &rec->value, &rec->value_len);
    rec->n_headers = kp__read_varint(&r);
    if (r.err == 0 && rec->n_headers < 0) {
        r.err = KP_EMALFORMED;
    }
    size_t headers_start = r.pos;
    for (int32_t i = 0; i < rec->n_headers && r.err == 0; i++) {
        const uint8_t *p;
        int32_t n;
        if (read_field(&r, &p, &n) && p == NULL) {
            r.err = KP_EMALFORMED; /* header keys are not nullable */
        }
        read_field(&r, &p, &n);
    }
    if (r.err == 0 && kp__reader_remaining(&r) != 0) {
        r.err = KP_EMALFORMED; /* bytes left inside the record */
    }
    if (r.err != 0) {
        rd->records.err = r.err;
        memset(rec, 0, sizeof *rec);
        return r.err;
    }
    kp__reader_init(&rec->headers, body + headers_start, (size_t)len - headers_start);
    rec->timestamp = (int64_t)((uint64_t)rd->base_timestamp + (uint64_t)ts_delta);
    rec->offset = (int64_t)((uint64_t)rd->base_offset + (uint64_t)(int64_t)offset_delta);
    rd->next_index++;
    return 1;
}

int kp__record_view_next_header(kp_record_view_t *rec, kp_record_header_t *h)
{
    memset(h, 0, sizeof *h);
    if (kp__reader_remaining(&rec->headers) == 0) {
        return rec->headers.err;
    }
    const uint8_t *k, *v;
    int32_t klen, vlen;
    read_field(&rec->headers, &k, &klen);
    read_field(&rec->headers, &v, &vlen);
    if (rec->headers.err != 0) {
        return rec->headers.err;
    }
    h->key = (const char *)k;
    h->key_len = klen < 0 ? 0 : (size_t)klen;
    h->value = v;
    h->value_len = vlen < 0 ? 0 : (size_t)vlen;
    return 1;
}

void kp__record_batch_reader_close(kp_record_batch_reader_t *rd)
{
    free(rd->inflated);
    rd->inflated = NULL;
}
