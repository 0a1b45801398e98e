/*
 * swtrace: segment files are written here with protobuf-c (the same encoding as the agent's file
 * reporter), then the real swtrace binary (SWTRACE_PATH) is run on them and its text and JSON
 * output are checked. The reader and joiner are also called directly through swtrace_core.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "swtrace.h"
#include "tracing.pb-c.h"

#ifndef SWTRACE_PATH
#error "SWTRACE_PATH must name the swtrace binary"
#endif

/* ---- building segments ------------------------------------------------------------------ */

#define MAX_SPANS 8
#define MAX_KV    4

typedef struct span_spec {
    int32_t id, parent;
    int64_t start, end;
    const char *op, *peer;
    int type, layer;
    bool error;
    const char *tag_k, *tag_v;         /* one tag, optional */
    const char *log_k, *log_v;         /* one log entry at `end`, optional */
    int ref_type;                      /* 0: no ref, else CROSS_PROCESS or CROSS_THREAD */
    const char *ref_seg, *ref_service; /* parent segment id, parent service */
    int32_t ref_span;
} span_spec_t;

/* Owns every protobuf-c struct of one segment (no heap: tests stay leak-free trivially). */
typedef struct seg_builder {
    Skywalking__V3__SegmentObject seg;
    Skywalking__V3__SpanObject spans[MAX_SPANS];
    Skywalking__V3__SpanObject *span_ptrs[MAX_SPANS];
    Skywalking__V3__SegmentReference refs[MAX_SPANS];
    Skywalking__V3__SegmentReference *ref_ptrs[MAX_SPANS];
    Skywalking__V3__KeyStringValuePair kv[MAX_SPANS][2];
    Skywalking__V3__KeyStringValuePair *tag_ptrs[MAX_SPANS][1];
    Skywalking__V3__KeyStringValuePair *log_kv_ptrs[MAX_SPANS][1];
    Skywalking__V3__Log logs[MAX_SPANS];
    Skywalking__V3__Log *log_ptrs[MAX_SPANS];
} seg_builder_t;

static void seg_build(seg_builder_t *b, const char *trace, const char *id, const char *service,
                      const span_spec_t *specs, size_t n)
{
    memset(b, 0, sizeof(*b));
    skywalking__v3__segment_object__init(&b->seg);
    b->seg.traceid = (char *)trace;
    b->seg.tracesegmentid = (char *)id;
    b->seg.service = (char *)service;
    b->seg.serviceinstance = "instance-1";
    for (size_t i = 0; i < n; i++) {
        const span_spec_t *sp = &specs[i];
        Skywalking__V3__SpanObject *s = &b->spans[i];
        skywalking__v3__span_object__init(s);
        s->spanid = sp->id;
        s->parentspanid = sp->parent;
        s->starttime = sp->start;
        s->endtime = sp->end;
        s->operationname = (char *)sp->op;
        s->peer = (char *)(sp->peer ? sp->peer : "");
        s->spantype = sp->type;
        s->spanlayer = sp->layer;
        s->iserror = sp->error;
        if (sp->tag_k) {
            skywalking__v3__key_string_value_pair__init(&b->kv[i][0]);
            b->kv[i][0].key = (char *)sp->tag_k;
            b->kv[i][0].value = (char *)sp->tag_v;
            b->tag_ptrs[i][0] = &b->kv[i][0];
            s->n_tags = 1;
            s->tags = b->tag_ptrs[i];
        }
        if (sp->log_k) {
            skywalking__v3__key_string_value_pair__init(&b->kv[i][1]);
            b->kv[i][1].key = (char *)sp->log_k;
            b->kv[i][1].value = (char *)sp->log_v;
            b->log_kv_ptrs[i][0] = &b->kv[i][1];
            skywalking__v3__log__init(&b->logs[i]);
            b->logs[i].time = sp->end;
            b->logs[i].n_data = 1;
            b->logs[i].data = b->log_kv_ptrs[i];
            b->log_ptrs[i] = &b->logs[i];
            s->n_logs = 1;
            s->logs = &b->log_ptrs[i];
        }
        if (sp->ref_type != 0) {
            Skywalking__V3__SegmentReference *r = &b->refs[i];
            skywalking__v3__segment_reference__init(r);
            r->reftype = sp->ref_type - 1;
            r->traceid = (char *)trace;
            r->parenttracesegmentid = (char *)sp->ref_seg;
            r->parentspanid = sp->ref_span;
            r->parentservice = (char *)(sp->ref_service ? sp->ref_service : "");
            r->parentendpoint = "/index";
            b->ref_ptrs[i] = r;
            s->n_refs = 1;
            s->refs = &b->ref_ptrs[i];
        }
        b->span_ptrs[i] = s;
    }
    b->seg.n_spans = n;
    b->seg.spans = b->span_ptrs;
}

