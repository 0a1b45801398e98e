/*
 * tracestate.c - W3C tracestate lists and the `sw` member (see tracestate.h).
 */
#include "tracestate.h"
#include "hex.h"

#include <string.h>

#include "../segment/ids.h"
#include "../util/utf8.h"
#include "skywalking.h"

#define SWSTATE_FIELDS_MIN 6
#define SWSTATE_FIELDS_MAX 7
#define SWSTATE_FIELD_MAX  255 /* decoded bytes */

static int reject(const char **reason, const char *why)
{
    if (reason != NULL) {
        *reason = why;
    }
    return SW_EINVAL;
}

static bool ows(char c)
{
    return c == ' ' || c == '\t';
}

static bool lcalpha(char c)
{
    return c >= 'a' && c <= 'z';
}

static bool key_char(char c)
{
    return lcalpha(c) || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' || c == '/';
}

/* nblk-chr: %x21-2B / %x2D-3C / %x3E-7E (printable ASCII but ',' and '='). */
static bool value_nblk(char c)
{
    return c >= 0x21 && c <= 0x7e && c != ',' && c != '=';
}

static bool key_valid(const char *k, size_t n)
{
    const char *at = memchr(k, '@', n);
    if (at == NULL) {
        if (n < 1 || n > 256 || !lcalpha(k[0])) {
            return false;
        }
        for (size_t i = 1; i < n; i++) {
            if (!key_char(k[i])) {
                return false;
            }
        }
        return true;
    }
    size_t tn = (size_t)(at - k), sn = n - tn - 1;
    if (tn < 1 || tn > 241 || sn < 1 || sn > 14 ||
        !(lcalpha(k[0]) || (k[0] >= '0' && k[0] <= '9')) || !lcalpha(at[1])) {
        return false;
    }
    for (size_t i = 1; i < tn; i++) {
        if (!key_char(k[i])) {
            return false;
        }
    }
    for (size_t i = 1; i < sn; i++) {
        if (!key_char(at[1 + i])) {
            return false;
        }
    }
    return true;
}

static bool value_valid(const char *v, size_t n)
{
    if (n < 1 || n > 256 || !value_nblk(v[n - 1])) {
        return false;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        if (v[i] != ' ' && !value_nblk(v[i])) {
            return false;
        }
    }
    return true;
}

static int list_reject(char *others, const char **sw, size_t *sw_len, const char **reason,
                       const char *why)
{
    others[0] = '\0';
    *sw = NULL;
    *sw_len = 0;
    return reject(reason, why);
}

int sw__tracestate_parse(const char *value, size_t len, char *others, size_t others_len,
                         const char **sw, size_t *sw_len, const char **reason)
{
    *sw = NULL;
    *sw_len = 0;
    if (others == NULL || others_len == 0) {
        return reject(reason, "no output buffer");
    }
    others[0] = '\0';
    if (value == NULL) {
        return reject(reason, "no value");
    }
    if (len > SW__TRACESTATE_IN_MAX) {
        return reject(reason, "value longer than 4096 bytes");
    }
    if (others_len < len + 1) {
        return reject(reason, "output buffer too small");
    }
    struct {
        const char *key;
        size_t key_len;
    } seen[SW__TRACESTATE_MEMBERS_MAX];
    size_t count = 0, out = 0;
    size_t begin = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && value[i] != ',') {
            continue;
        }
        const char *m = value + begin;
        size_t n = i - begin;
        begin = i + 1;
        while (n > 0 && ows(m[0])) {
            m++;
            n--;
        }
        while (n > 0 && ows(m[n - 1])) {
            n--;
        }
        if (n == 0) {
            continue; /* an empty member is allowed and dropped */
        }
        const char *eq = memchr(m, '=', n);
        size_t kn = eq != NULL ? (size_t)(eq - m) : 0;
        if (eq == NULL || !key_valid(m, kn) || !value_valid(eq + 1, n - kn - 1)) {
            return list_reject(others, sw, sw_len, reason,
                               "a member is not key=value by the grammar");
        }
        if (count == SW__TRACESTATE_MEMBERS_MAX) {
            return list_reject(others, sw, sw_len, reason, "more than 32 members");
        }
        for (size_t j = 0; j < count; j++) {
            if (seen[j].key_len == kn && memcmp(seen[j].key, m, kn) == 0) {
                return list_reject(others, sw, sw_len, reason, "a key appears twice");
            }
        }
        seen[count].key = m;
        seen[count].key_len = kn;
        count++;
        if (kn == 2 && m[0] == 's' && m[1] == 'w') {
            *sw = eq + 1;
            *sw_len = n - 3;
            continue;
        }
        if (out > 0) {
            others[out++] = ',';
        }
        memcpy(others + out, m, n);
        out += n;
    }
    others[out] = '\0';
    return (int)count;
}

