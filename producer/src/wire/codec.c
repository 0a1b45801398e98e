/*
 * codec.c - Kafka protocol primitives: bounds-checked writer and reader with sticky errors.
 */
#include "wire/codec.h"

#include <stdlib.h>
#include <string.h>

#define GROWABLE_DEFAULT_CAP 256

/* ---- writer ---- */

void kp__writer_init(kp_writer_t *w, uint8_t *buf, size_t cap)
{
    w->buf = buf;
    w->cap = cap;
    w->len = 0;
    w->err = 0;
    w->growable = false;
}

int kp__writer_init_growable(kp_writer_t *w, size_t initial_cap)
{
    if (initial_cap == 0) {
        initial_cap = GROWABLE_DEFAULT_CAP;
    }
    kp__writer_init(w, malloc(initial_cap), initial_cap);
    w->growable = true;
    if (w->buf == NULL) {
        w->cap = 0;
        w->err = KP_ENOMEM;
        return KP_ENOMEM;
    }
    return 0;
}

void kp__writer_free(kp_writer_t *w)
{
    if (w->growable) {
        free(w->buf);
    }
    w->buf = NULL;
    w->cap = 0;
    w->len = 0;
}

uint8_t *kp__writer_detach(kp_writer_t *w, size_t *len)
{
    if (!w->growable || w->err != 0) {
        kp__writer_free(w);
        *len = 0;
        return NULL;
    }
    uint8_t *buf = w->buf;
    *len = w->len;
    w->buf = NULL;
    w->cap = 0;
    w->len = 0;
    return buf;
}

/* Slow path of reserve: grows a growable writer to hold `need` bytes in total. */
static int writer_grow(kp_writer_t *w, size_t need)
{
    if (!w->growable) {
        return KP_ENOSPACE;
    }
    size_t cap = w->cap ? w->cap : GROWABLE_DEFAULT_CAP;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            return KP_ENOMEM;
        }
        cap *= 2;
    }
    uint8_t *grown = realloc(w->buf, cap);
    if (grown == NULL) {
        return KP_ENOMEM;
    }
    w->buf = grown;
    w->cap = cap;
    return 0;
}

uint8_t *kp__writer_reserve(kp_writer_t *w, size_t n)
{
    if (w->err != 0) {
        return NULL;
    }
    if (w->buf == NULL) {
        w->err = w->growable ? KP_ENOMEM : KP_ENOSPACE;
        return NULL;
    }
    if (n > w->cap - w->len) {
        if (n > SIZE_MAX - w->len) {
            w->err = KP_ENOMEM;
            return NULL;
        }
        int rc = writer_grow(w, w->len + n);
        if (rc != 0) {
            w->err = rc;
            return NULL;
        }
    }
    uint8_t *p = w->buf + w->len;
    w->len += n;
    return p;
}

void kp__write_raw(kp_writer_t *w, const void *p, size_t n)
{
    uint8_t *dst = kp__writer_reserve(w, n);
    if (dst != NULL && n > 0) {
        memcpy(dst, p, n);
    }
}

void kp__write_i8(kp_writer_t *w, int8_t v)
{
    uint8_t *p = kp__writer_reserve(w, 1);
    if (p != NULL) {
        p[0] = (uint8_t)v;
    }
}

void kp__write_bool(kp_writer_t *w, bool v)
{
    kp__write_i8(w, v ? 1 : 0);
}

void kp__write_i16(kp_writer_t *w, int16_t v)
{
    uint8_t *p = kp__writer_reserve(w, 2);
    if (p != NULL) {
        uint16_t u = (uint16_t)v;
        p[0] = (uint8_t)(u >> 8);
        p[1] = (uint8_t)u;
    }
}

static void put_u32(uint8_t *p, uint32_t u)
{
    p[0] = (uint8_t)(u >> 24);
    p[1] = (uint8_t)(u >> 16);
    p[2] = (uint8_t)(u >> 8);
    p[3] = (uint8_t)u;
}

void kp__write_u32(kp_writer_t *w, uint32_t v)
{
    uint8_t *p = kp__writer_reserve(w, 4);
    if (p != NULL) {
        put_u32(p, v);
    }
}

void kp__write_i32(kp_writer_t *w, int32_t v)
{
    kp__write_u32(w, (uint32_t)v);
}