/* Appends one record (varint length + bytes) to f; returns the record's byte offset. */
static long record_write(FILE *f, const Skywalking__V3__SegmentObject *seg)
{
    long offset = ftell(f);
    size_t len = skywalking__v3__segment_object__get_packed_size(seg);
    uint8_t *buf = malloc(len + 1);
    cr_assert_not_null(buf);
    skywalking__v3__segment_object__pack(seg, buf);
    size_t v = len;
    do {
        fputc((int)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)), f);
        v >>= 7;
    } while (v != 0);
    cr_assert_eq(fwrite(buf, 1, len, f), len);
    free(buf);
    return offset;
}

#define SPAN(...)     ((span_spec_t){__VA_ARGS__})
#define CROSS_PROCESS 1 /* ref_type is the RefType + 1; 0 means no ref */
#define CROSS_THREAD  2

/* The reference scenario: trace-1 has a frontend segment A (entry 0, exit 1), a backend
 * segment B joined CrossProcess under A/1 (error, log), a worker segment C joined CrossThread
 * under A/0; trace-2 has one orphan segment D whose parent is not in the file. */
static seg_builder_t seg_a, seg_b, seg_c, seg_d;

static void scenario_build(void)
{
    span_spec_t a[] = {
        SPAN(.id = 1, .parent = 0, .start = 1000, .end = 1040, .op = "GET /backend",
             .peer = "10.0.0.2:8080", .type = 1, .layer = 3, .tag_k = "http.method",
             .tag_v = "GET"),
        SPAN(.id = 0, .parent = -1, .start = 990, .end = 1100, .op = "/index", .type = 0,
             .layer = 3),
    };
    span_spec_t b[] = {
        SPAN(.id = 0, .parent = -1, .start = 1005, .end = 1035, .op = "/backend", .type = 0,
             .layer = 3, .error = true, .log_k = "message", .log_v = "boom \"q\"\n\x1b",
             .ref_type = CROSS_PROCESS, .ref_seg = "seg-A", .ref_span = 1,
             .ref_service = "frontend"),
        SPAN(.id = 1, .parent = 0, .start = 1010, .end = 1020, .op = "SELECT", .type = 1,
             .layer = 1, .peer = "db:5432"),
    };
    span_spec_t c[] = {
        SPAN(.id = 0, .parent = -1, .start = 1050, .end = 1090, .op = "worker", .type = 2,
             .ref_type = CROSS_THREAD, .ref_seg = "seg-A", .ref_span = 0),
    };
    span_spec_t d[] = {
        SPAN(.id = 0, .parent = -1, .start = 500, .end = 501, .op = "lonely-op", .type = 0,
             .ref_type = CROSS_PROCESS, .ref_seg = "seg-missing", .ref_span = 3),
    };
    seg_build(&seg_a, "trace-1", "seg-A", "frontend", a, 2);
    seg_build(&seg_b, "trace-1", "seg-B", "backend", b, 2);
    seg_build(&seg_c, "trace-1", "seg-C", "frontend", c, 1);
    seg_build(&seg_d, "trace-2", "seg-D", "lonely", d, 1);
}

/* ---- running swtrace ---------------------------------------------------------------------- */

static char tmpdir[64];

static void dir_setup(void)
{
    strcpy(tmpdir, "/tmp/test_swtrace.XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp failed");
    scenario_build();
}

static void dir_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

