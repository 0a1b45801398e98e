/*
 * test_crash.c - the crash flight recorder end to end (agent/src/crash, docs/CRASH.md).
 *
 * Each test runs crash_child (same folder) as a child process that crashes inside a traced
 * request, checks how the child died (the signal the program would have died by without the
 * recorder), reads the spool the recorder left with the agent's spool reader and decodes its
 * segments, then runs crash_child again in "ship" mode, the next start of the same service,
 * and checks what the reporter delivered: the file reporter's output here, the gRPC test
 * collector's records in test_crash_grpc. Every child runs under a bounded wait: a recorder
 * that deadlocks (say, on the test allocator's lock in the malloc case) fails the test.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crash/crash_spool.h"
#include "tracing.pb-c.h"

#ifndef CRASH_CHILD
#error "CRASH_CHILD (path of crash_child) must be defined by the build"
#endif
#ifndef SWTRACE
#error "SWTRACE (path of swtrace) must be defined by the build"
#endif

#define CHILD_WAIT_MS 30000

extern char **environ;

typedef struct fixture {
    char dir[64];
    char crash_dir[96];
    char out[96];
    char log[96];
} fixture_t;

static fixture_t fx;

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void setup(void)
{
    snprintf(fx.dir, sizeof fx.dir, "/tmp/sw-crash-XXXXXX");
    cr_assert_not_null(mkdtemp(fx.dir));
    snprintf(fx.crash_dir, sizeof fx.crash_dir, "%s/spools", fx.dir);
    snprintf(fx.out, sizeof fx.out, "%s/segments.bin", fx.dir);
    snprintf(fx.log, sizeof fx.log, "%s/child.txt", fx.dir);
}

static void rm_rf(const char *path)
{
    DIR *d = opendir(path);
    if (d != NULL) {
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                char p[512];
                snprintf(p, sizeof p, "%s/%s", path, e->d_name);
                rm_rf(p);
            }
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void teardown(void)
{
    rm_rf(fx.dir);
}

/* Runs crash_child MODE with the agent's settings for this fixture plus `extra` ("K=V", NULL
   terminated; NULL: none); its stdout and stderr go to fx.log. Returns the wait status. */
static int child_run(const char *mode, const char *const *extra)
{
    char *envp[256];
    int n = 0;
    for (char **e = environ; *e != NULL && n < 200; e++) {
        if (strncmp(*e, "SW_", 3) != 0) {
            envp[n++] = *e;
        }
    }
    static char set[8][1200];
    snprintf(set[0], sizeof set[0], "SW_AGENT_CRASH_DIR=%s", fx.crash_dir);
    snprintf(set[1], sizeof set[1], "SW_REPORTER_FILE_PATH=%s", fx.out);
    snprintf(set[2], sizeof set[2], "SW_AGENT_NAME=crashsvc");
    snprintf(set[3], sizeof set[3], "SW_AGENT_INSTANCE_NAME=inst-%s", mode);
    snprintf(set[4], sizeof set[4], "SW_METER_REPORT_INTERVAL=0");
    snprintf(set[5], sizeof set[5], "SW_AGENT_CDS_INTERVAL=0");
    /* The extras first: getenv takes the first of two entries with one name. */
    for (int i = 0; extra != NULL && extra[i] != NULL && n < 248; i++) {
        envp[n++] = (char *)extra[i];
    }
    for (int i = 0; i < 6; i++) {
        envp[n++] = set[i];
    }
    envp[n] = NULL;
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(fx.log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (chdir(fx.dir) != 0) { /* where a core file lands (core_pattern "core") */
            _exit(126);
        }
        dup2(fd, 1);
        dup2(fd, 2);
        char *argv[] = {(char *)CRASH_CHILD, (char *)mode, NULL};
        execve(CRASH_CHILD, argv, envp);
        _exit(127);
    }
    uint64_t deadline = mono_ms() + CHILD_WAIT_MS;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (mono_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            cr_assert_fail("crash_child %s did not end within %d ms (a recorder that blocks?)",
                           mode, CHILD_WAIT_MS);
        }
        struct timespec ms = {0, 2000000};
        nanosleep(&ms, NULL);
    }
    return status;
}