/* Removes the member at [at, at + n) (n without its comma) from list of length *len. */
static void member_remove(char *list, size_t *len, size_t at, size_t n)
{
    size_t from = at + n, to = at;
    if (from < *len) {
        from++; /* its trailing comma */
    } else if (to > 0) {
        to--; /* the last member: its leading comma */
    }
    memmove(list + to, list + from, *len - from + 1);
    *len -= from - to;
}

/* Finds the first member (the last when `last`) whose length exceeds `longer_than`. */
static bool member_find(const char *list, size_t len, size_t longer_than, bool last, size_t *at,
                        size_t *n)
{
    bool found = false;
    size_t begin = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && list[i] != ',') {
            continue;
        }
        if (i - begin > longer_than) {
            *at = begin;
            *n = i - begin;
            found = true;
            if (!last) {
                return true;
            }
        }
        begin = i + 1;
    }
    return found;
}

static size_t member_count(const char *list, size_t len)
{
    if (len == 0) {
        return 0;
    }
    size_t n = 1;
    for (size_t i = 0; i < len; i++) {
        n += list[i] == ',';
    }
    return n;
}

size_t sw__tracestate_trim(char *list, size_t max_members, size_t max_bytes)
{
    size_t len = strlen(list), at, n;
    while (len > max_bytes && member_find(list, len, SW__TRACESTATE_LONG_MEMBER, false, &at, &n)) {
        member_remove(list, &len, at, n);
    }
    while ((len > max_bytes || member_count(list, len) > max_members) &&
           member_find(list, len, 0, true, &at, &n)) {
        member_remove(list, &len, at, n);
    }
    return len;
}

int sw__tracestate_build(const char *ours, const char *others, char *buf, size_t len)
{
    size_t on = ours != NULL ? strlen(ours) : 0, xn = others != NULL ? strlen(others) : 0;
    size_t need = (on > 0 ? 3 + on : 0) + (on > 0 && xn > 0 ? 1 : 0) + xn + 1;
    if (buf == NULL || len < need) {
        if (buf != NULL && len > 0) {
            buf[0] = '\0';
        }
        return SW_ENOSPACE;
    }
    size_t pos = 0;
    if (on > 0) {
        memcpy(buf, "sw=", 3);
        memcpy(buf + 3, ours, on);
        pos = 3 + on;
        if (xn > 0) {
            buf[pos++] = ',';
        }
    }
    if (xn > 0) {
        memcpy(buf + pos, others, xn);
        pos += xn;
    }
    buf[pos] = '\0';
    return (int)pos;
}

/* ---- the sw member ---------------------------------------------------------------------- */

static bool must_escape(unsigned char c)
{
    return c < 0x21 || c > 0x7e || c == '%' || c == ',' || c == '=' || c == ';';
}

static size_t escaped_len(const char *s)
{
    size_t n = 0;
    for (; *s != '\0'; s++) {
        n += must_escape((unsigned char)*s) ? 3 : 1;
    }
    return n;
}

