/*
 * pb_reverse.h - a protobuf writer that fills a buffer from its end towards its start
 * (internal).
 *
 * Writing backwards means a nested message is complete before its length prefix is written, so
 * one pass needs no sizing pass and no per-field allocation. Fields must therefore be written in
 * DESCENDING field-number order, and repeated elements from the last to the first, so that the
 * finished bytes read in the order protobuf-c's packer emits them (ascending field numbers,
 * elements in order). Proto3 rules: a scalar equal to its default (0, false, "") is not written.
 *
 * Bounds: every put checks the room left; once it is short the writer stops writing and sets
 * `overflow`, so the caller can retry with a larger buffer. Field numbers must be < 16 (one-byte
 * keys), which holds for every SkyWalking v3 tracing message.
 */
#ifndef SW_ENCODE_PB_REVERSE_H
#define SW_ENCODE_PB_REVERSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../util/small_copy.h"

enum { SW__PB_VARINT = 0, SW__PB_LEN = 2 };

typedef struct sw__pbr {
    uint8_t *start; /* the lowest byte the writer may use */
    uint8_t *p;     /* the first written byte; moves down */
    bool overflow;
} sw__pbr_t;

static inline bool sw__pbr_room(sw__pbr_t *w, size_t n)
{
    if (__builtin_expect((size_t)(w->p - w->start) >= n, 1)) {
        return true;
    }
    /* No room: every later put (n >= 1) fails too, so one compare per put is enough. */
    w->p = w->start;
    w->overflow = true;
    return false;
}

/* Bytes of the varint of v: 1 + floor(log2(v) / 7), 1 for 0. */
static inline size_t sw__pb_varint_len(uint64_t v)
{
    return v == 0 ? 1 : (size_t)(63 - __builtin_clzll(v)) / 7 + 1;
}

/* Writes the varint of v forwards at p (room: sw__pb_varint_len(v) bytes). Returns its length. */
static inline size_t sw__pb_varint_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static inline void sw__pbr_varint(sw__pbr_t *w, uint64_t v)
{
    if (v < 0x80) { /* keys, most lengths and small numbers: one byte */
        if (sw__pbr_room(w, 1)) {
            *--w->p = (uint8_t)v;
        }
        return;
    }
    size_t n = sw__pb_varint_len(v);
    if (!sw__pbr_room(w, n)) {
        return;
    }
    w->p -= n;
    uint8_t *o = w->p;
    for (size_t i = 0; i + 1 < n; i++, v >>= 7) {
        o[i] = (uint8_t)(v | 0x80);
    }
    o[n - 1] = (uint8_t)v;
}

static inline void sw__pbr_key(sw__pbr_t *w, unsigned field, unsigned wire_type)
{
    if (sw__pbr_room(w, 1)) {
        *--w->p = (uint8_t)(field << 3 | wire_type);
    }
}

/* int32 and enums: a negative value is sign-extended to 10 bytes, as protobuf-c does. */
static inline void sw__pbr_int32(sw__pbr_t *w, unsigned field, int32_t v)
{
    if (v == 0) {
        return;
    }
    sw__pbr_varint(w, (uint64_t)(int64_t)v);
    sw__pbr_key(w, field, SW__PB_VARINT);
}

static inline void sw__pbr_int64(sw__pbr_t *w, unsigned field, int64_t v)
{
    if (v == 0) {
        return;
    }
    sw__pbr_varint(w, (uint64_t)v);
    sw__pbr_key(w, field, SW__PB_VARINT);
}

static inline void sw__pbr_bool(sw__pbr_t *w, unsigned field, bool v)
{
    if (!v) {
        return;
    }
    if (sw__pbr_room(w, 2)) {
        *--w->p = 1;
        *--w->p = (uint8_t)(field << 3 | SW__PB_VARINT);
    }
}

/* A string field of n bytes (0: not known, measured here); NULL and "" are the default and not
   written. */
static inline void sw__pbr_string_n(sw__pbr_t *w, unsigned field, const char *s, size_t n)
{
    if (n == 0) {
        if (s == NULL || s[0] == '\0') {
            return;
        }
        n = strlen(s);
    }
    if (!sw__pbr_room(w, n)) {
        return;
    }
    w->p -= n;
    sw__copy(w->p, s, n);
    sw__pbr_varint(w, n);
    sw__pbr_key(w, field, SW__PB_LEN);
}