static char *file_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        *len = 0;
        return NULL;
    }
    char *buf = calloc(1, 4u << 20);
    *len = fread(buf, 1, (4u << 20) - 1, f);
    fclose(f);
    return buf;
}

/* The spool files in the crash directory: how many, and the path of the last one seen. */
static int spools(char *path, size_t cap)
{
    DIR *d = opendir(fx.crash_dir);
    int n = 0;
    if (d == NULL) {
        return 0;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name);
        if (l > 8 && strcmp(e->d_name + l - 8, SW__CRASH_SUFFIX) == 0) {
            n++;
            if (path != NULL) {
                snprintf(path, cap, "%s/%s", fx.crash_dir, e->d_name);
            }
        }
    }
    closedir(d);
    return n;
}

static void expect_signal(int status, int sig, const char *mode)
{
    size_t n;
    char *log = file_text(fx.log, &n);
    cr_assert(WIFSIGNALED(status), "crash_child %s: not killed by a signal (status 0x%x): %s", mode,
              status, log ? log : "");
    cr_assert_eq(WTERMSIG(status), sig, "crash_child %s died by signal %d, not %d: %s", mode,
                 WTERMSIG(status), sig, log ? log : "");
    free(log);
}

static const Skywalking__V3__KeyStringValuePair *log_kv(const Skywalking__V3__Log *l,
                                                        const char *key)
{
    for (size_t i = 0; i < l->n_data; i++) {
        if (strcmp(l->data[i]->key, key) == 0) {
            return l->data[i];
        }
    }
    return NULL;
}

/* Checks a crashed request's segment: both spans ended as errors with the crash log of
   `signame`; `stack` is what the log's stack must contain (NULL: no stack entry). */
static void check_crashed_segment(const Skywalking__V3__SegmentObject *so, const char *signame,
                                  const char *stack)
{
    cr_assert_eq(so->n_spans, 2, "spans: %zu", so->n_spans);
    cr_assert_str_eq(so->spans[0]->operationname, "GET /crash");
    cr_assert_str_eq(so->spans[1]->operationname, "handler");
    cr_assert_str_eq(so->service, "crashsvc");
    for (size_t i = 0; i < 2; i++) {
        const Skywalking__V3__SpanObject *sp = so->spans[i];
        cr_assert(sp->iserror, "span %zu not marked as an error", i);
        cr_assert_geq(sp->endtime, sp->starttime);
        cr_assert_eq(sp->n_logs, 1, "span %zu logs: %zu", i, sp->n_logs);
        const Skywalking__V3__Log *l = sp->logs[0];
        cr_assert_str_eq(log_kv(l, "event")->value, "error");
        cr_assert_str_eq(log_kv(l, "error.kind")->value, signame);
        cr_assert_not_null(strstr(log_kv(l, "message")->value, "si_code"));
        if (stack != NULL) {
            cr_assert_not_null(log_kv(l, "stack"));
            cr_assert_not_null(strstr(log_kv(l, "stack")->value, stack), "stack: %s",
                               log_kv(l, "stack")->value);
        }
    }
    cr_assert_eq(so->spans[0]->n_tags, 1);
    cr_assert_str_eq(so->spans[0]->tags[0]->key, "mode");
}

/* Loads and parses the only spool; *buf holds its bytes (the caller frees both). */
static sw__crash_view_t *spool_load(uint8_t **buf)
{
    char path[512];
    cr_assert_eq(spools(path, sizeof path), 1, "spools in %s: %d", fx.crash_dir, spools(NULL, 0));
    size_t len;
    *buf = (uint8_t *)file_text(path, &len);
    sw__crash_view_t *v = malloc(sizeof *v);
    int rc = sw__crash_spool_parse(*buf, len, v);
    cr_assert_eq(rc, SW__CRASH_OK, "spool %s: %s", path, sw__crash_spool_strerror(rc));
    return v;
}

