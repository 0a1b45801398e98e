/*
 * codec.h - Kafka protocol primitives: a bounds-checked writer and reader.
 *
 * Writer: writes big-endian integers, varints, strings, bytes, array lengths and (empty) tagged
 * fields into a caller buffer of fixed capacity, or into a growable heap buffer. Reader: reads
 * the same from a byte range and never reads past it.
 *
 * Both carry a STICKY error: the first failure is stored in `err` and every later call is a
 * no-op (writers) or returns 0 / NULL (readers). So a message is written or parsed as a flat
 * sequence of calls and `err` is checked once at the end. Errors:
 *   KP_ENOSPACE   a fixed writer ran out of capacity (the bytes already written stay valid)
 *   KP_ENOMEM     a growable writer could not grow
 *   KP_EINVAL     a value the format cannot carry (string longer than INT16_MAX ...)
 *   KP_ETRUNCATED the reader needed more bytes than were left
 *   KP_EMALFORMED the bytes cannot be a valid field (varint over 5/10 bytes, length < -1 ...)
 *
 * Threads: a writer or reader is a plain value owned by one thread at a time; no locking.
 * Nothing here allocates except the growable writer and the kp_read_*_dup functions.
 */
#ifndef KP_WIRE_CODEC_H
#define KP_WIRE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kproducer.h"

typedef struct kp_writer {
    uint8_t *buf;  /* start of the buffer (owned by the writer only when growable) */
    size_t cap;    /* capacity of buf */
    size_t len;    /* bytes written so far */
    int err;       /* 0 or the first error (sticky) */
    bool growable; /* buf is the writer's own heap memory and may be reallocated */
} kp_writer_t;

typedef struct kp_reader {
    const uint8_t *buf; /* not owned */
    size_t len;         /* bytes readable from buf */
    size_t pos;         /* next byte to read */
    int err;            /* 0 or the first error (sticky) */
} kp_reader_t;

/* ---- writer setup ---- */

/* Writes into buf[0..cap). The caller keeps ownership of buf. Never fails. */
void kp__writer_init(kp_writer_t *w, uint8_t *buf, size_t cap);
/* Growable writer starting with `initial_cap` bytes (0 = a small default). Returns 0 or
 * KP_ENOMEM (then w->err is KP_ENOMEM too and nothing needs freeing). Free with
 * kp__writer_free or take the buffer with kp__writer_detach. Reallocation moves w->buf: pointers
 * into it are invalid after any later write. */
int kp__writer_init_growable(kp_writer_t *w, size_t initial_cap);
/* Frees a growable writer's buffer (no-op for a fixed one); the writer is then empty. */
void kp__writer_free(kp_writer_t *w);
/* Hands a growable writer's buffer to the caller (free() it) and stores its length in *len.
 * Returns NULL when the writer has an error (the buffer is freed then) or is not growable. */
uint8_t *kp__writer_detach(kp_writer_t *w, size_t *len);
/* Makes room for n more bytes and returns a pointer to them (len is advanced by n); the caller
 * fills them. NULL on error (sticky). Valid until the next write to a growable writer. */
uint8_t *kp__writer_reserve(kp_writer_t *w, size_t n);

/* ---- writer primitives (no return value: check w->err at the end) ---- */

void kp__write_raw(kp_writer_t *w, const void *p, size_t n);
void kp__write_i8(kp_writer_t *w, int8_t v);
void kp__write_bool(kp_writer_t *w, bool v);
void kp__write_i16(kp_writer_t *w, int16_t v);
void kp__write_i32(kp_writer_t *w, int32_t v);
void kp__write_u32(kp_writer_t *w, uint32_t v);
void kp__write_i64(kp_writer_t *w, int64_t v);
/* Overwrites 4 bytes at offset `at` (already written) with a big-endian int32: size prefixes. */
void kp__write_i32_at(kp_writer_t *w, size_t at, int32_t v);
void kp__write_uuid(kp_writer_t *w, const uint8_t uuid[16]);
void kp__write_uvarint(kp_writer_t *w, uint32_t v);
void kp__write_varint(kp_writer_t *w, int32_t v);  /* zig-zag */
void kp__write_varlong(kp_writer_t *w, int64_t v); /* zig-zag */

/* STRING (int16 length) / NULLABLE_STRING: s == NULL writes null (-1). */
void kp__write_string(kp_writer_t *w, const char *s, size_t len);
void kp__write_nullable_string(kp_writer_t *w, const char *s, size_t len);
/* COMPACT_STRING (uvarint len+1) / COMPACT_NULLABLE_STRING (0 = null). */
void kp__write_compact_string(kp_writer_t *w, const char *s, size_t len);
void kp__write_compact_nullable_string(kp_writer_t *w, const char *s, size_t len);
/* The right string form for a message version: compact when `flexible`. s may be NULL only for
 * the nullable form. */
