/*
 * test_crash_spool.c - the crash spool reader (agent/src/crash/crash_spool_read.c) against a
 * spool built here byte by byte as crash_spool.h lays it out: a valid one is read back whole;
 * every truncation, every flipped byte of the covered area, hostile counts and lengths are
 * rejected with the right code and never read outside the buffer (this test runs in the
 * sanitizer builds too, where the recorder itself is off).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "crash/crash_spool.h"
#include "crash_spool_build.h"

static const uint8_t segment_bytes[] = {0x0a, 0x03, 't', 'i', 'd', 0x12, 0x03, 's', 'i', 'd'};

typedef struct built {
    uint8_t *buf;
    size_t len;
} built_t;

/* A recorded SIGSEGV spool: 2 modules, 2 frames, 2 segments. */
static built_t build(void)
{
    built_t b = {calloc(1, 64 * 1024), 0};
    sw__crash_header_t *h = (sw__crash_header_t *)(void *)b.buf;
    memcpy(h->magic, SW__CRASH_MAGIC, 8);
    h->version = SW__CRASH_VERSION;
    h->header_bytes = SW__CRASH_HEADER_BYTES;
    h->spool_bytes = SW__CRASH_SPOOL_BYTES;
    h->state = SW__CRASH_RECORDED;
    h->signo = SIGSEGV;
    h->si_code = 1;
    h->pid = 42;
    h->tid = 43;
    memcpy(h->service, "svc", 3);
    h->service_len = 3;
    memcpy(h->instance, "inst", 4);
    h->instance_len = 4;
    uint8_t *body = b.buf + SW__CRASH_HEADER_BYTES, *p = body;
    p += crash_spool_put_module(p, 0x1000, 0x2000, 0x1000, "/usr/bin/app");
    p += crash_spool_put_module(p, 0x7000, 0x9000, 0x7000, "/lib/libc.so.6");
    h->module_count = 2;
    h->module_bytes = (uint32_t)(p - body);
    sw__crash_frame_t frames[SW__CRASH_FRAMES_MAX] = {{0, 0, 0x123}, {1, 0, 0x456}};
    memcpy(p, frames, sizeof frames);
    p += sizeof frames;
    h->frame_count = 2;
    for (int s = 0; s < 2; s++) {
        uint32_t len = sizeof segment_bytes, flags = s == 0 ? SW__CRASH_SEG_CRASHING : 0;
        memcpy(p, &len, 4);
        memcpy(p + 4, &flags, 4);
        memcpy(p + 8, segment_bytes, len);
        p += 8 + ((len + 7u) & ~7u);
    }
    h->segment_count = 2;
    h->body_bytes = (uint32_t)(p - body);
    crash_spool_checksum(b.buf);
    b.len = SW__CRASH_HEADER_BYTES + h->body_bytes;
    return b;
}

static sw__crash_view_t view;

Test(crash_spool, reads_back_what_was_written)
{
    built_t b = build();
    cr_assert_eq(sw__crash_spool_parse(b.buf, b.len, &view), SW__CRASH_OK);
    cr_assert_eq(view.module_count, 2);
    cr_assert_eq(view.modules[1].path_len, 14);
    cr_assert_eq(memcmp(view.modules[1].path, "/lib/libc.so.6", 14), 0);
    cr_assert_eq(view.frame_count, 2);
    cr_assert_eq(view.segment_count, 2);
    cr_assert_eq(view.segments[0].flags, SW__CRASH_SEG_CRASHING);
    cr_assert_eq(view.segments[1].len, sizeof segment_bytes);
    cr_assert_eq(memcmp(view.segments[1].data, segment_bytes, sizeof segment_bytes), 0);
    char name[64];
    cr_assert_str_eq(sw__crash_frame_format(&view, &view.frames[0], name, sizeof name),
                     "app+0x123");
    cr_assert_str_eq(sw__crash_frame_format(&view, &view.frames[1], name, sizeof name),
                     "libc.so.6+0x456");
    sw__crash_frame_t unknown = {UINT32_MAX, 0, 0xdead};
    cr_assert_str_eq(sw__crash_frame_format(&view, &unknown, name, sizeof name), "?+0xdead");
    cr_assert_str_eq(sw__crash_signal_name(SIGSEGV), "SIGSEGV");
    cr_assert_str_eq(sw__crash_signal_name(SIGSYS), "SIGSYS");
    free(b.buf);
}