/* The child's crash and its spool; returns the crashing thread's segment (NULL: none). */
static Skywalking__V3__SegmentObject *crash_and_check(const char *mode, int sig,
                                                      const char *const *extra,
                                                      sw__crash_view_t **vout, uint8_t **buf)
{
    expect_signal(child_run(mode, extra), sig, mode);
    sw__crash_view_t *v = spool_load(buf);
    cr_assert_eq(v->header->signo, sig);
    cr_assert_str_eq(sw__crash_signal_name(sig), sw__crash_signal_name(v->header->signo));
    cr_assert_gt(v->frame_count, 0, "no frames recorded");
    cr_assert_gt(v->module_count, 0, "no module table");
    Skywalking__V3__SegmentObject *so = NULL;
    for (uint32_t i = 0; i < v->segment_count; i++) {
        if (v->segments[i].flags & SW__CRASH_SEG_CRASHING) {
            so = skywalking__v3__segment_object__unpack(NULL, v->segments[i].len,
                                                        v->segments[i].data);
            cr_assert_not_null(so, "segment %u does not decode", i);
        }
    }
    *vout = v;
    return so;
}

/* The segments the file reporter wrote (varint length + SegmentObject, repeated). */
static size_t out_segments(Skywalking__V3__SegmentObject **segs, size_t cap)
{
    size_t len, at = 0, n = 0;
    uint8_t *b = (uint8_t *)file_text(fx.out, &len);
    while (b != NULL && at < len && n < cap) {
        uint64_t l = 0;
        for (int s = 0; at < len; s += 7) {
            uint8_t c = b[at++];
            l |= (uint64_t)(c & 0x7f) << s;
            if ((c & 0x80) == 0) {
                break;
            }
        }
        cr_assert_leq(l, len - at);
        segs[n] = skywalking__v3__segment_object__unpack(NULL, l, b + at);
        cr_assert_not_null(segs[n]);
        n++;
        at += l;
    }
    free(b);
    return n;
}

static char *ship(const char *const *extra)
{
    int st = child_run("ship", extra);
    size_t n;
    char *log = file_text(fx.log, &n);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ship child: status 0x%x: %s", st, log);
    return log;
}

/* A crash of `mode`: the spool, then the next start ships it through the file reporter. */
static void crash_then_ship(const char *mode, int sig, const char *signame)
{
    sw__crash_view_t *v;
    uint8_t *buf;
    Skywalking__V3__SegmentObject *so = crash_and_check(mode, sig, NULL, &v, &buf);
    cr_assert_not_null(so, "%s: no segment of the crashing thread", mode);
    check_crashed_segment(so, signame, "@frames");
    skywalking__v3__segment_object__free_unpacked(so, NULL);
    free(v);
    free(buf);
    unlink(fx.out);

    char *log = ship(NULL);
    cr_assert_not_null(strstr(log, "shipped=1 dropped=0 spools=1"), "ship: %s", log);
    free(log);
    cr_assert_eq(spools(NULL, 0), 0, "the spool was not removed");
    Skywalking__V3__SegmentObject *segs[16];
    size_t n = out_segments(segs, 16);
    cr_assert_eq(n, 1, "segments delivered: %zu", n);
    /* The crashed process's instance; the frames symbolized (the child's binary is still
       there, with its DWARF lines). */
    char inst[64];
    snprintf(inst, sizeof inst, "inst-%s", mode);
    cr_assert_str_eq(segs[0]->serviceinstance, inst);
    check_crashed_segment(segs[0], signame, "#0 ");
    const char *stack = segs[0]->spans[1]->logs[0]->data[3]->value;
    cr_assert_not_null(strstr(stack, "(crash_child.c:"), "stack not symbolized: %s", stack);
    cr_assert_null(strstr(stack, "@frames"));
    skywalking__v3__segment_object__free_unpacked(segs[0], NULL);
}

TestSuite(crash, .init = setup, .fini = teardown, .timeout = 120);

Test(crash, null_dereference)
{
    crash_then_ship("null", SIGSEGV, "SIGSEGV");
}

Test(crash, abort)
{
    crash_then_ship("abort", SIGABRT, "SIGABRT");
}