void kp__write_i64(kp_writer_t *w, int64_t v)
{
    uint8_t *p = kp__writer_reserve(w, 8);
    if (p != NULL) {
        uint64_t u = (uint64_t)v;
        put_u32(p, (uint32_t)(u >> 32));
        put_u32(p + 4, (uint32_t)u);
    }
}

void kp__write_i32_at(kp_writer_t *w, size_t at, int32_t v)
{
    if (w->err != 0) {
        return;
    }
    if (at > w->len || w->len - at < 4) {
        w->err = KP_EINVAL;
        return;
    }
    put_u32(w->buf + at, (uint32_t)v);
}

void kp__write_uuid(kp_writer_t *w, const uint8_t uuid[16])
{
    kp__write_raw(w, uuid, 16);
}

void kp__write_uvarint(kp_writer_t *w, uint32_t v)
{
    uint8_t tmp[5];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    kp__write_raw(w, tmp, n);
}

void kp__write_varint(kp_writer_t *w, int32_t v)
{
    kp__write_uvarint(w, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

void kp__write_varlong(kp_writer_t *w, int64_t v)
{
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    uint8_t tmp[10];
    size_t n = 0;
    while (u >= 0x80) {
        tmp[n++] = (uint8_t)(u | 0x80);
        u >>= 7;
    }
    tmp[n++] = (uint8_t)u;
    kp__write_raw(w, tmp, n);
}

size_t kp__uvarint_size(uint32_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t kp__varint_size(int32_t v)
{
    return kp__uvarint_size(((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

size_t kp__varlong_size(int64_t v)
{
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    size_t n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

/* Sets KP_EINVAL when len exceeds `max`; returns true when the write may go on. */
static bool check_len(kp_writer_t *w, size_t len, size_t max)
{
    if (w->err != 0) {
        return false;
    }
    if (len > max) {
        w->err = KP_EINVAL;
        return false;
    }
    return true;
}

void kp__write_string(kp_writer_t *w, const char *s, size_t len)
{
    if (s == NULL) {
        if (w->err == 0) {
            w->err = KP_EINVAL;
        }
        return;
    }
    kp__write_nullable_string(w, s, len);
}

void kp__write_nullable_string(kp_writer_t *w, const char *s, size_t len)
{
    if (s == NULL) {
        kp__write_i16(w, -1);
        return;
    }
    if (!check_len(w, len, INT16_MAX)) {
        return;
    }
    kp__write_i16(w, (int16_t)len);
    kp__write_raw(w, s, len);
}

void kp__write_compact_string(kp_writer_t *w, const char *s, size_t len)
{
    if (s == NULL) {
        if (w->err == 0) {
            w->err = KP_EINVAL;
        }
        return;
    }
    kp__write_compact_nullable_string(w, s, len);
}

void kp__write_compact_nullable_string(kp_writer_t *w, const char *s, size_t len)
{
    if (s == NULL) {
        kp__write_uvarint(w, 0);
        return;
    }
    if (!check_len(w, len, INT16_MAX)) {
        return;
    }
    kp__write_uvarint(w, (uint32_t)len + 1);
    kp__write_raw(w, s, len);
}

void kp__write_str(kp_writer_t *w, bool flexible, const char *s, size_t len)
{
    if (flexible) {
        kp__write_compact_string(w, s, len);
    } else {
        kp__write_string(w, s, len);
    }
}

void kp__write_nullable_str(kp_writer_t *w, bool flexible, const char *s, size_t len)
{
    if (flexible) {
        kp__write_compact_nullable_string(w, s, len);
    } else {
        kp__write_nullable_string(w, s, len);
    }
}

void kp__write_bytes(kp_writer_t *w, const void *p, size_t n)
{
    if (p == NULL && n > 0) {
        if (w->err == 0) {
            w->err = KP_EINVAL;
        }
        return;
    }
    if (!check_len(w, n, INT32_MAX)) {
        return;
    }
    kp__write_i32(w, (int32_t)n);
    kp__write_raw(w, p, n);
}

void kp__write_nullable_bytes(kp_writer_t *w, const void *p, size_t n)
{
    if (p == NULL) {
        kp__write_i32(w, -1);
    } else {
        kp__write_bytes(w, p, n);
    }
}

void kp__write_compact_bytes(kp_writer_t *w, const void *p, size_t n)
{
    if (p == NULL && n > 0) {
        if (w->err == 0) {
            w->err = KP_EINVAL;
        }
        return;
    }
    if (!check_len(w, n, (size_t)INT32_MAX - 1)) {
        return;
    }
    kp__write_uvarint(w, (uint32_t)n + 1);
    kp__write_raw(w, p, n);
}

void kp__write_compact_nullable_bytes(kp_writer_t *w, const void *p, size_t n)
{
    if (p == NULL) {
        kp__write_uvarint(w, 0);
    } else {
        kp__write_compact_bytes(w, p, n);
    }
}

void kp__write_nullable_bytes_v(kp_writer_t *w, bool flexible, const void *p, size_t n)
{
    if (flexible) {
        kp__write_compact_nullable_bytes(w, p, n);
    } else {
        kp__write_nullable_bytes(w, p, n);
    }
}

void kp__write_array_len(kp_writer_t *w, int32_t n)
{
    kp__write_i32(w, n < 0 ? -1 : n);
}

void kp__write_compact_array_len(kp_writer_t *w, int32_t n)
{
    kp__write_uvarint(w, n < 0 ? 0 : (uint32_t)n + 1);
}

void kp__write_array_len_v(kp_writer_t *w, bool flexible, int32_t n)
{
    if (flexible) {
        kp__write_compact_array_len(w, n);
    } else {
        kp__write_array_len(w, n);
    }
}

void kp__write_tagged_fields_empty(kp_writer_t *w)
{
    kp__write_uvarint(w, 0);
}

/* ---- reader ---- */

void kp__reader_init(kp_reader_t *r, const uint8_t *buf, size_t len)
{
    r->buf = buf;
    r->len = buf == NULL ? 0 : len;
    r->pos = 0;
    r->err = 0;
}

size_t kp__reader_remaining(const kp_reader_t *r)
{
    return r->err != 0 ? 0 : r->len - r->pos;
}

void *kp__reader_alloc_array(kp_reader_t *r, size_t n, size_t size)
{
    if (r->err != 0 || n == 0) {
        return NULL;
    }
    void *p = calloc(n, size);
    if (p == NULL) {
        r->err = KP_ENOMEM;
    }
    return p;
}

static void reader_fail(kp_reader_t *r, int err)
{
    if (r->err == 0) {
        r->err = err;
    }
}

const uint8_t *kp__read_raw(kp_reader_t *r, size_t n)
{
    if (r->err != 0) {
        return NULL;
    }
    if (n > r->len - r->pos) {
        reader_fail(r, KP_ETRUNCATED);
        return NULL;
    }
    const uint8_t *p = r->buf + r->pos;
    r->pos += n;
    return p;
}

int8_t kp__read_i8(kp_reader_t *r)
{
    const uint8_t *p = kp__read_raw(r, 1);
    return p ? (int8_t)p[0] : 0;
}

bool kp__read_bool(kp_reader_t *r)
{
    return kp__read_i8(r) != 0;
}

int16_t kp__read_i16(kp_reader_t *r)
{
    const uint8_t *p = kp__read_raw(r, 2);
    return p ? (int16_t)(uint16_t)((unsigned)p[0] << 8 | p[1]) : 0;
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint32_t kp__read_u32(kp_reader_t *r)
{
    const uint8_t *p = kp__read_raw(r, 4);
    return p ? get_u32(p) : 0;
}

int32_t kp__read_i32(kp_reader_t *r)
{
    return (int32_t)kp__read_u32(r);
}

int64_t kp__read_i64(kp_reader_t *r)
{
    const uint8_t *p = kp__read_raw(r, 8);
    return p ? (int64_t)((uint64_t)get_u32(p) << 32 | get_u32(p + 4)) : 0;
}

void kp__read_uuid(kp_reader_t *r, uint8_t out[16])
{
    const uint8_t *p = kp__read_raw(r, 16);
    if (p) {
        memcpy(out, p, 16);
    } else {
        memset(out, 0, 16);
    }
}

/* Reads an unsigned LEB128 value of at most max_bytes bytes. */
static uint64_t read_uleb(kp_reader_t *r, int max_bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < max_bytes; i++) {
        const uint8_t *p = kp__read_raw(r, 1);
        if (p == NULL) {
            return 0;
        }
        v |= (uint64_t)(p[0] & 0x7f) << (7 * i);
        if ((p[0] & 0x80) == 0) {
            return v;
        }
    }
    reader_fail(r, KP_EMALFORMED);
    return 0;
}

uint32_t kp__read_uvarint(kp_reader_t *r)
{
    uint64_t v = read_uleb(r, 5);
    if (v > UINT32_MAX) {
        reader_fail(r, KP_EMALFORMED);
        return 0;
    }
    return (uint32_t)v;
}

int32_t kp__read_varint(kp_reader_t *r)
{
    uint32_t u = kp__read_uvarint(r);
    return (int32_t)((u >> 1) ^ (0u - (u & 1)));
}

int64_t kp__read_varlong(kp_reader_t *r)
{
    uint64_t u = read_uleb(r, 10);
    return (int64_t)((u >> 1) ^ (0ull - (u & 1)));
}

/* Reads a string length: -1 = null, else >= 0. Sets KP_EMALFORMED for other negatives. */
static int64_t read_str_len(kp_reader_t *r, bool flexible)
{
    int64_t n = flexible ? (int64_t)kp__read_uvarint(r) - 1 : kp__read_i16(r);
    if (r->err != 0) {
        return -2;
    }
    if (n < -1) {
        reader_fail(r, KP_EMALFORMED);
        return -2;
    }
    return n;
}

int kp__read_nullable_str(kp_reader_t *r, bool flexible, const char **s, size_t *len)
{
    *s = NULL;
    *len = 0;
    int64_t n = read_str_len(r, flexible);
    if (n >= 0) {
        const uint8_t *p = kp__read_raw(r, (size_t)n);
        if (p != NULL) {
            *s = (const char *)p;
            *len = (size_t)n;
        }
    }
    return r->err;
}

int kp__read_str(kp_reader_t *r, bool flexible, const char **s, size_t *len)
{
    size_t before = r->pos;
    int rc = kp__read_nullable_str(r, flexible, s, len);
    if (rc == 0 && *s == NULL && r->pos != before) {
        reader_fail(r, KP_EMALFORMED);
        return r->err;
    }
    return rc;
}

static char *dup_str(kp_reader_t *r, const char *s, size_t len)
{
    if (r->err != 0 || s == NULL) {
        return NULL;
    }
    char *copy = malloc(len + 1);
    if (copy == NULL) {
        reader_fail(r, KP_ENOMEM);
        return NULL;
    }
    memcpy(copy, s, len);
    copy[len] = '\0';
    return copy;
}

char *kp__read_str_dup(kp_reader_t *r, bool flexible)
{
    const char *s;
    size_t len;
    kp__read_str(r, flexible, &s, &len);
    return dup_str(r, s, len);
}

char *kp__read_nullable_str_dup(kp_reader_t *r, bool flexible)
{
    const char *s;
    size_t len;
    kp__read_nullable_str(r, flexible, &s, &len);
    return dup_str(r, s, len);
}

int kp__read_nullable_bytes(kp_reader_t *r, bool flexible, const uint8_t **p, size_t *len)
{
    *p = NULL;
    *len = 0;
    int64_t n = flexible ? (int64_t)kp__read_uvarint(r) - 1 : kp__read_i32(r);
    if (r->err != 0) {
        return r->err;
    }
    if (n < -1) {
        reader_fail(r, KP_EMALFORMED);
        return r->err;
    }
    if (n >= 0) {
        const uint8_t *bytes = kp__read_raw(r, (size_t)n);
        if (bytes != NULL) {
            *p = bytes;
            *len = (size_t)n;
        }
    }
    return r->err;
}

size_t kp__read_array_len(kp_reader_t *r, bool flexible, size_t min_elem_size, bool *is_null)
{
    if (is_null != NULL) {
        *is_null = false;
    }
    int64_t n = flexible ? (int64_t)kp__read_uvarint(r) - 1 : kp__read_i32(r);
    if (r->err != 0) {
        return 0;
    }
    if (n == -1) {
        if (is_null != NULL) {
            *is_null = true;
        }
        return 0;
    }
    if (n < -1) {
        reader_fail(r, KP_EMALFORMED);
        return 0;
    }
    if (min_elem_size == 0) {
        min_elem_size = 1;
    }
    if ((uint64_t)n > (r->len - r->pos) / min_elem_size) {
        reader_fail(r, KP_ETRUNCATED);
        return 0;
    }
    return (size_t)n;
}

void kp__read_tagged_fields_skip(kp_reader_t *r)
{
    uint32_t n = kp__read_uvarint(r);
    for (uint32_t i = 0; i < n && r->err == 0; i++) {
        (void)kp__read_uvarint(r); /* tag */
        uint32_t size = kp__read_uvarint(r);
        (void)kp__read_raw(r, size);
    }
}