/* Appends the escaped bytes of s, at most `room` output bytes, never splitting an escape nor a
   UTF-8 sequence. Returns the bytes written. */
static size_t escape_into(char *dst, const char *s, size_t room)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t pos = 0, cut = 0;
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c & 0xC0u) != 0x80u) {
            cut = pos; /* a character starts here: output may end before it */
        }
        size_t w = must_escape(c) ? 3 : 1;
        if (pos + w > room) {
            return cut;
        }
        if (w == 3) {
            dst[pos] = '%';
            dst[pos + 1] = hex[c >> 4];
            dst[pos + 2] = hex[c & 15];
        } else {
            dst[pos] = (char)c;
        }
        pos += w;
    }
    return pos;
}

int sw__swstate_encode(const sw__swstate_t *in, char *buf, size_t len)
{
    const size_t budget = SW__TRACESTATE_ENTRY_MAX - 3; /* "sw=" */
    if (buf == NULL || len == 0) {
        return SW_ENOSPACE;
    }
    buf[0] = '\0';
    if (in->span_id < 0 || in->segment_id == NULL || in->service == NULL || in->instance == NULL ||
        in->endpoint == NULL || in->peer == NULL || in->segment_id[0] == '\0' ||
        in->service[0] == '\0' || in->instance[0] == '\0' || in->endpoint[0] == '\0' ||
        in->peer[0] == '\0') {
        return SW_ENOSPACE;
    }
    bool has_trace = in->trace_id != NULL && in->trace_id[0] != '\0';
    char digits[24];
    size_t nd = sw__u64_to_dec((uint64_t)in->span_id, digits);
    size_t fixed = escaped_len(in->segment_id) + nd + escaped_len(in->service) +
                   escaped_len(in->instance) + escaped_len(in->peer) +
                   (has_trace ? 1 + escaped_len(in->trace_id) : 0) + 5;
    if (fixed >= budget || len < budget + 1) {
        return SW_ENOSPACE;
    }
    size_t room = budget - fixed, pos = 0;
    pos += escape_into(buf + pos, in->segment_id, SIZE_MAX);
    buf[pos++] = ';';
    memcpy(buf + pos, digits, nd);
    pos += nd;
    buf[pos++] = ';';
    pos += escape_into(buf + pos, in->service, SIZE_MAX);
    buf[pos++] = ';';
    pos += escape_into(buf + pos, in->instance, SIZE_MAX);
    buf[pos++] = ';';
    size_t en = escape_into(buf + pos, in->endpoint, room);
    if (en == 0) {
        buf[0] = '\0';
        return SW_ENOSPACE;
    }
    pos += en;
    buf[pos++] = ';';
    pos += escape_into(buf + pos, in->peer, SIZE_MAX);
    if (has_trace) {
        buf[pos++] = ';';
        pos += escape_into(buf + pos, in->trace_id, SIZE_MAX);
    }
    buf[pos] = '\0';
    return (int)pos;
}

/* Unescapes one field into scratch; returns it, or NULL when malformed. */
static const char *field_unescape(const char *s, size_t n, char *scratch, size_t *used)
{
    char *dst = scratch + *used;
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            int hi = i + 2 < n ? sw__hex_value(s[i + 1], true) : -1;
            int lo = hi >= 0 ? sw__hex_value(s[i + 2], true) : -1;
            if (lo < 0 || (hi == 0 && lo == 0)) {
                return NULL; /* a bad escape, or a NUL byte */
            }
            dst[out++] = (char)(hi * 16 + lo);
            i += 2;
        } else if ((unsigned char)c < 0x20 || (unsigned char)c > 0x7e) {
            return NULL;
        } else {
            dst[out++] = c;
        }
    }
    if (out > SWSTATE_FIELD_MAX) {
        return NULL;
    }
    dst[out] = '\0';
    sw__utf8_fix(dst, out); /* an escape may spell any byte: cleaned for the segment (utf8.h) */
    *used += out + 1;
    return dst;
}