/* A sent SIGSEGV (no fault to run again): the recorder re-raises it under the default action
   once it recorded (without that the child would go on and exit 42). */
Test(crash, raised_signal_is_delivered_again)
{
    crash_then_ship("raise", SIGSEGV, "SIGSEGV");
}

/* The fault is inside the agent's own span path, with a span counted but not filled in: the
   recorder reads the half-made segment with its bounds checks and still writes a segment
   that decodes, with the request's spans ended as errors. */
Test(crash, inside_the_agent)
{
    sw__crash_view_t *v;
    uint8_t *buf;
    Skywalking__V3__SegmentObject *so = crash_and_check("agent", SIGSEGV, NULL, &v, &buf);
    cr_assert_not_null(so);
    cr_assert_geq(so->n_spans, 2);
    cr_assert_str_eq(so->spans[0]->operationname, "GET /crash");
    cr_assert_str_eq(so->spans[1]->operationname, "handler");
    cr_assert(so->spans[0]->iserror && so->spans[1]->iserror);
    skywalking__v3__segment_object__free_unpacked(so, NULL);
    free(v);
    free(buf);
    char *log = ship(NULL);
    cr_assert_not_null(strstr(log, "shipped=1 dropped=0 spools=1"), "ship: %s", log);
    free(log);
}

Test(crash, stack_overflow)
{
    crash_then_ship("overflow", SIGSEGV, "SIGSEGV");
}

Test(crash, inside_malloc)
{
    crash_then_ship("malloc", SIGSEGV, "SIGSEGV");
}

/* Another thread runs span after span (inside the agent's span path) while the main thread
   crashes: the recorder neither waits for it nor trips over it; the crashing thread's
   segment is complete, and a segment of the busy thread, when one was caught consistent,
   ended as an error too. */
Test(crash, while_another_thread_is_in_the_span_path)
{
    sw__crash_view_t *v;
    uint8_t *buf;
    Skywalking__V3__SegmentObject *so = crash_and_check("busy", SIGSEGV, NULL, &v, &buf);
    cr_assert_not_null(so);
    check_crashed_segment(so, "SIGSEGV", "@frames");
    skywalking__v3__segment_object__free_unpacked(so, NULL);
    for (uint32_t i = 0; i < v->segment_count; i++) {
        if ((v->segments[i].flags & SW__CRASH_SEG_CRASHING) != 0) {
            continue;
        }
        Skywalking__V3__SegmentObject *other =
            skywalking__v3__segment_object__unpack(NULL, v->segments[i].len, v->segments[i].data);
        cr_assert_not_null(other, "the busy thread's segment does not decode");
        cr_assert_str_eq(other->spans[0]->operationname, "busy/request");
        skywalking__v3__segment_object__free_unpacked(other, NULL);
    }
    free(v);
    free(buf);
    char *log = ship(NULL);
    cr_assert_not_null(strstr(log, "dropped=0 spools=1"), "ship: %s", log);
    free(log);
}

/* A thread that never traced crashes: it has no segment and no agent alternate stack; the
   main thread's open request is still recorded (as another thread's). */
Test(crash, in_a_thread_without_a_span)
{
    sw__crash_view_t *v;
    uint8_t *buf;
    Skywalking__V3__SegmentObject *so = crash_and_check("nospan", SIGSEGV, NULL, &v, &buf);
    cr_assert_null(so, "the crashing thread had no span, yet a segment is flagged as its");
    cr_assert_eq(v->segment_count, 1, "segments: %u", v->segment_count);
    Skywalking__V3__SegmentObject *main_seg =
        skywalking__v3__segment_object__unpack(NULL, v->segments[0].len, v->segments[0].data);
    check_crashed_segment(main_seg, "SIGSEGV", NULL);
    cr_assert_null(log_kv(main_seg->spans[1]->logs[0], "stack"), "another thread's frames");
    skywalking__v3__segment_object__free_unpacked(main_seg, NULL);
    free(v);
    free(buf);
}

/* A SIGSEGV handler the program installed before sw_init still runs, after the recorder,
   and the process still dies by SIGSEGV. */
