/*
 * record_batch.h - RecordBatch v2 (magic 2): an in-place writer and a verifying reader.
 *
 * Layout (61-byte header, big-endian):
 *   off  0 baseOffset int64      off 21 attributes int16 (bits 0-2 codec, 3 timestamp type)
 *   off  8 batchLength int32     off 23 lastOffsetDelta int32
 *   off 12 partitionLeaderEpoch  off 27 baseTimestamp int64
 *   off 16 magic int8 = 2        off 35 maxTimestamp int64
 *   off 17 crc uint32            off 43 producerId int64, 51 producerEpoch int16,
 *                                off 53 baseSequence int32, 57 recordCount int32, 61 records
 * batchLength counts from offset 12 to the end; crc is CRC-32C of offset 21 to the end.
 * Record: varint length, int8 attributes, varlong timestampDelta, varint offsetDelta,
 * varint keyLength + key (-1 null), varint valueLength + value (-1 null), varint header count,
 * headers (varint keyLength + key, varint valueLength + value, -1 null). Varints are zig-zag.
 *
 * Writer life cycle (one thread at a time; the accumulator's partition lock in the core):
 *   kp__record_batch_init(b, block, batch_size, now_ms)    block: e.g. a BufferPool block
 *   while (kp__record_batch_try_append(b, ...) == 0) ...    KP_ENOSPACE: open a new batch, or
 *   kp__record_batch_chain(b, seg, more, cap)                 go on in another piece of memory
 *   kp__record_batch_close(b, pid, epoch, seq, &compression)   header + crc (+ codec)
 *   kp__record_batch_data(b, &len)                          the bytes for ProduceRequest
 *   kp__record_batch_set_producer(b, pid, epoch, seq)       re-stamp for a retry (crc redone)
 *   kp__record_batch_release(b)                             frees what the batch allocated
 * Records are encoded straight into the caller's block: no allocation, one copy of key/value.
 * A chained batch is copied into one heap buffer when it is closed (the wire bytes must be
 * contiguous for the CRC, the codec and the request); an unchained one is sent from its block.
 */
#ifndef KP_WIRE_RECORD_BATCH_H
#define KP_WIRE_RECORD_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kproducer.h"
#include "wire/codec.h"

#define KP_RECORD_BATCH_HEADER_SIZE 61
#define KP_RECORD_BATCH_MAGIC       2
/* Worst-case bytes of a record's framing besides key, value and header bytes: length(5) +
 * attributes(1) + timestampDelta(10) + offsetDelta(5) + keyLength(5) + valueLength(5) +
 * headerCount(5). */
#define KP_RECORD_MAX_OVERHEAD 36

typedef enum kp_compression {
    KP_COMPRESSION_NONE = 0,
    KP_COMPRESSION_GZIP = 1,
    /* 2 is snappy, which this producer does not write */
    KP_COMPRESSION_LZ4 = 3,
    KP_COMPRESSION_ZSTD = 4,
} kp_compression_t;

/* A record header. key is not nullable in Kafka; value == NULL writes a null value. */
typedef struct kp_record_header {
    const char *key;
    size_t key_len;
    const void *value;
    size_t value_len;
} kp_record_header_t;

/* How kp__record_batch_close compresses. For GZIP, LZ4 and ZSTD, `out` (capacity out_cap, at
 * least kp__record_batch_compressed_bound(b, type)) receives the whole compressed batch and
 * must outlive the batch's use; out == NULL makes the batch malloc that buffer itself (freed
 * by kp__record_batch_release). level: -1 = the Java client's default for the codec (gzip:
 * zlib's 6, GZIPOutputStream's Deflater.DEFAULT_COMPRESSION; zstd: 3; lz4: the fast
 * compressor), else gzip 1..9, zstd 1..22 (lz4 ignores it). */
typedef struct kp_batch_compression {
    kp_compression_t type;
    int level;
    uint8_t *out;
    size_t out_cap;
} kp_batch_compression_t;

/* A further piece of caller memory a batch writes records into once its first buffer is full
 * (kp__record_batch_chain). The caller places it (e.g. at the start of another pool block);
 * the writer owns `len` and `next`, the caller may lower `cap` before an append. */
typedef struct kp_record_segment {
    struct kp_record_segment *next;
    uint8_t *data;
    size_t len; /* bytes written */
    size_t cap; /* capacity of data */
} kp_record_segment_t;

/* Writer state. Plain value: embed it in the owner's batch object. Fields are read-only for
 * callers (use the accessors), except `cap` and the chained segments' `cap`, which the owner
 * may lower before an append to keep room behind the records. */
typedef struct kp_record_batch {
    uint8_t *buf;                   /* caller's block: header space + records, written in place */
    size_t cap;                     /* capacity of buf */
    size_t len;                     /* bytes of the whole batch (61 + records of every segment) */
    size_t head_len;                /* bytes used in buf */
    kp_record_segment_t *more_head; /* chained segments, in order; appends go to the last */
    kp_record_segment_t *more_tail;
    int64_t base_timestamp; /* from init; record timestamps are stored as deltas */
    int64_t max_timestamp;
    int32_t count; /* records appended */
    bool closed;
    kp_compression_t compression;
    uint8_t *out; /* after close: the wire bytes (buf itself, or the codec's buffer) */
    size_t out_len;
    uint8_t *owned_out; /* heap buffer the batch allocated for a codec, else NULL */
} kp_record_batch_t;

/* Starts an empty batch in buf[0..cap). Returns 0, or KP_EINVAL when cap < 61 or buf is NULL.
 * buf stays owned by the caller and must outlive the batch. */
int kp__record_batch_init(kp_record_batch_t *b, uint8_t *buf, size_t cap, int64_t base_timestamp);