int sw__swstate_decode(const char *value, size_t len, sw__swstate_t *out, char *scratch,
                       size_t scratch_len, const char **reason)
{
    if (value == NULL || len == 0) {
        return reject(reason, "empty value");
    }
    if (len > SW__TRACESTATE_ENTRY_MAX) {
        return reject(reason, "value longer than 256 bytes");
    }
    if (scratch == NULL || scratch_len < len + SWSTATE_FIELDS_MAX + 1) {
        return reject(reason, "scratch buffer too small");
    }
    const char *start[SWSTATE_FIELDS_MAX];
    size_t flen[SWSTATE_FIELDS_MAX];
    size_t nf = 0, begin = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && value[i] != ';') {
            continue;
        }
        if (nf == SWSTATE_FIELDS_MAX) {
            return reject(reason, "more than 7 fields");
        }
        start[nf] = value + begin;
        flen[nf] = i - begin;
        if (flen[nf] == 0) {
            return reject(reason, "empty field");
        }
        nf++;
        begin = i + 1;
    }
    if (nf < SWSTATE_FIELDS_MIN) {
        return reject(reason, "fewer than 6 fields");
    }
    int64_t span = 0;
    if (flen[1] > 10) {
        return reject(reason, "span id is not a decimal in 0..2147483647");
    }
    for (size_t i = 0; i < flen[1]; i++) {
        char c = start[1][i];
        if (c < '0' || c > '9') {
            return reject(reason, "span id is not a decimal in 0..2147483647");
        }
        span = span * 10 + (c - '0');
    }
    if (span > INT32_MAX) {
        return reject(reason, "span id is not a decimal in 0..2147483647");
    }
    size_t used = 0;
    const char *f[SWSTATE_FIELDS_MAX] = {0};
    for (size_t k = 0; k < nf; k++) {
        if (k == 1) {
            continue;
        }
        f[k] = field_unescape(start[k], flen[k], scratch, &used);
        if (f[k] == NULL || f[k][0] == '\0') {
            return reject(reason, "a field has a bad escape, a NUL byte or over 255 bytes");
        }
    }
    out->segment_id = f[0];
    out->span_id = (int32_t)span;
    out->service = f[2];
    out->instance = f[3];
    out->endpoint = f[4];
    out->peer = f[5];
    out->trace_id = nf == SWSTATE_FIELDS_MAX ? f[6] : "";
    return 0;
}

int sw__w3c_extract(const char *traceparent, const char *tracestate, sw__w3c_in_t *out,
                    const char **reason)
{
    out->others[0] = '\0';
    out->has_ref = false;
    out->trace_id = NULL;
    if (traceparent == NULL) {
        return reject(reason, "no traceparent");
    }
    int rc = sw__traceparent_decode(traceparent, strnlen(traceparent, SW__TRACEPARENT_MAX + 1),
                                    &out->tp, reason);
    if (rc != 0) {
        return rc;
    }
    out->trace_id = out->tp.trace_id;
    if (tracestate == NULL) {
        return 0;
    }
    const char *sw;
    size_t sw_len;
    if (sw__tracestate_parse(tracestate, strnlen(tracestate, SW__TRACESTATE_IN_MAX + 1),
                             out->others, sizeof out->others, &sw, &sw_len, NULL) < 0 ||
        sw == NULL ||
        sw__swstate_decode(sw, sw_len, &out->st, out->scratch, sizeof out->scratch, NULL) != 0) {
        return 0;
    }
    if (out->st.trace_id[0] != '\0') {
        /* Only a member of this very trace names its parent: a service that began a new trace
           but forwarded the old tracestate must not link the two. */
        char mapped[33];
        sw__w3c_trace_id(out->st.trace_id, mapped);
        if (memcmp(mapped, out->tp.trace_id, 33) != 0) {
            return 0;
        }
        out->trace_id = out->st.trace_id;
    }
    out->has_ref = true;
    return 0;
}