Test(crash, keeps_the_programs_own_handler)
{
    sw__crash_view_t *v;
    uint8_t *buf;
    Skywalking__V3__SegmentObject *so = crash_and_check("handler", SIGSEGV, NULL, &v, &buf);
    cr_assert_not_null(so);
    skywalking__v3__segment_object__free_unpacked(so, NULL);
    free(v);
    free(buf);
    size_t n;
    char *log = file_text(fx.log, &n);
    cr_assert_not_null(strstr(log, "own handler ran"), "child output: %s", log);
    free(log);
}

/* SW_AGENT_CRASH_RECORDER=false: the same death, and nothing written. */
Test(crash, off_writes_nothing)
{
    const char *const off[] = {"SW_AGENT_CRASH_RECORDER=false", NULL};
    expect_signal(child_run("null", off), SIGSEGV, "null");
    cr_assert_eq(spools(NULL, 0), 0, "a spool was written with the recorder off");
    expect_signal(child_run("abort", off), SIGABRT, "abort");
    cr_assert_eq(spools(NULL, 0), 0);
}

/* Damages the only spool with `how`, then ships: the spool is dropped (counted, removed),
   nothing is delivered, the shipping process lives on. */
static void damaged(void (*how)(const char *path))
{
    expect_signal(child_run("null", NULL), SIGSEGV, "null");
    char path[512];
    cr_assert_eq(spools(path, sizeof path), 1);
    how(path);
    unlink(fx.out);
    char *log = ship(NULL);
    cr_assert_not_null(strstr(log, "shipped=0 dropped=1 spools=0"), "ship: %s", log);
    cr_assert_not_null(strstr(log, "rejected"), "no warning: %s", log);
    free(log);
    cr_assert_eq(spools(NULL, 0), 0, "the damaged spool was not removed");
    Skywalking__V3__SegmentObject *segs[4];
    cr_assert_eq(out_segments(segs, 4), 0, "a damaged spool delivered segments");
}

static void flip_a_body_byte(const char *path)
{
    int fd = open(path, O_RDWR);
    uint8_t b;
    cr_assert_eq(pread(fd, &b, 1, SW__CRASH_HEADER_BYTES + 5000), 1);
    b ^= 0x40;
    cr_assert_eq(pwrite(fd, &b, 1, SW__CRASH_HEADER_BYTES + 5000), 1);
    close(fd);
}

static void truncate_it(const char *path)
{
    cr_assert_eq(truncate(path, SW__CRASH_HEADER_BYTES + 100), 0);
}

static void overwrite_with_garbage(const char *path)
{
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < 4096; i++) {
        fputc(i * 7 + 3, f);
    }
    fclose(f);
}

static void huge_lengths(const char *path)
{
    int fd = open(path, O_RDWR);
    uint32_t big = 0xfffffff0u;
    cr_assert_eq(pwrite(fd, &big, 4, offsetof(sw__crash_header_t, segment_count)), 4);
    cr_assert_eq(pwrite(fd, &big, 4, offsetof(sw__crash_header_t, module_count)), 4);
    close(fd);
}

Test(crash, corrupted_spool_is_dropped)
{
    damaged(flip_a_body_byte);
}

Test(crash, truncated_spool_is_dropped)
{
    damaged(truncate_it);
}

Test(crash, garbage_spool_is_dropped)
{
    damaged(overwrite_with_garbage);
}

Test(crash, hostile_lengths_are_dropped)
{
    damaged(huge_lengths);
}

/* The spool of one service is never shipped by another; its own service takes it later. */
Test(crash, another_service_leaves_the_spool)
{
    expect_signal(child_run("null", NULL), SIGSEGV, "null");
    const char *const other[] = {"SW_AGENT_NAME=otherservice", NULL};
    unlink(fx.out);
    char *log = ship(other);
    cr_assert_not_null(strstr(log, "shipped=0 dropped=0 spools=0"), "ship: %s", log);
    free(log);
    cr_assert_eq(spools(NULL, 0), 1, "another service's start touched the spool");
    Skywalking__V3__SegmentObject *segs[4];
    cr_assert_eq(out_segments(segs, 4), 0);
    log = ship(NULL);
    cr_assert_not_null(strstr(log, "shipped=1 dropped=0 spools=1"), "ship: %s", log);
    free(log);
    cr_assert_eq(spools(NULL, 0), 0);
}

