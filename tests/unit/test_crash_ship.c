/*
 * test_crash_ship.c - the crash shipper (agent/src/crash/crash_ship.c) in process, in every
 * preset (the sanitizer builds too, where the recorder itself is off but sw_init still sends
 * what other processes left): a spool built here as the handler writes one, with a real
 * SegmentObject and a frame in this test binary, is sent by sw_init through the file
 * reporter with its frame symbolized; damaged spools are dropped and counted; another
 * service's spool and a spool whose owner holds its lock are left alone.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash/crash.h"
#include "crash/crash_dir.h"
#include "crash/crash_spool.h"
#include "crash_spool_build.h"
#include "test_agent_support.h"

static char crash_dir[128];

static void edit(sw_config_t *cfg)
{
    snprintf(cfg->crash_dir, sizeof cfg->crash_dir, "%s", crash_dir);
}

/* Where the frame points: a function of this binary, to be named by the symbolizer. */
__attribute__((noinline)) void crash_ship_test_frame(void)
{
    __asm__ volatile("");
}

/* A packed SegmentObject: an entry and a local span, both ended by the crash, each with the
   crash log whose stack the shipper fills in. */
static size_t segment_pack(uint8_t **out)
{
    Skywalking__V3__KeyStringValuePair kv[4];
    const char *kvs[4][2] = {{"event", "error"},
                             {"error.kind", "SIGSEGV"},
                             {"message", "fault address 0x0, si_code 1"},
                             {"stack", "@frames"}};
    Skywalking__V3__KeyStringValuePair *kvp[4];
    for (int i = 0; i < 4; i++) {
        skywalking__v3__key_string_value_pair__init(&kv[i]);
        kv[i].key = (char *)kvs[i][0];
        kv[i].value = (char *)kvs[i][1];
        kvp[i] = &kv[i];
    }
    Skywalking__V3__Log log = SKYWALKING__V3__LOG__INIT;
    log.time = 1700000000123;
    log.n_data = 4;
    log.data = kvp;
    Skywalking__V3__Log *logp = &log;
    Skywalking__V3__SpanObject spans[2];
    Skywalking__V3__SpanObject *spanp[2];
    const char *ops[2] = {"GET /shipped", "work"};
    for (int i = 0; i < 2; i++) {
        skywalking__v3__span_object__init(&spans[i]);
        spans[i].spanid = i;
        spans[i].parentspanid = i - 1;
        spans[i].starttime = 1700000000000;
        spans[i].endtime = 1700000000123;
        spans[i].operationname = (char *)ops[i];
        spans[i].spantype =
            i == 0 ? SKYWALKING__V3__SPAN_TYPE__Entry : SKYWALKING__V3__SPAN_TYPE__Local;
        spans[i].iserror = 1;
        spans[i].n_logs = 1;
        spans[i].logs = &logp;
        spanp[i] = &spans[i];
    }
    Skywalking__V3__SegmentObject so = SKYWALKING__V3__SEGMENT_OBJECT__INIT;
    so.traceid = "trace.1";
    so.tracesegmentid = "segment.1";
    so.service = "test-service";
    so.serviceinstance = "crashed-instance";
    so.n_spans = 2;
    so.spans = spanp;
    size_t n = skywalking__v3__segment_object__get_packed_size(&so);
    *out = malloc(n);
    skywalking__v3__segment_object__pack(&so, *out);
    return n;
}

/* Writes a recorded spool of `service` into the crash directory; returns its path. */
static char *spool_write(const char *service, const char *tag)
{
    static char path[512];
    size_t cap = 64 * 1024;
    uint8_t *buf = calloc(1, cap);
    sw__crash_header_t *h = (sw__crash_header_t *)(void *)buf;
    memcpy(h->magic, SW__CRASH_MAGIC, 8);
    h->version = SW__CRASH_VERSION;
    h->header_bytes = SW__CRASH_HEADER_BYTES;
    h->spool_bytes = SW__CRASH_SPOOL_BYTES;
    h->state = SW__CRASH_RECORDED;
    h->signo = SIGSEGV;
    h->si_code = 1;
    h->pid = 4242;
    h->tid = 4243;
    h->time_ms = 1700000000123;
    h->service_len = (uint32_t)strlen(service);
    memcpy(h->service, service, h->service_len);
    h->instance_len = 16;
    memcpy(h->instance, "crashed-instance", 16);
    uint8_t *body = buf + SW__CRASH_HEADER_BYTES, *p = body;
    Dl_info info;
    cr_assert(dladdr((void *)crash_ship_test_frame, &info) != 0);
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert_gt(n, 0);
    exe[n] = '\0';
    uintptr_t base = (uintptr_t)info.dli_fbase;
    p += crash_spool_put_module(p, base, base + (64u << 20), base, exe);
    h->module_count = 1;
    h->module_bytes = (uint32_t)(p - body);
    sw__crash_frame_t frames[SW__CRASH_FRAMES_MAX] = {
        {0, 0, (uintptr_t)crash_ship_test_frame - base}};
    memcpy(p, frames, sizeof frames);
    p += sizeof frames;
    h->frame_count = 1;
    uint8_t *seg;
    uint32_t len = (uint32_t)segment_pack(&seg), flags = SW__CRASH_SEG_CRASHING;
    memcpy(p, &len, 4);
    memcpy(p + 4, &flags, 4);
    memcpy(p + 8, seg, len);
    p += 8 + ((len + 7u) & ~7u);
    free(seg);
    h->segment_count = 1;
    h->body_bytes = (uint32_t)(p - body);
    crash_spool_checksum(buf);
    mkdir(crash_dir, 0700);
    snprintf(path, sizeof path, "%s/%s.%s%s", crash_dir, sw__crash_service_key(service), tag,
             SW__CRASH_SUFFIX);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(buf, 1, SW__CRASH_HEADER_BYTES + h->body_bytes, f),
                 SW__CRASH_HEADER_BYTES + h->body_bytes);
    fclose(f);
    free(buf);
    return path;
}

