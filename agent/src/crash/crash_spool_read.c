/*
 * crash_spool_read.c - checks a crash spool and lists what it holds (crash_spool.h). Every
 * length is checked against the bytes actually there before it is used, so a truncated,
 * damaged or hostile file is rejected (tests/fuzz/fuzz_crash_spool.c feeds it any bytes).
 */
#include "crash_spool.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

const char *sw__crash_spool_strerror(int rc)
{
    switch (rc) {
    case SW__CRASH_OK:
        return "ok";
    case SW__CRASH_NOT_SPOOL:
        return "not a crash spool (size, magic or version)";
    case SW__CRASH_EMPTY:
        return "no crash recorded";
    case SW__CRASH_CORRUPT:
        return "damaged or truncated (lengths or checksum)";
    }
    return "unknown";
}

const char *sw__crash_signal_name(int signo)
{
    /* Signal context too (the crash handler): async-signal-safe, returns literals only. */
    switch (signo) {
    case SIGSEGV:
        return "SIGSEGV";
    case SIGBUS:
        return "SIGBUS";
    case SIGILL:
        return "SIGILL";
    case SIGFPE:
        return "SIGFPE";
    case SIGABRT:
        return "SIGABRT";
    case SIGSYS:
        return "SIGSYS";
    }
    return "SIG?";
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static size_t pad8(size_t n)
{
    return (n + 7u) & ~(size_t)7u;
}

static int modules_parse(const uint8_t *p, size_t n, uint32_t count, sw__crash_view_t *v)
{
    size_t at = 0;
    if (count > SW__CRASH_VIEW_MODULES_MAX) {
        return SW__CRASH_CORRUPT;
    }
    for (uint32_t i = 0; i < count; i++) {
        if (n - at < 32) {
            return SW__CRASH_CORRUPT;
        }
        sw__crash_module_view_t *m = &v->modules[i];
        m->lo = rd64(p + at);
        m->hi = rd64(p + at + 8);
        m->base = rd64(p + at + 16);
        m->path_len = rd32(p + at + 24);
        at += 32;
        if (m->path_len > n - at || pad8(m->path_len) > n - at) {
            return SW__CRASH_CORRUPT;
        }
        m->path = (const char *)(p + at);
        at += pad8(m->path_len);
    }
    v->module_count = count;
    return SW__CRASH_OK;
}

static int segments_parse(const uint8_t *p, size_t n, uint32_t count, sw__crash_view_t *v)
{
    size_t at = 0;
    if (count > SW__CRASH_VIEW_SEGMENTS_MAX) {
        return SW__CRASH_CORRUPT;
    }
    for (uint32_t i = 0; i < count; i++) {
        if (n - at < 8) {
            return SW__CRASH_CORRUPT;
        }
        uint32_t len = rd32(p + at), flags = rd32(p + at + 4);
        at += 8;
        if (len == 0 || len > n - at || pad8(len) > n - at) {
            return SW__CRASH_CORRUPT;
        }
        v->segments[i] = (sw__crash_segment_view_t){p + at, len, flags};
        at += pad8(len);
    }
    v->segment_count = count;
    return SW__CRASH_OK;
}

int sw__crash_spool_parse(const uint8_t *buf, size_t len, sw__crash_view_t *v)
{
    memset(v, 0, offsetof(sw__crash_view_t, modules));
    v->module_count = v->frame_count = v->segment_count = 0;
    if (len < SW__CRASH_HEADER_BYTES || memcmp(buf, SW__CRASH_MAGIC, 8) != 0) {
        return SW__CRASH_NOT_SPOOL;
    }
    const sw__crash_header_t *h = (const sw__crash_header_t *)(const void *)buf;
    if (h->version != SW__CRASH_VERSION || h->header_bytes != SW__CRASH_HEADER_BYTES) {
        return SW__CRASH_NOT_SPOOL;
    }
    if (h->state == SW__CRASH_ARMED) {
        return SW__CRASH_EMPTY;
    }
    if (h->state != SW__CRASH_RECORDED || h->body_bytes > len - h->header_bytes ||
        h->service_len == 0 || h->service_len >= SW__CRASH_NAME_MAX ||
        h->instance_len >= SW__CRASH_NAME_MAX || h->frame_count > SW__CRASH_FRAMES_MAX ||
        h->module_bytes > h->body_bytes) {
        return SW__CRASH_CORRUPT;
    }
    sw__crash_header_t copy;
    memcpy(&copy, h, sizeof copy);
    copy.checksum = 0;
    uint64_t sum = sw__fnv1a(SW__FNV_START, &copy, sizeof copy);
    sum = sw__fnv1a(sum, buf + sizeof copy, h->header_bytes - sizeof copy);
    sum = sw__fnv1a(sum, buf + h->header_bytes, h->body_bytes);
    if (sum != h->checksum) {
        return SW__CRASH_CORRUPT;
    }
    const uint8_t *body = buf + h->header_bytes;
    size_t frames_bytes = (size_t)SW__CRASH_FRAMES_MAX * sizeof(sw__crash_frame_t);
    if (h->body_bytes - h->module_bytes < frames_bytes) {
        return SW__CRASH_CORRUPT;
    }
    int rc = modules_parse(body, h->module_bytes, h->module_count, v);
    if (rc != SW__CRASH_OK) {
        return rc;
    }
    memcpy(v->frames, body + h->module_bytes, h->frame_count * sizeof(sw__crash_frame_t));
    v->frame_count = h->frame_count;
    size_t seg_at = h->module_bytes + frames_bytes;
    rc = segments_parse(body + seg_at, h->body_bytes - seg_at, h->segment_count, v);
    if (rc != SW__CRASH_OK) {
        return rc;
    }
    v->header = h;
    return SW__CRASH_OK;
}

char *sw__crash_frame_format(const sw__crash_view_t *v, const sw__crash_frame_t *f, char *out,
                             size_t cap)
{
    if (f->module >= v->module_count) {
        snprintf(out, cap, "?+0x%llx", (unsigned long long)f->offset);
        return out;
    }
    const sw__crash_module_view_t *m = &v->modules[f->module];
    const char *name = m->path;
    uint32_t n = m->path_len;
    for (uint32_t i = 0; i < m->path_len; i++) {
        if (m->path[i] == '/') {
            name = m->path + i + 1;
            n = m->path_len - i - 1;
        }
    }
    snprintf(out, cap, "%.*s+0x%llx", (int)n, name, (unsigned long long)f->offset);
    return out;
}