/* A live process's spool is not taken: the owner holds its lock. Here the "live process" is
   a sibling that keeps the lock of a copied spool. */
Test(crash, a_living_process_spool_is_not_taken)
{
    expect_signal(child_run("null", NULL), SIGSEGV, "null");
    char path[512];
    cr_assert_eq(spools(path, sizeof path), 1);
    int fd = open(path, O_RDONLY);
    cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
    char *log = ship(NULL);
    cr_assert_not_null(strstr(log, "shipped=0 dropped=0 spools=0"), "ship: %s", log);
    free(log);
    cr_assert_eq(spools(NULL, 0), 1);
    close(fd);
}

/* swtrace --crash reads the spools of a directory directly: the crashed request, its frames,
   the crash tag; a damaged spool makes it fail (exit 2) with the reason. */
Test(crash, swtrace_reads_the_spool)
{
    expect_signal(child_run("null", NULL), SIGSEGV, "null");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s --no-color --crash %s > %s 2>&1", SWTRACE, fx.crash_dir, fx.log);
    int st = system(cmd);
    size_t n;
    char *out = file_text(fx.log, &n);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "swtrace: status 0x%x: %s", st, out);
    cr_assert_not_null(strstr(out, "SIGSEGV at 0x0 (si_code 1)"), "%s", out);
    cr_assert_not_null(strstr(out, "GET /crash"), "%s", out);
    cr_assert_not_null(strstr(out, "crash=SIGSEGV in process"), "%s", out);
    cr_assert_not_null(strstr(out, "(the crashing thread)"), "%s", out);
    cr_assert_not_null(strstr(out, "stack=#0 crash_child+0x"), "%s", out);
    cr_assert_not_null(strstr(out, "errors=2"), "%s", out);
    free(out);
    char path[512];
    cr_assert_eq(spools(path, sizeof path), 1);
    flip_a_body_byte(path);
    st = system(cmd);
    out = file_text(fx.log, &n);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "swtrace: status 0x%x: %s", st, out);
    cr_assert_not_null(strstr(out, "crash spool rejected: damaged"), "%s", out);
    free(out);
}

/* The core dump is the program's: with a core limit the child dumps core (the WCOREDUMP bit)
   with the recorder on, as it does with the recorder off. Only where core_pattern names a
   plain file (the kernel's default "core"), which lands in the fixture's directory and is
   removed with it; elsewhere (a pipe to a crash collector) this test is skipped. */
Test(crash, the_core_dump_is_kept)
{
    char pattern[256] = "";
    FILE *f = fopen("/proc/sys/kernel/core_pattern", "r");
    if (f != NULL) {
        if (fgets(pattern, sizeof pattern, f) == NULL) {
            pattern[0] = '\0';
        }
        fclose(f);
    }
    if (pattern[0] == '|' || strchr(pattern, '/') != NULL || pattern[0] == '\0') {
        cr_skip_test("core_pattern is %s: cores do not land in the working directory", pattern);
    }
    const char *on[] = {"CRASH_CORE_LIMIT=1048576", NULL};
    const char *off[] = {"CRASH_CORE_LIMIT=1048576", "SW_AGENT_CRASH_RECORDER=false", NULL};
    int st = child_run("null", on);
    expect_signal(st, SIGSEGV, "null");
    cr_assert(WCOREDUMP(st), "no core dump with the recorder on (status 0x%x)", st);
    cr_assert_eq(spools(NULL, 0), 1);
    st = child_run("abort", off);
    expect_signal(st, SIGABRT, "abort");
    cr_assert(WCOREDUMP(st), "no core dump with the recorder off (status 0x%x)", st);
    st = child_run("abort", on);
    expect_signal(st, SIGABRT, "abort");
    cr_assert(WCOREDUMP(st), "no core dump after abort with the recorder on (status 0x%x)", st);
}