static FILE *file_create(const char *name, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s", path);
    return f;
}

/* Runs swtrace with args (shell words); stdout (+ stderr when merge) into *out (malloc'ed).
 * Returns the exit status, or -1 if it did not exit normally (a crash). */
static int swtrace_run(const char *args, bool merge, char **out)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' %s %s", SWTRACE_PATH, args, merge ? "2>&1" : "2>/dev/null");
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen failed");
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
            cr_assert_not_null(buf);
        }
    }
    buf[len] = '\0';
    int status = pclose(p);
    *out = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Returns a malloc'ed copy of the first line of text containing needle (fails if none). */
static char *line_find(const char *text, const char *needle)
{
    const char *hit = strstr(text, needle);
    cr_assert_not_null(hit, "no line with '%s' in:\n%s", needle, text);
    const char *begin = hit;
    while (begin > text && begin[-1] != '\n') {
        begin--;
    }
    const char *end = strchr(hit, '\n');
    size_t n = end ? (size_t)(end - begin) : strlen(begin);
    char *line = strndup(begin, n);
    cr_assert_not_null(line);
    return line;
}

/* Column where the service name of a span line starts (its tree indentation). */
static size_t label_column(const char *text, const char *needle)
{
    char *line = line_find(text, needle);
    const char *ms = strstr(line, " ms ");
    cr_assert_not_null(ms, "not a span line: %s", line);
    size_t col = (size_t)(ms + 4 - line);
    while (line[col] == ' ') {
        col++;
    }
    free(line);
    return col;
}

