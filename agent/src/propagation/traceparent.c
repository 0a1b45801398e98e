/*
 * traceparent.c - W3C traceparent encode/decode and the SkyWalking -> W3C id mapping.
 */
#include "traceparent.h"
#include "hex.h"

#include <string.h>

#include "skywalking.h"

static const char hex_digits[] = "0123456789abcdef";

static int reject(const char **reason, const char *why)
{
    if (reason != NULL) {
        *reason = why;
    }
    return SW_EINVAL;
}

static bool all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (sw__hex_value(s[i], false) < 0) {
            return false;
        }
    }
    return true;
}

bool sw__w3c_id_valid(const char *s, size_t n)
{
    if (s == NULL || !all_hex(s, n)) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '0') {
            return true;
        }
    }
    return false;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

int sw__traceparent_decode(const char *value, size_t len, sw__traceparent_t *out,
                           const char **reason)
{
    if (value == NULL) {
        return reject(reason, "no value");
    }
    if (len > SW__TRACEPARENT_MAX) {
        return reject(reason, "value longer than 512 bytes");
    }
    while (len > 0 && blank(value[0])) {
        value++;
        len--;
    }
    while (len > 0 && blank(value[len - 1])) {
        len--;
    }
    if (len < SW__TRACEPARENT_LEN) {
        return reject(reason, "shorter than 55 characters");
    }
    const char *v = value;
    if (!all_hex(v, 2) || v[2] != '-') {
        return reject(reason, "version is not 2 lower-case hex digits and a '-'");
    }
    uint8_t version = (uint8_t)(sw__hex_value(v[0], false) * 16 + sw__hex_value(v[1], false));
    if (version == 0xff) {
        return reject(reason, "version ff is invalid");
    }
    if (version == 0 && len != SW__TRACEPARENT_LEN) {
        return reject(reason, "version 00 is exactly 55 characters");
    }
    if (len > SW__TRACEPARENT_LEN && v[SW__TRACEPARENT_LEN] != '-') {
        return reject(reason, "what follows the flags does not start with '-'");
    }
    if (!all_hex(v + 3, 32) || v[35] != '-') {
        return reject(reason, "trace-id is not 32 lower-case hex digits and a '-'");
    }
    if (!sw__w3c_id_valid(v + 3, 32)) {
        return reject(reason, "trace-id is all zeros");
    }
    if (!all_hex(v + 36, 16) || v[52] != '-') {
        return reject(reason, "parent-id is not 16 lower-case hex digits and a '-'");
    }
    if (!sw__w3c_id_valid(v + 36, 16)) {
        return reject(reason, "parent-id is all zeros");
    }
    if (!all_hex(v + 53, 2)) {
        return reject(reason, "trace-flags is not 2 lower-case hex digits");
    }
    out->version = version;
    out->flags = (uint8_t)(sw__hex_value(v[53], false) * 16 + sw__hex_value(v[54], false));
    memcpy(out->trace_id, v + 3, 32);
    out->trace_id[32] = '\0';
    memcpy(out->parent_id, v + 36, 16);
    out->parent_id[16] = '\0';
    return 0;
}

int sw__traceparent_encode(const char *trace_id, const char *parent_id, bool sampled, char *buf,
                           size_t len)
{
    if (buf == NULL || len < SW__TRACEPARENT_LEN + 1 || !sw__w3c_id_valid(trace_id, 32) ||
        !sw__w3c_id_valid(parent_id, 16)) {
        if (buf != NULL && len > 0) {
            buf[0] = '\0';
        }
        return SW_ENOSPACE;
    }
    memcpy(buf, "00-", 3);
    memcpy(buf + 3, trace_id, 32);
    buf[35] = '-';
    memcpy(buf + 36, parent_id, 16);
    buf[52] = '-';
    buf[53] = '0';
    buf[54] = sampled ? '1' : '0';
    buf[55] = '\0';
    return SW__TRACEPARENT_LEN;
}

/* A 64-bit hash of s[0..n) and a tail value: FNV-1a over the bytes from a seeded basis, then
   the splitmix64 finaliser so that every input bit reaches every output bit. Not for secrets:
   it only has to spread distinct ids apart. */
static uint64_t hash64(uint64_t seed, const char *s, size_t n, uint64_t tail)
{
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    }
    h ^= tail + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}

static void hex64(uint64_t v, char *out)
{
    for (int i = 15; i >= 0; i--) {
        out[i] = hex_digits[v & 15];
        v >>= 4;
    }
}

void sw__w3c_trace_id(const char *sw_trace_id, char out[33])
{
    size_t n = strlen(sw_trace_id);
    if (n == 32 && sw__w3c_id_valid(sw_trace_id, 32)) {
        memcpy(out, sw_trace_id, 33);
        return;
    }
    uint64_t hi = hash64(0x736b7977616c6b31ull, sw_trace_id, n, n);
    uint64_t lo = hash64(0x7472616365696432ull, sw_trace_id, n, hi);
    if ((hi | lo) == 0) {
        lo = 1;
    }
    hex64(hi, out);
    hex64(lo, out + 16);
    out[32] = '\0';
}

void sw__w3c_span_id(const char *segment_id, int32_t span_id, char out[17])
{
    uint64_t h =
        hash64(0x7370616e69643633ull, segment_id, strlen(segment_id), (uint64_t)(uint32_t)span_id);
    if (h == 0) {
        h = 1;
    }
    hex64(h, out);
    out[16] = '\0';
}
