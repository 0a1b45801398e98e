/*
 * sw8.c - sw8 and sw8-x encode/decode.
 */
#include "sw8.h"

#include <string.h>

#include "../segment/ids.h"
#include "swc_base64.h"
#include "../util/utf8.h"
#include "skywalking.h"

#define SW8_FIELDS 8

static int reject(const char **reason, const char *why)
{
    if (reason != NULL) {
        *reason = why;
    }
    return SW_EINVAL;
}

/* Parses a decimal in 0..max made of 1..19 digits only. */
static bool parse_decimal(const char *s, size_t n, int64_t max, int64_t *out)
{
    if (n == 0 || n > 19) {
        return false;
    }
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        int d = s[i] - '0';
        if (v > (max - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* Decodes one base64 field into scratch; returns the string or NULL when invalid. */
static const char *field_decode(const char *s, size_t n, char *scratch, size_t scratch_len,
                                size_t *used)
{
    if (n == 0) {
        return NULL;
    }
    char *dst = scratch + *used;
    long got = swc__base64_decode(s, n, dst, scratch_len - *used);
    if (got <= 0 || memchr(dst, '\0', (size_t)got) != NULL) {
        return NULL;
    }
    /* Any bytes may be encoded: what is handed on is valid UTF-8 (util/utf8.h), so that the
       segment's references and trace id cannot fail the segment's gRPC call. */
    sw__utf8_fix(dst, (size_t)got);
    *used += (size_t)got + 1;
    return dst;
}

int sw__sw8_decode(const char *header, size_t len, sw__sw8_t *out, char *scratch,
                   size_t scratch_len, const char **reason)
{
    if (header == NULL || len == 0) {
        return reject(reason, "empty value");
    }
    if (len > SW__SW8_HEADER_MAX) {
        return reject(reason, "value longer than 4096 bytes");
    }
    if (scratch_len < len + SW8_FIELDS) {
        return reject(reason, "scratch buffer too small");
    }
    const char *start[SW8_FIELDS];
    size_t flen[SW8_FIELDS];
    size_t nf = 0, begin = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || header[i] == '-') {
            if (nf == SW8_FIELDS) {
                return reject(reason, "more than 8 fields");
            }
            start[nf] = header + begin;
            flen[nf] = i - begin;
            if (flen[nf] == 0) {
                return reject(reason, "empty field");
            }
            nf++;
            begin = i + 1;
        }
    }
    if (nf != SW8_FIELDS) {
        return reject(reason, "fewer than 8 fields");
    }
    if (flen[0] != 1 || (start[0][0] != '0' && start[0][0] != '1')) {
        return reject(reason, "sample flag is not 0 or 1");
    }
    int64_t span_id;
    if (!parse_decimal(start[3], flen[3], INT32_MAX, &span_id)) {
        return reject(reason, "parent span id is not a decimal in 0..2147483647");
    }
    size_t used = 0;
    const char *s[SW8_FIELDS] = {0};
    for (int k = 1; k < SW8_FIELDS; k++) {
        if (k == 3) {
            continue;
        }
        s[k] = field_decode(start[k], flen[k], scratch, scratch_len, &used);
        if (s[k] == NULL) {
            return reject(reason, "a field is not valid base64 of a non-empty string");
        }
    }
    if (strlen(s[1]) >= 256) {
        return reject(reason, "trace id longer than 255 bytes");
    }
    out->sample = start[0][0] - '0';
    out->parent_span_id = (int32_t)span_id;
    out->trace_id = s[1];
    out->parent_segment_id = s[2];
    out->parent_service = s[4];
    out->parent_instance = s[5];
    out->parent_endpoint = s[6];
    out->address = s[7];
    return 0;
}

/* Appends base64(s) and a '-' (unless last); returns false when the buffer is short. */
static bool append_b64(char *buf, size_t len, size_t *pos, const char *s, bool last)
{
    long n = swc__base64_encode(s, strlen(s), buf + *pos, len - *pos);
    if (n < 0) {
        return false;
    }
    *pos += (size_t)n;
    if (!last) {
        if (*pos + 2 > len) {
            return false;
        }
        buf[(*pos)++] = '-';
        buf[*pos] = '\0';
    }
    return true;
}

int sw__sw8_encode(const sw__sw8_t *in, char *buf, size_t len)
{
    if (buf == NULL || len < 3 || in->parent_span_id < 0) {
        return SW_ENOSPACE;
    }
    size_t pos = 0;
    buf[pos++] = in->sample ? '1' : '0';
    buf[pos++] = '-';
    buf[pos] = '\0';
    if (!append_b64(buf, len, &pos, in->trace_id, false) ||
        !append_b64(buf, len, &pos, in->parent_segment_id, false)) {
        goto nospace;
    }
    char digits[24];
    size_t nd = sw__u64_to_dec((uint64_t)in->parent_span_id, digits);
    if (pos + nd + 2 > len) {
        goto nospace;
    }
    memcpy(buf + pos, digits, nd);
    pos += nd;
    buf[pos++] = '-';
    buf[pos] = '\0';
    if (!append_b64(buf, len, &pos, in->parent_service, false) ||
        !append_b64(buf, len, &pos, in->parent_instance, false) ||
        !append_b64(buf, len, &pos, in->parent_endpoint, false) ||
        !append_b64(buf, len, &pos, in->address, true)) {
        goto nospace;
    }
    return (int)pos;
nospace:
    buf[0] = '\0';
    return SW_ENOSPACE;
}

int sw__sw8x_decode(const char *header, size_t len, sw__sw8x_t *out, const char **reason)
{
    if (header == NULL || len < 2) {
        return reject(reason, "shorter than 2 bytes");
    }
    if (len > 64) {
        return reject(reason, "longer than 64 bytes");
    }
    if ((header[0] != '0' && header[0] != '1') || header[1] != '-') {
        return reject(reason, "does not start with 0- or 1-");
    }
    out->skip_analysis = header[0] == '1';
    out->has_timestamp = false;
    out->send_ms = 0;
    if (len > 2) {
        int64_t ts;
        if (!parse_decimal(header + 2, len - 2, INT64_MAX / 2, &ts)) {
            return reject(reason, "timestamp is not a decimal");
        }
        out->has_timestamp = true;
        out->send_ms = ts;
    }
    return 0;
}

int sw__sw8x_encode(int64_t send_ms, char *buf, size_t len)
{
    char digits[24];
    size_t nd = sw__u64_to_dec((uint64_t)(send_ms < 0 ? 0 : send_ms), digits);
    if (buf == NULL || len < nd + 3) {
        if (buf != NULL && len > 0) {
            buf[0] = '\0';
        }
        return SW_ENOSPACE;
    }
    buf[0] = '0';
    buf[1] = '-';
    memcpy(buf + 2, digits, nd + 1);
    return (int)(nd + 2);
}