static const char *out;

static void setup(void)
{
    out = agent_test_path();
    snprintf(crash_dir, sizeof crash_dir, "%.100s.spools", out);
}

/* Starts and stops the agent (the shipping run); returns its crash counters. The accounting
   of agent_test_stop holds with the shipped segments counted as finished. */
static sw__crash_stats_t ship_run(void)
{
    sw__crash_stats_t before, after;
    sw__crash_stats(&before);
    agent_test_start(out, edit);
    sw__crash_stats(&after);
    (void)agent_test_stop();
    after.spools_shipped -= before.spools_shipped;
    after.segments_shipped -= before.segments_shipped;
    after.spools_dropped -= before.spools_dropped;
    return after;
}

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

TestSuite(crash_ship, .init = setup, .timeout = 60);

Test(crash_ship, sends_a_spool_with_its_frames_symbolized)
{
    char *path = strdup(spool_write("test-service", "1.a"));
    sw__crash_stats_t st = ship_run();
    cr_assert_eq(st.spools_shipped, 1);
    cr_assert_eq(st.segments_shipped, 1);
    cr_assert_eq(st.spools_dropped, 0);
    cr_assert(!exists(path), "the shipped spool is still there");
    decoded_segments_t segs = agent_test_read(out);
    cr_assert_eq(segs.count, 1);
    Skywalking__V3__SegmentObject *so = segs.items[0];
    cr_assert_str_eq(so->serviceinstance, "crashed-instance");
    cr_assert_str_eq(so->tracesegmentid, "segment.1");
    cr_assert_eq(so->n_spans, 2);
    cr_assert_str_eq(so->spans[0]->operationname, "GET /shipped");
    cr_assert(so->spans[1]->iserror);
    const char *stack = so->spans[1]->logs[0]->data[3]->value;
    cr_assert_str_eq(so->spans[1]->logs[0]->data[3]->key, "stack");
    cr_assert_not_null(strstr(stack, "#0 crash_ship_test_frame"), "stack: %s", stack);
    agent_test_free(&segs);
    free(path);
}

static void damage_and_ship(void (*how)(const char *path))
{
    char *path = strdup(spool_write("test-service", "2.b"));
    how(path);
    sw__crash_stats_t st = ship_run();
    cr_assert_eq(st.spools_dropped, 1);
    cr_assert_eq(st.segments_shipped, 0);
    cr_assert(!exists(path), "the damaged spool is still there");
    free(path);
}

static void flip(const char *path)
{
    int fd = open(path, O_RDWR);
    uint8_t b;
    cr_assert_eq(pread(fd, &b, 1, SW__CRASH_HEADER_BYTES + 40), 1);
    b ^= 1;
    cr_assert_eq(pwrite(fd, &b, 1, SW__CRASH_HEADER_BYTES + 40), 1);
    close(fd);
}

static void cut(const char *path)
{
    cr_assert_eq(truncate(path, SW__CRASH_HEADER_BYTES + 200), 0);
}

static void empty(const char *path)
{
    cr_assert_eq(truncate(path, 0), 0);
}

Test(crash_ship, a_flipped_byte_is_dropped)
{
    damage_and_ship(flip);
}

Test(crash_ship, a_truncated_spool_is_dropped)
{
    damage_and_ship(cut);
}

Test(crash_ship, an_empty_file_is_dropped)
{
    damage_and_ship(empty);
}

Test(crash_ship, another_services_spool_stays)
{
    /* Named with this service's key, but the header says another service: a hash collision
       is not enough to take it. */
    char *path = strdup(spool_write("other-service", "3.c"));
    char renamed[600];
    snprintf(renamed, sizeof renamed, "%s/%s.3.c%s", crash_dir,
             sw__crash_service_key("test-service"), SW__CRASH_SUFFIX);
    cr_assert_eq(rename(path, renamed), 0);
    sw__crash_stats_t st = ship_run();
    cr_assert_eq(st.spools_shipped + st.spools_dropped, 0);
    cr_assert(exists(renamed));
    unlink(renamed);
    free(path);
}

Test(crash_ship, a_locked_spool_stays)
{
    char *path = strdup(spool_write("test-service", "4.d"));
    int fd = open(path, O_RDONLY);
    cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
    sw__crash_stats_t st = ship_run();
    cr_assert_eq(st.spools_shipped + st.spools_dropped, 0);
    cr_assert(exists(path));
    close(fd);
    st = ship_run();
    cr_assert_eq(st.spools_shipped, 1);
    cr_assert(!exists(path));
    free(path);
}
