/*
 * correlation.c - correlation data and sw8-correlation.
 */
#include "correlation.h"

#include <string.h>

#include "swc_base64.h"

int sw__correlation_find(const sw_correlation_t *c, const char *key)
{
    for (uint32_t i = 0; i < c->count && i < SW_CORRELATION_MAX_ELEMENTS; i++) {
        if (strcmp(c->items[i].key, key) == 0) {
            return (int)i;
        }
    }
    return SW_ENOTFOUND;
}

static void item_remove(sw_correlation_t *c, uint32_t i)
{
    for (uint32_t k = i + 1; k < c->count; k++) {
        c->items[k - 1] = c->items[k];
    }
    c->count--;
}

int sw__correlation_put(sw_correlation_t *c, const char *key, const char *value)
{
    if (key == NULL || key[0] == '\0') {
        return SW_EINVAL;
    }
    size_t klen = strlen(key);
    size_t vlen = value == NULL ? 0 : strlen(value);
    if (klen > SW_CORRELATION_VALUE_MAX || vlen > SW_CORRELATION_VALUE_MAX) {
        return SW_ELIMIT;
    }
    int at = sw__correlation_find(c, key);
    if (vlen == 0) {
        if (at >= 0) {
            item_remove(c, (uint32_t)at);
        }
        return 0;
    }
    if (at < 0) {
        if (c->count >= SW_CORRELATION_MAX_ELEMENTS) {
            return SW_ELIMIT;
        }
        at = (int)c->count++;
        memcpy(c->items[at].key, key, klen + 1);
    }
    memcpy(c->items[at].value, value, vlen + 1);
    return 0;
}

/* Decodes one "b64:b64" element into key/value buffers; false when malformed. */
static bool element_decode(const char *s, size_t n, char *key, char *value)
{
    const char *colon = memchr(s, ':', n);
    if (colon == NULL) {
        return false;
    }
    size_t kn = (size_t)(colon - s), vn = n - kn - 1;
    long kl = swc__base64_decode(s, kn, key, SW_CORRELATION_VALUE_MAX + 1);
    long vl = swc__base64_decode(colon + 1, vn, value, SW_CORRELATION_VALUE_MAX + 1);
    if (kl <= 0 || vl <= 0) {
        return false;
    }
    return memchr(key, '\0', (size_t)kl) == NULL && memchr(value, '\0', (size_t)vl) == NULL;
}

int sw__correlation_decode(const char *header, size_t len, sw_correlation_t *out)
{
    out->count = 0;
    if (header == NULL || len == 0 || len > SW__CORRELATION_HEADER_IN_MAX) {
        return 0;
    }
    size_t begin = 0;
    for (size_t i = 0; i <= len && out->count < SW_CORRELATION_MAX_ELEMENTS; i++) {
        if (i != len && header[i] != ',') {
            continue;
        }
        char key[SW_CORRELATION_VALUE_MAX + 1], value[SW_CORRELATION_VALUE_MAX + 1];
        if (element_decode(header + begin, i - begin, key, value)) {
            (void)sw__correlation_put(out, key, value);
        }
        begin = i + 1;
    }
    return (int)out->count;
}

int sw__correlation_encode(const sw_correlation_t *c, char *buf, size_t len)
{
    if (buf == NULL || len == 0) {
        return SW_ENOSPACE;
    }
    size_t pos = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < c->count && i < SW_CORRELATION_MAX_ELEMENTS; i++) {
        if (i > 0) {
            if (pos + 2 > len) {
                goto nospace;
            }
            buf[pos++] = ',';
        }
        long n = swc__base64_encode(c->items[i].key, strlen(c->items[i].key), buf + pos, len - pos);
        if (n < 0 || pos + (size_t)n + 2 > len) {
            goto nospace;
        }
        pos += (size_t)n;
        buf[pos++] = ':';
        n = swc__base64_encode(c->items[i].value, strlen(c->items[i].value), buf + pos, len - pos);
        if (n < 0) {
            goto nospace;
        }
        pos += (size_t)n;
    }
    buf[pos] = '\0';
    return (int)pos;
nospace:
    buf[0] = '\0';
    return SW_ENOSPACE;
}