/* Continues the batch in seg->data[0..cap): later appends write there (a record never spans
 * two segments). seg and data stay owned by the caller and must outlive the batch. Returns 0,
 * or KP_EINVAL after close or for NULL arguments. */
int kp__record_batch_chain(kp_record_batch_t *b, kp_record_segment_t *seg, uint8_t *data,
                           size_t cap);

/* Appends one record in place (in the last chained segment, if any). key == NULL writes a null key,
 * value == NULL a null value; headers may be NULL when n_headers == 0. Returns 0; KP_ENOSPACE when
 * the record does not fit in the remaining capacity (the batch is unchanged; a record is accepted
 * whenever it fits, including as the first record); KP_EINVAL after close, or for a length over
 * INT32_MAX. Hot path: no allocation, no locking. */
int kp__record_batch_try_append(kp_record_batch_t *b, int64_t timestamp, const void *key,
                                size_t key_len, const void *value, size_t value_len,
                                const kp_record_header_t *headers, size_t n_headers);

/* Exact encoded size of one record (with its length prefix). */
size_t kp__record_size(int64_t timestamp_delta, int32_t offset_delta, const void *key,
                       size_t key_len, const void *value, size_t value_len,
                       const kp_record_header_t *headers, size_t n_headers);
/* Upper bound of a batch holding just this one record (any timestamp, offset): 61 +
 * KP_RECORD_MAX_OVERHEAD + key + value + headers. The core allocates max(batch.size, this)
 * for an oversize record. */
size_t kp__record_batch_size_upper_bound(size_t key_len, size_t value_len,
                                         const kp_record_header_t *headers, size_t n_headers);
/* Bytes an output buffer for codec `type` must have for this batch (header + the codec's
 * bound); 0 for NONE or an unknown codec. */
size_t kp__record_batch_compressed_bound(const kp_record_batch_t *b, kp_compression_t type);

/* Seals the batch: writes the header (baseOffset 0, batchLength, leaderEpoch -1, magic 2,
 * attributes with the codec, lastOffsetDelta, base/max timestamp, producer id/epoch,
 * baseSequence, count) and the CRC-32C. A chained batch is first copied into one heap
 * buffer (freed by kp__record_batch_release). With a codec the records section is compressed into
 * the output buffer (see kp_batch_compression_t); compression == NULL means NONE. Returns 0,
 * KP_EINVAL (already closed, empty batch, unknown codec), KP_ENOSPACE (out_cap too small),
 * KP_ENOMEM, KP_ECOMPRESSION. On error the batch stays open and can be closed again. */
int kp__record_batch_close(kp_record_batch_t *b, int64_t producer_id, int16_t producer_epoch,
                           int32_t base_sequence, const kp_batch_compression_t *compression);

/* Re-stamps a closed batch (retry after a new producer id/epoch or sequence): rewrites the
 * three fields and recomputes the CRC. Returns 0 or KP_EINVAL when not closed. */
int kp__record_batch_set_producer(kp_record_batch_t *b, int64_t producer_id, int16_t producer_epoch,
                                  int32_t base_sequence);

/* The wire bytes of a closed batch (NULL and *len = 0 if not closed). Borrowed. */
const uint8_t *kp__record_batch_data(const kp_record_batch_t *b, size_t *len);
/* Frees the codec buffer the batch allocated, if any. The caller's block is untouched. */
void kp__record_batch_release(kp_record_batch_t *b);

/* ---- reader (tests, fuzzing, diagnostics) ---- */

typedef struct kp_record_view {
    int64_t timestamp; /* base timestamp + delta */
    int64_t offset;    /* base offset + offset delta */
    int8_t attributes;
    const uint8_t *key;   /* borrowed; NULL when null */
    int32_t key_len;      /* -1 when null */
    const uint8_t *value; /* borrowed; NULL when null */
    int32_t value_len;    /* -1 when null */
    int32_t n_headers;
    kp_reader_t headers; /* over the encoded headers; walk with kp__record_view_next_header */
} kp_record_view_t;

typedef struct kp_record_batch_reader {
    int64_t base_offset;
    int32_t batch_length;
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t record_count;
    size_t batch_size; /* bytes of this batch in the input (12 + batchLength) */
    kp_reader_t records;
    int32_t next_index;
    uint8_t *inflated; /* heap, for a compressed batch */
} kp_record_batch_reader_t;

/* Parses the first batch in data[0..len): checks size fields (KP_ETRUNCATED/KP_EMALFORMED),
 * magic 2 (KP_EUNSUPPORTED_VERSION), the CRC (KP_ECORRUPT), and decompresses gzip, lz4 or zstd
 * (at most max_inflated bytes, else KP_ECOMPRESSION; other codecs KP_ECOMPRESSION). On error
 * nothing needs closing. Call kp__record_batch_reader_close after success. */
int kp__record_batch_reader_open(kp_record_batch_reader_t *rd, const uint8_t *data, size_t len,
                                 size_t max_inflated);
/* Next record into *rec (views borrow from data or the inflated buffer). Returns 1 for a
 * record, 0 at the end (all record_count records read and no bytes left), or a negative error
 * (KP_ETRUNCATED, KP_EMALFORMED: count or lengths inconsistent). */
int kp__record_batch_reader_next(kp_record_batch_reader_t *rd, kp_record_view_t *rec);
/* Next header of a record view: 1 and *h filled (borrowed), 0 when none left, <0 error. */
int kp__record_view_next_header(kp_record_view_t *rec, kp_record_header_t *h);
void kp__record_batch_reader_close(kp_record_batch_reader_t *rd);

#endif /* KP_WIRE_RECORD_BATCH_H */
