/*
 * test_preload_cyg.c - -finstrument-functions spans (pl_cyg): the span tree, the include and
 * exclude filters by name and by file, the minimum duration, and a bad filter setting.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload/pl_support.h"

#define WAIT_MS 60000

/* Runs pl_cyg with `extra` settings; returns its segments (the caller frees them). */
static pl_segments_t cyg_run_args(const char *tag, char *const extra[], char *err_out,
                                  size_t err_len, char *mode)
{
    char dir[256], file[512], errp[512];
    pl_tmpdir(dir, sizeof dir, tag);
    snprintf(file, sizeof file, "SW_REPORTER_FILE_PATH=%s/cyg.bin", dir);
    snprintf(errp, sizeof errp, "%s/err", dir);
    char *env[12] = {file, "SW_AGENT_NAME=pl-cyg"};
    size_t n = 2;
    for (size_t i = 0; extra[i] != NULL && n < 11; i++) {
        env[n++] = extra[i];
    }
    env[n] = NULL;
    char *argv[] = {PL_CYG, mode, NULL};
    cr_assert_eq(pl_run(argv, env, NULL, errp, WAIT_MS), 0, "pl_cyg failed");
    if (err_out != NULL) {
        char *text = pl_slurp(errp, NULL);
        snprintf(err_out, err_len, "%s", text != NULL ? text : "");
        free(text);
    }
    pl_segments_t s = {0};
    snprintf(file, sizeof file, "%s/cyg.bin", dir);
    cr_assert_geq(pl_segments_read(&s, file), 0, "corrupt segment file");
    return s;
}

static pl_segments_t cyg_run(const char *tag, char *const extra[], char *err_out, size_t err_len)
{
    return cyg_run_args(tag, extra, err_out, err_len, NULL);
}

static size_t count_op(const pl_segment_t *seg, const char *op)
{
    size_t n = 0;
    for (size_t i = 0; i < seg->n_spans; i++) {
        n += strcmp(seg->spans[i]->operationname, op) == 0;
    }
    return n;
}

static const pl_span_t *span_named(const pl_segment_t *seg, const char *op)
{
    for (size_t i = 0; i < seg->n_spans; i++) {
        if (strcmp(seg->spans[i]->operationname, op) == 0) {
            return seg->spans[i];
        }
    }
    return NULL;
}

Test(preload_cyg, every_call_without_filters)
{
    char *extra[] = {NULL};
    pl_segments_t s = cyg_run("all", extra, NULL, 0);
    cr_assert_eq(s.n, 1, "one segment: cyg_outer and everything under it");
    const pl_segment_t *seg = s.segs[0];
    cr_assert_eq(seg->n_spans, 105, "outer, a, b, 100 tiny, skip_me, 1 tiny: got %zu",
                 seg->n_spans);
    const pl_span_t *outer = seg->spans[0];
    cr_assert_str_eq(outer->operationname, "cyg_outer");
    cr_assert_eq(outer->parentspanid, -1);
    cr_assert_eq(outer->spantype, SKYWALKING__V3__SPAN_TYPE__Local);
    const pl_span_t *b = span_named(seg, "cyg_middle_b");
    cr_assert_not_null(b);
    cr_assert_eq(span_named(seg, "cyg_middle_a")->parentspanid, 0);
    cr_assert_eq(b->parentspanid, 0);
    cr_assert_eq(span_named(seg, "cyg_tiny")->parentspanid, b->spanid);
    cr_assert_eq(count_op(seg, "cyg_tiny"), 101);
    cr_assert_eq(span_named(seg, "skip_me")->parentspanid, 0);
    pl_segments_free(&s);
}

Test(preload_cyg, minimum_duration_and_exclude_by_name)
{
    /* 100 ms: the middle functions sleep 250 ms, the tiny ones add a number; a tiny function
       would have to lose the CPU for 100 ms to be kept. */
    char *extra[] = {"SW_CYG_MIN_DURATION_US=100000", "SW_CYG_EXCLUDE=skip_*", NULL};
    pl_segments_t s = cyg_run("mindur", extra, NULL, 0);
    cr_assert_eq(s.n, 1);
    const pl_segment_t *seg = s.segs[0];
    cr_assert_eq(seg->n_spans, 3, "only outer, middle_a and middle_b last >= 100 ms; got %zu",
                 seg->n_spans);
    cr_assert_str_eq(seg->spans[0]->operationname, "cyg_outer");
    cr_assert_eq(span_named(seg, "cyg_middle_a")->parentspanid, 0);
    cr_assert_eq(span_named(seg, "cyg_middle_b")->parentspanid, 0);
    cr_assert_eq(count_op(seg, "cyg_tiny") + count_op(seg, "skip_me"), 0);
    pl_segments_free(&s);
}

Test(preload_cyg, include_by_name)
{
    char *extra[] = {"SW_CYG_INCLUDE=cyg_outer, cyg_middle_?", "SW_CYG_EXCLUDE=cyg_middle_b", NULL};
    pl_segments_t s = cyg_run("include", extra, NULL, 0);
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s.segs[0]->n_spans, 2);
    cr_assert_str_eq(s.segs[0]->spans[0]->operationname, "cyg_outer");
    cr_assert_str_eq(s.segs[0]->spans[1]->operationname, "cyg_middle_a");
    pl_segments_free(&s);
}

Test(preload_cyg, exclude_by_file_traces_nothing)
{
    char *extra[] = {"SW_CYG_EXCLUDE_FILE=pl_cy?", NULL};
    pl_segments_t s = cyg_run("xfile", extra, NULL, 0);
    cr_assert_eq(s.n, 0, "every function lives in pl_cyg: nothing may be traced");
    pl_segments_free(&s);
    char *only_other[] = {"SW_CYG_INCLUDE_FILE=/nonexistent/*", NULL};
    s = cyg_run("ifile", only_other, NULL, 0);
    cr_assert_eq(s.n, 0);
    pl_segments_free(&s);
}

Test(preload_cyg, a_short_root_leaves_no_segment)
{
    char *extra[] = {"SW_CYG_MIN_DURATION_US=3600000000", NULL};
    pl_segments_t s = cyg_run("long", extra, NULL, 0);
    cr_assert_eq(s.n, 0, "nothing lasts an hour: no span, no segment");
    pl_segments_free(&s);
}

Test(preload_cyg, bad_setting_is_reported_and_the_program_runs)
{
    char err[2048];
    char *extra[] = {"SW_CYG_MIN_DURATION_US=soon", NULL};
    pl_segments_t s = cyg_run("bad", extra, err, sizeof err);
    cr_assert_eq(s.n, 0);
    cr_assert_not_null(strstr(err, "SW_CYG_MIN_DURATION_US"), "stderr: %s", err);
    pl_segments_free(&s);
}

Test(preload_cyg, threads_trace_independently)
{
    char *extra[] = {"SW_CYG_MIN_DURATION_US=1000", "SW_CYG_EXCLUDE=skip_*", NULL};
    pl_segments_t s = cyg_run_args("threads", extra, NULL, 0, "threads");
    cr_assert_eq(s.n, 4, "one segment per thread, got %zu", s.n);
    for (size_t i = 0; i < s.n; i++) {
        cr_assert_eq(s.segs[i]->n_spans, 3);
        cr_assert_str_eq(s.segs[i]->spans[0]->operationname, "cyg_outer");
    }
    pl_segments_free(&s);
}