Test(crash_spool, an_armed_spool_is_empty)
{
    built_t b = build();
    ((sw__crash_header_t *)(void *)b.buf)->state = SW__CRASH_ARMED;
    cr_assert_eq(sw__crash_spool_parse(b.buf, b.len, &view), SW__CRASH_EMPTY);
    free(b.buf);
}

/* Every length short of the whole: rejected (each in a buffer of exactly that size, so the
   sanitizer builds catch a read past it). */
Test(crash_spool, every_truncation_is_rejected)
{
    built_t b = build();
    for (size_t n = 0; n < b.len; n++) {
        uint8_t *copy = malloc(n + 1);
        memcpy(copy, b.buf, n);
        int rc = sw__crash_spool_parse(copy, n, &view);
        cr_assert(rc == SW__CRASH_NOT_SPOOL || rc == SW__CRASH_CORRUPT, "truncated to %zu: %d", n,
                  rc);
        free(copy);
    }
    free(b.buf);
}

/* Any flipped bit of the header or body: never OK. */
Test(crash_spool, every_flipped_byte_is_rejected)
{
    built_t b = build();
    for (size_t i = 0; i < b.len; i++) {
        b.buf[i] ^= 0x10;
        int rc = sw__crash_spool_parse(b.buf, b.len, &view);
        cr_assert_neq(rc, SW__CRASH_OK, "byte %zu flipped, still accepted", i);
        b.buf[i] ^= 0x10;
    }
    cr_assert_eq(sw__crash_spool_parse(b.buf, b.len, &view), SW__CRASH_OK);
    free(b.buf);
}

/* Hostile counts and lengths with a correct checksum (a writer gone wrong, or a forger): the
   bounds checks, not the checksum, reject them. */
Test(crash_spool, hostile_counts_with_a_valid_checksum)
{
    struct {
        size_t at;
        uint32_t value;
    } cases[] = {
        {offsetof(sw__crash_header_t, module_count), 100000},
        {offsetof(sw__crash_header_t, module_count), 3},
        {offsetof(sw__crash_header_t, segment_count), 0xffffffffu},
        {offsetof(sw__crash_header_t, segment_count), 3},
        {offsetof(sw__crash_header_t, frame_count), SW__CRASH_FRAMES_MAX + 1},
        {offsetof(sw__crash_header_t, module_bytes), 0xfffffff0u},
        {offsetof(sw__crash_header_t, service_len), SW__CRASH_NAME_MAX},
        {offsetof(sw__crash_header_t, service_len), 0},
        {SW__CRASH_HEADER_BYTES + 24, 0x7fffffff}, /* the first module's path length */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        built_t b = build();
        memcpy(b.buf + cases[c].at, &cases[c].value, 4);
        crash_spool_checksum(b.buf);
        cr_assert_eq(sw__crash_spool_parse(b.buf, b.len, &view), SW__CRASH_CORRUPT, "case %zu", c);
        free(b.buf);
    }
    /* A segment length running past the body. */
    built_t b = build();
    const sw__crash_header_t *h = (const sw__crash_header_t *)(const void *)b.buf;
    size_t seg_at =
        SW__CRASH_HEADER_BYTES + h->module_bytes + SW__CRASH_FRAMES_MAX * sizeof(sw__crash_frame_t);
    uint32_t big = 0x10000;
    memcpy(b.buf + seg_at, &big, 4);
    crash_spool_checksum(b.buf);
    cr_assert_eq(sw__crash_spool_parse(b.buf, b.len, &view), SW__CRASH_CORRUPT);
    free(b.buf);
}

Test(crash_spool, foreign_bytes_are_not_a_spool)
{
    uint8_t junk[2048];
    memset(junk, 'x', sizeof junk);
    cr_assert_eq(sw__crash_spool_parse(junk, sizeof junk, &view), SW__CRASH_NOT_SPOOL);
    built_t b = build();
    ((sw__crash_header_t *)(void *)b.buf)->version = 99;
    cr_assert_eq(sw__crash_spool_parse(b.buf, b.len, &view), SW__CRASH_NOT_SPOOL);
    free(b.buf);
}