void kp__write_str(kp_writer_t *w, bool flexible, const char *s, size_t len);
void kp__write_nullable_str(kp_writer_t *w, bool flexible, const char *s, size_t len);
/* BYTES (int32 length) / NULLABLE_BYTES / COMPACT_BYTES / COMPACT_NULLABLE_BYTES; by `flexible`
 * in kp__write_nullable_bytes_v. p == NULL writes null where nullable. */
void kp__write_bytes(kp_writer_t *w, const void *p, size_t n);
void kp__write_nullable_bytes(kp_writer_t *w, const void *p, size_t n);
void kp__write_compact_bytes(kp_writer_t *w, const void *p, size_t n);
void kp__write_compact_nullable_bytes(kp_writer_t *w, const void *p, size_t n);
void kp__write_nullable_bytes_v(kp_writer_t *w, bool flexible, const void *p, size_t n);
/* ARRAY length (int32, -1 = null) / COMPACT_ARRAY length (uvarint n+1, 0 = null); n < 0 means
 * null. kp__write_array_len_v picks the form by `flexible`. */
void kp__write_array_len(kp_writer_t *w, int32_t n);
void kp__write_compact_array_len(kp_writer_t *w, int32_t n);
void kp__write_array_len_v(kp_writer_t *w, bool flexible, int32_t n);
/* An empty tagged-field section (one uvarint 0). Only for flexible versions. */
void kp__write_tagged_fields_empty(kp_writer_t *w);

/* Encoded size of a zig-zag varint / varlong / unsigned varint (1..5, 1..10, 1..5). */
size_t kp__varint_size(int32_t v);
size_t kp__varlong_size(int64_t v);
size_t kp__uvarint_size(uint32_t v);

/* ---- reader ---- */

/* Reads buf[0..len). buf is borrowed and must outlive the reader. */
void kp__reader_init(kp_reader_t *r, const uint8_t *buf, size_t len);
/* Bytes left to read (0 after an error). */
size_t kp__reader_remaining(const kp_reader_t *r);
/* Allocates a zeroed array of n elements for a decoded response (the caller frees it), or
   sets the sticky error to KP_ENOMEM. NULL for n == 0 or when the reader already failed. */
void *kp__reader_alloc_array(kp_reader_t *r, size_t n, size_t size);

/* Each returns the value, or 0 with r->err set (sticky) when the bytes are not there. */
int8_t kp__read_i8(kp_reader_t *r);
bool kp__read_bool(kp_reader_t *r); /* any nonzero byte is true */
int16_t kp__read_i16(kp_reader_t *r);
int32_t kp__read_i32(kp_reader_t *r);
uint32_t kp__read_u32(kp_reader_t *r);
int64_t kp__read_i64(kp_reader_t *r);
void kp__read_uuid(kp_reader_t *r, uint8_t out[16]); /* zeros on error */
uint32_t kp__read_uvarint(kp_reader_t *r);           /* > 5 bytes: KP_EMALFORMED */
int32_t kp__read_varint(kp_reader_t *r);             /* zig-zag; > 5 bytes: KP_EMALFORMED */
int64_t kp__read_varlong(kp_reader_t *r);            /* zig-zag; > 10 bytes: KP_EMALFORMED */
/* Returns a pointer to n raw bytes inside the buffer (borrowed) and advances; NULL on error. */
const uint8_t *kp__read_raw(kp_reader_t *r, size_t n);

/* Strings without copying: *s points into the buffer (not NUL-terminated), *len its length.
 * A null string gives *s == NULL, *len == 0 and returns 0; a non-nullable form that reads null
 * sets KP_EMALFORMED. Return 0 or the sticky error. */
int kp__read_str(kp_reader_t *r, bool flexible, const char **s, size_t *len);
int kp__read_nullable_str(kp_reader_t *r, bool flexible, const char **s, size_t *len);
/* Copies into a new NUL-terminated heap string (free()). NULL for a null string or on error
 * (tell them apart with r->err). A heap failure sets KP_ENOMEM. */
char *kp__read_str_dup(kp_reader_t *r, bool flexible);
char *kp__read_nullable_str_dup(kp_reader_t *r, bool flexible);
/* NULLABLE_BYTES (int32 length) / COMPACT_NULLABLE_BYTES by `flexible`; *p borrowed. */
int kp__read_nullable_bytes(kp_reader_t *r, bool flexible, const uint8_t **p, size_t *len);
/* Array length: returns the count (0 for null; *is_null tells, may be NULL). Rejects (sticky
 * KP_ETRUNCATED) a count that cannot fit the bytes left, given that every element takes at
 * least `min_elem_size` (>= 1) bytes: so a lying length never triggers a huge allocation.
 * A null array where the field is not nullable is the caller's business. */
size_t kp__read_array_len(kp_reader_t *r, bool flexible, size_t min_elem_size, bool *is_null);
/* Skips a tagged-field section (any tags, any sizes). Sets KP_EMALFORMED / KP_ETRUNCATED. */
void kp__read_tagged_fields_skip(kp_reader_t *r);

#endif /* KP_WIRE_CODEC_H */