static size_t count_of(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

static void scenario_write(char *path, size_t len)
{
    FILE *f = file_create("segments.bin", path, len);
    /* Children before parents and traces interleaved: swtrace must not rely on file order. */
    record_write(f, &seg_c.seg);
    record_write(f, &seg_b.seg);
    record_write(f, &seg_d.seg);
    record_write(f, &seg_a.seg);
    cr_assert_eq(fclose(f), 0);
}

TestSuite(swtrace, .init = dir_setup, .fini = dir_teardown);

Test(swtrace, text_shows_joined_tree_with_waterfall)
{
    char path[256], args[300], *out;
    scenario_write(path, sizeof(path));
    snprintf(args, sizeof(args), "--no-color '%s'", path);
    cr_assert_eq(swtrace_run(args, true, &out), 0, "output:\n%s", out);

    /* Traces by start time: trace-2 (500 ms) first. */
    const char *t1 = strstr(out, "trace trace-1"), *t2 = strstr(out, "trace trace-2");
    cr_assert(t1 && t2 && t2 < t1, "traces missing or out of order:\n%s", out);
    /* Tree order and indentation: /index > GET /backend > /backend > SELECT; worker under
     * /index. */
    const char *p_index = strstr(out, "frontend  /index"), *p_exit = strstr(out, "GET /backend");
    const char *p_back = strstr(out, "backend  /backend"), *p_sel = strstr(out, "SELECT");
    const char *p_work = strstr(out, "worker");
    cr_assert(p_index && p_exit && p_back && p_sel && p_work, "%s", out);
    cr_assert(p_index < p_exit && p_exit < p_back && p_back < p_sel && p_sel < p_work, "%s", out);
    size_t c_index = label_column(out, "frontend  /index");
    cr_assert_eq(label_column(out, "GET /backend"), c_index + 2);
    cr_assert_eq(label_column(out, "backend  /backend"), c_index + 4);
    cr_assert_eq(label_column(out, "SELECT"), c_index + 6);
    cr_assert_eq(label_column(out, "worker"), c_index + 2);

    char *line = line_find(out, "backend  /backend");
    cr_assert_not_null(strstr(line, "Entry/Http"), "%s", line);
    cr_assert_not_null(strstr(line, "ERROR"), "%s", line);
    cr_assert_not_null(strstr(line, "<- CrossProcess from frontend"), "%s", line);
    cr_assert_not_null(strstr(line, "30 ms"), "%s", line);
    free(line);
    line = line_find(out, "GET /backend");
    cr_assert_not_null(strstr(line, "Exit/Http  peer=10.0.0.2:8080"), "%s", line);
    /* The exit span runs 1000..1040 on the axis 990..1100: 40 columns * 10/110 = column 3. */
    cr_assert_eq(strncmp(line, "|   ====", 8), 0, "bar misplaced: %s", line);
    free(line);
    line = line_find(out, "worker");
    cr_assert_not_null(strstr(line, "<- CrossThread from frontend"), "%s", line);
    cr_assert_not_null(strstr(line, "Local/Unknown"), "%s", line);
    free(line);
    line = line_find(out, "lonely-op");
    cr_assert_not_null(strstr(line, "orphan: parent segment seg-missing"), "%s", line);
    free(line);

    cr_assert_not_null(strstr(out, "tags: http.method=GET"), "%s", out);
    /* Control bytes from the file are escaped, never sent to the terminal. */
    cr_assert_not_null(strstr(out, "message=boom \"q\"\\x0a\\x1b"), "%s", out);
    cr_assert_null(strchr(out, '\x1b'), "raw escape byte in output");
    cr_assert_not_null(strstr(out, "summary: traces=2 segments=4 spans=6 errors=1"), "%s", out);
    free(out);
}

Test(swtrace, json_has_all_fields_and_parent_links)
{
    char path[256], args[300], *out;
    scenario_write(path, sizeof(path));
    snprintf(args, sizeof(args), "--json '%s'", path);
    cr_assert_eq(swtrace_run(args, false, &out), 0, "output:\n%s", out);
    cr_assert_eq(out[0], '[', "%s", out);
    cr_assert_eq(count_of(out, "\"segmentCount\":"), 2);
    cr_assert_eq(count_of(out, "\"traceSegmentId\":"), 4);
    cr_assert_eq(count_of(out, "\"spanId\":"), 6);
    cr_assert_not_null(strstr(out, "\"traceSegmentId\":\"seg-B\",\"service\":\"backend\""));
    cr_assert_not_null(strstr(out, "\"parentSegmentId\":\"seg-A\",\"parentSpanId\":1,"
                                   "\"refType\":\"CrossProcess\""),
                       "%s", out);
    cr_assert_not_null(strstr(out, "\"parentSegmentId\":\"seg-A\",\"parentSpanId\":0,"
                                   "\"refType\":\"CrossThread\""),
                       "%s", out);
    cr_assert_not_null(strstr(out, "\"note\":\"orphan: parent segment not in input\""));
    cr_assert_not_null(strstr(out, "\"depth\":2,\"startTime\":1005,\"endTime\":1035,"
                                   "\"durationMs\":30,\"operationName\":\"/backend\""),
                       "%s", out);
    cr_assert_not_null(strstr(out, "\"isError\":true"));
    cr_assert_not_null(strstr(out, "\"tags\":[{\"key\":\"http.method\",\"value\":\"GET\"}]"));
    cr_assert_not_null(strstr(out, "\"logs\":[{\"time\":1035,\"data\":[{\"key\":\"message\","
                                   "\"value\":\"boom \\\"q\\\"\\n\\u001b\"}]}]"),
                       "%s", out);
    /* Parent before child: seg-A's record precedes seg-B and seg-C in trace-1. */
    const char *a = strstr(out, "\"traceSegmentId\":\"seg-A\"");
    cr_assert(a && a < strstr(out, "\"traceSegmentId\":\"seg-B\"") &&
              a < strstr(out, "\"traceSegmentId\":\"seg-C\""));
    free(out);
}

Test(swtrace, segments_join_across_files)
{
    char p1[256], p2[256], args[600], *out;
    FILE *f = file_create("one.bin", p1, sizeof(p1));
    record_write(f, &seg_b.seg);
    cr_assert_eq(fclose(f), 0);
    f = file_create("two.bin", p2, sizeof(p2));
    record_write(f, &seg_a.seg);
    cr_assert_eq(fclose(f), 0);
    snprintf(args, sizeof(args), "--json '%s' '%s'", p1, p2);
    cr_assert_eq(swtrace_run(args, false, &out), 0);
    cr_assert_eq(count_of(out, "\"segmentCount\":2"), 1, "%s", out);
    cr_assert_not_null(strstr(out, "\"parentSegmentId\":\"seg-A\""), "%s", out);
    cr_assert_not_null(strstr(out, "two.bin\",\"offset\":0"), "%s", out);
    free(out);
}

Test(swtrace, truncated_file_names_file_and_offset)
{
    char path[256], args[300], expect[64], *out;
    FILE *f = file_create("cut.bin", path, sizeof(path));
    record_write(f, &seg_a.seg);
    long second = record_write(f, &seg_b.seg);
    long size = ftell(f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(truncate(path, size - 3), 0);
    snprintf(args, sizeof(args), "'%s'", path);
    cr_assert_eq(swtrace_run(args, true, &out), 2, "output:\n%s", out);
    snprintf(expect, sizeof(expect), "byte offset %ld", second);
    cr_assert_not_null(strstr(out, expect), "want '%s' in: %s", expect, out);
    cr_assert_not_null(strstr(out, "cut.bin"), "%s", out);
    cr_assert_not_null(strstr(out, "truncated"), "%s", out);
    free(out);

    /* Cut inside the length prefix itself. */
    f = file_create("cut2.bin", path, sizeof(path));
    fputc(0x80, f);
    cr_assert_eq(fclose(f), 0);
    snprintf(args, sizeof(args), "'%s'", path);
    cr_assert_eq(swtrace_run(args, true, &out), 2, "output:\n%s", out);
    cr_assert_not_null(strstr(out, "byte offset 0"), "%s", out);
    free(out);
}

Test(swtrace, foreign_and_random_files_exit_2)
{
    char path[256], args[300], *out;
    FILE *f = file_create("foreign.bin", path, sizeof(path));
    record_write(f, &seg_a.seg);
    long bad = ftell(f);
    /* A well-framed record whose bytes are not a protobuf message. */
    const uint8_t junk[] = {5, 0xff, 0xff, 0xff, 0xff, 0xff};
    fwrite(junk, 1, sizeof(junk), f);
    cr_assert_eq(fclose(f), 0);
    snprintf(args, sizeof(args), "'%s'", path);
    cr_assert_eq(swtrace_run(args, true, &out), 2, "output:\n%s", out);
    char expect[80];
    snprintf(expect, sizeof(expect), "at byte offset %ld is not a SkyWalking SegmentObject", bad);
    cr_assert_not_null(strstr(out, expect), "want '%s' in: %s", expect, out);
    free(out);

    /* Random bytes (fixed seed, so the test is repeatable). */
    f = file_create("random.bin", path, sizeof(path));
    uint32_t x = 2463534242u;
    for (int i = 0; i < 8192; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        fputc((int)(x & 0xff), f);
    }
    cr_assert_eq(fclose(f), 0);
    snprintf(args, sizeof(args), "'%s'", path);
    cr_assert_eq(swtrace_run(args, true, &out), 2, "output:\n%s", out);
    cr_assert_not_null(strstr(out, "random.bin"), "%s", out);
    free(out);

    /* A length far above the cap is refused without allocating it. */
    f = file_create("huge.bin", path, sizeof(path));
    const uint8_t huge[] = {0x80, 0x80, 0x80, 0x80, 0x04, 1, 2, 3}; /* 1 GiB */
    fwrite(huge, 1, sizeof(huge), f);
    cr_assert_eq(fclose(f), 0);
    snprintf(args, sizeof(args), "'%s'", path);
    cr_assert_eq(swtrace_run(args, true, &out), 2, "output:\n%s", out);
    cr_assert_not_null(strstr(out, "1073741824 bytes, above the"), "%s", out);
    free(out);

    snprintf(args, sizeof(args), "'%s/does-not-exist'", tmpdir);
    cr_assert_eq(swtrace_run(args, true, &out), 2, "output:\n%s", out);
    cr_assert_not_null(strstr(out, "does-not-exist: cannot open"), "%s", out);
    free(out);
}

Test(swtrace, empty_file_is_zero_traces)
{
    char path[256], args[300], *out;
    FILE *f = file_create("empty.bin", path, sizeof(path));
    cr_assert_eq(fclose(f), 0);
    snprintf(args, sizeof(args), "--no-color '%s'", path);
    cr_assert_eq(swtrace_run(args, true, &out), 0, "output:\n%s", out);
    cr_assert_not_null(strstr(out, "summary: traces=0 segments=0 spans=0 errors=0"), "%s", out);
    free(out);
    snprintf(args, sizeof(args), "--json '%s'", path);
    cr_assert_eq(swtrace_run(args, false, &out), 0);
    cr_assert_str_eq(out, "[\n]\n");
    free(out);
}

Test(swtrace, usage_errors_exit_1)
{
    char *out;
    cr_assert_eq(swtrace_run("", true, &out), 1);
    cr_assert_not_null(strstr(out, "usage: swtrace"), "%s", out);
    free(out);
    cr_assert_eq(swtrace_run("--bogus x", true, &out), 1);
    cr_assert_not_null(strstr(out, "unknown option '--bogus'"), "%s", out);
    free(out);
}

/* ---- the reader and joiner, called directly ------------------------------------------------ */

static size_t buffer_put(uint8_t *buf, size_t pos, const Skywalking__V3__SegmentObject *seg)
{
    size_t len = skywalking__v3__segment_object__get_packed_size(seg);
    size_t v = len;
    do {
        buf[pos++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v != 0);
    skywalking__v3__segment_object__pack(seg, buf + pos);
    return pos + len;
}

Test(swtrace, cyclic_refs_are_shown_once_as_root)
{
    span_spec_t x[] = {SPAN(.id = 0, .parent = -1, .start = 10, .end = 20, .op = "x",
                            .ref_type = CROSS_THREAD, .ref_seg = "seg-Y", .ref_span = 0)};
    span_spec_t y[] = {SPAN(.id = 0, .parent = -1, .start = 12, .end = 18, .op = "y",
                            .ref_type = CROSS_THREAD, .ref_seg = "seg-X", .ref_span = 0)};
    seg_builder_t bx, by;
    seg_build(&bx, "trace-c", "seg-X", "svc", x, 1);
    seg_build(&by, "trace-c", "seg-Y", "svc", y, 1);
    uint8_t buf[1024];
    size_t len = buffer_put(buf, 0, &bx.seg);
    len = buffer_put(buf, len, &by.seg);

    sw__trace_set_t set = {0};
    char err[256];
    cr_assert_eq(sw__trace_set_read_buffer(&set, buf, len, "mem", err, sizeof(err)), 0, "%s", err);
    sw__trace_forest_t forest;
    cr_assert_eq(sw__trace_forest_build(&forest, &set), 0);
    cr_assert_eq(forest.n_traces, 1);
    cr_assert_eq(forest.traces[0].n_spans, 2, "every span exactly once");
    cr_assert_eq(forest.traces[0].rows[0].note, SW__TRACE_NOTE_CYCLE);
    cr_assert_eq(forest.traces[0].rows[0].depth, 0);
    cr_assert_eq(forest.traces[0].rows[1].depth, 1);
    sw__trace_forest_destroy(&forest);
    sw__trace_set_destroy(&set);
}

Test(swtrace, reader_keeps_segments_before_a_bad_record)
{
    uint8_t buf[2048];
    size_t len = buffer_put(buf, 0, &seg_a.seg);
    size_t second = len;
    len = buffer_put(buf, len, &seg_b.seg);
    sw__trace_set_t set = {0};
    char err[256];
    int rc = sw__trace_set_read_buffer(&set, buf, len - 1, "mem", err, sizeof(err));
    cr_assert_eq(rc, SW__TRACE_ERR_TRUNCATED, "rc=%d %s", rc, err);
    cr_assert_eq(set.n_segs, 1);
    cr_assert_eq(set.segs[0].offset, 0);
    char expect[64];
    snprintf(expect, sizeof(expect), "record at byte offset %zu", second);
    cr_assert_not_null(strstr(err, expect), "%s", err);
    cr_assert_str_eq(sw__trace_strerror(rc), "the file ends inside a record");
    sw__trace_set_destroy(&set);
}