/* A NUL-terminated string field; NULL and "" are the default and not written. */
static inline void sw__pbr_string(sw__pbr_t *w, unsigned field, const char *s)
{
    sw__pbr_string_n(w, field, s, 0);
}

/* Bytes already encoded elsewhere (whole fields), copied as they are. */
static inline void sw__pbr_raw(sw__pbr_t *w, const uint8_t *data, size_t n)
{
    if (n != 0 && sw__pbr_room(w, n)) {
        w->p -= n;
        sw__copy(w->p, data, n);
    }
}

/*
 * Unchecked writers, for a group of fields whose room the caller checked ONCE with
 * sw__pbr_room(w, bound) (skipping the group when it failed). Bounds per field: a varint field
 * (int32, int64, enum, a length prefix with its key) at most SW__PBR_VARINT_FIELD_MAX bytes, a
 * bool 2, a string of n bytes n + SW__PBR_VARINT_FIELD_MAX (n < 2^32: its length takes <= 5).
 * Same bytes as the checked writers above.
 */
#define SW__PBR_VARINT_FIELD_MAX 11

static inline void sw__pbr_varint_u(sw__pbr_t *w, uint64_t v)
{
    if (v < 0x80) {
        *--w->p = (uint8_t)v;
        return;
    }
    w->p -= sw__pb_varint_len(v);
    uint8_t *o = w->p;
    for (; v >= 0x80; v >>= 7) {
        *o++ = (uint8_t)(v | 0x80);
    }
    *o = (uint8_t)v;
}

static inline void sw__pbr_int32_u(sw__pbr_t *w, unsigned field, int32_t v)
{
    if (v != 0) {
        sw__pbr_varint_u(w, (uint64_t)(int64_t)v);
        *--w->p = (uint8_t)(field << 3 | SW__PB_VARINT);
    }
}

static inline void sw__pbr_int64_u(sw__pbr_t *w, unsigned field, int64_t v)
{
    if (v != 0) {
        sw__pbr_varint_u(w, (uint64_t)v);
        *--w->p = (uint8_t)(field << 3 | SW__PB_VARINT);
    }
}

static inline void sw__pbr_bool_u(sw__pbr_t *w, unsigned field, bool v)
{
    if (v) {
        *--w->p = 1;
        *--w->p = (uint8_t)(field << 3 | SW__PB_VARINT);
    }
}

/* A string field of exactly n bytes; n == 0 (the default) is not written. */
static inline void sw__pbr_string_u(sw__pbr_t *w, unsigned field, const char *s, size_t n)
{
    if (n != 0) {
        w->p -= n;
        sw__copy(w->p, s, n);
        sw__pbr_varint_u(w, n);
        *--w->p = (uint8_t)(field << 3 | SW__PB_LEN);
    }
}

/* The length a string field writes: n when known (non-zero), else measured; NULL is 0. */
static inline size_t sw__pb_string_len(const char *s, size_t n)
{
    return n != 0 ? n : s != NULL ? strlen(s) : 0;
}

/* Where a nested message ends: take it before writing its fields, close it after. */
static inline uint8_t *sw__pbr_mark(const sw__pbr_t *w)
{
    return w->p;
}

/* Prefixes the fields written since `mark` with their length and the key of `field`. */
static inline void sw__pbr_close(sw__pbr_t *w, unsigned field, const uint8_t *mark)
{
    sw__pbr_varint(w, (uint64_t)(mark - w->p));
    sw__pbr_key(w, field, SW__PB_LEN);
}

/* sw__pbr_close inside a checked group (SW__PBR_VARINT_FIELD_MAX bytes of its bound). */
static inline void sw__pbr_close_u(sw__pbr_t *w, unsigned field, const uint8_t *mark)
{
    sw__pbr_varint_u(w, (uint64_t)(mark - w->p));
    *--w->p = (uint8_t)(field << 3 | SW__PB_LEN);
}

#endif /* SW_ENCODE_PB_REVERSE_H */
