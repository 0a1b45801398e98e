/*
 * test_span_async.c - exit spans that outlive their call (instrument/span_async.h): detached
 * spans ending in any order in one segment, a segment parked until its last detached span
 * ends, an end attempted on another thread, unrecorded spans, and spans begun late.
 */
#include <pthread.h>
#include <unistd.h>

#include "instrument/span_async.h"
#include "test_agent_support.h"

static void async_end_tagged(sw__span_async_t *a, const char *value)
{
    sw__span_async_saved_t s;
    cr_assert(sw__span_async_resume(a, &s));
    cr_assert_eq(sw_span_tag("which", value), 0);
    cr_assert(sw__span_async_end(a, &s));
}

static const char *tag_of(const Skywalking__V3__SpanObject *sp, const char *key)
{
    for (size_t i = 0; i < sp->n_tags; i++) {
        if (strcmp(sp->tags[i]->key, key) == 0) {
            return sp->tags[i]->value;
        }
    }
    return NULL;
}

Test(span_async, detached_spans_end_in_any_order_in_one_segment)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    sw__span_mark_t mark;
    sw__span_async_t a[3];
    sw_entry_span_begin("root", NULL); /* 0 */
    for (int i = 0; i < 3; i++) {
        char op[16];
        snprintf(op, sizeof op, "x%d", i);
        sw__span_async_begin_exit(op, "peer:1", &a[i], &mark); /* 1, 2, 3 */
        cr_assert_eq(mark.span_id, i + 1);
        sw__span_async_detach(&a[i]);
    }
    sw_local_span_begin("between"); /* 4 <- 0: the detached spans are off the stack */
    async_end_tagged(&a[1], "one"); /* while another span is active */
    cr_assert_eq(sw_span_tag("on", "between"), 0, "the thread's own span is active again");
    sw_span_end();
    async_end_tagged(&a[2], "two");
    async_end_tagged(&a[0], "zero");
    sw_span_end();
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_reported, 1);
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 1);
    const Skywalking__V3__SegmentObject *seg = d.items[0];
    cr_assert_eq(seg->n_spans, 5);
    const char *which[] = {NULL, "zero", "one", "two", NULL};
    for (size_t i = 1; i < 4; i++) {
        cr_assert_eq(seg->spans[i]->parentspanid, 0);
        cr_assert_eq(seg->spans[i]->spantype, SKYWALKING__V3__SPAN_TYPE__Exit);
        cr_assert_str_eq(tag_of(seg->spans[i], "which"), which[i]);
    }
    cr_assert_eq(seg->spans[4]->parentspanid, 0);
    cr_assert_str_eq(tag_of(seg->spans[4], "on"), "between");
    agent_test_free(&d);
}

Test(span_async, a_segment_waits_for_its_last_detached_span)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    sw__span_mark_t mark;
    sw__span_async_t a;
    sw_entry_span_begin("first", NULL);
    sw__span_async_begin_exit("late", "peer:1", &a, &mark);
    sw__span_async_detach(&a);
    sw_span_end(); /* the stack is empty, but `late` is open: parked, not reported */
    sw_stats_t st;
    sw_stats(&st);
    cr_assert_eq(st.segments_finished, 0, "a parked segment is not finished yet");
    sw_entry_span_begin("second", NULL); /* a new segment, not a second root in the first */
    async_end_tagged(&a, "late");        /* reports the parked segment */
    sw_span_tag("still", "second");
    sw_span_end();
    st = agent_test_stop();
    cr_assert_eq(st.segments_reported, 2);
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 2);
    const Skywalking__V3__SegmentObject *first = d.items[0], *second = d.items[1];
    cr_assert_str_eq(first->spans[0]->operationname, "first");
    cr_assert_eq(first->n_spans, 2);
    cr_assert_str_eq(tag_of(first->spans[1], "which"), "late");
    cr_assert_eq(second->n_spans, 1);
    cr_assert_str_eq(tag_of(second->spans[0], "still"), "second");
    agent_test_free(&d);
}

Test(span_async, a_detached_root_is_reported_when_it_ends)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    sw__span_mark_t mark;
    sw__span_async_t a;
    sw__span_async_begin_exit("alone", "peer:1", &a, &mark);
    cr_assert_eq(mark.span_id, 0);
    sw__span_async_detach(&a);
    cr_assert_eq(sw_span_tag("k", "v"), SW_ENOSPAN, "nothing is active on the thread");
    async_end_tagged(&a, "alone");
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_reported, 1);
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 1);
    cr_assert_eq(d.items[0]->n_spans, 1);
    cr_assert_str_eq(tag_of(d.items[0]->spans[0], "which"), "alone");
    agent_test_free(&d);
}

static void *end_elsewhere(void *arg)
{
    sw__span_async_t *a = arg;
    sw__span_async_saved_t s;
    bool resumed = sw__span_async_resume(a, &s);
    bool ended = sw__span_async_end(a, &s);
    return (void *)(uintptr_t)(resumed || ended);
}

Test(span_async, another_thread_cannot_end_it)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    sw__span_mark_t mark;
    sw__span_async_t a;
    sw_entry_span_begin("root", NULL);
    sw__span_async_begin_exit("x", "peer:1", &a, &mark);
    sw__span_async_detach(&a);
    pthread_t t;
    void *touched;
    cr_assert_eq(pthread_create(&t, NULL, end_elsewhere, &a), 0);
    pthread_join(t, &touched);
    cr_assert_null(touched, "another thread resumed or ended the span");
    cr_assert_not_null(a.segment, "the span is still open");
    async_end_tagged(&a, "owner");
    sw_span_end();
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_reported, 1);
}

static void sample_one(sw_config_t *cfg)
{
    cfg->sample_n_per_3_secs = 1;
}

Test(span_async, unrecorded_spans_balance_and_cannot_be_resumed)
{
    const char *path = agent_test_path();
    agent_test_start(path, sample_one);
    sw_entry_span_begin("sampled", NULL); /* takes the one sample of this 3 s window */
    sw_span_end();
    sw__span_mark_t mark;
    sw__span_async_t a;
    sw__span_async_begin_exit("unsampled", "peer:1", &a, &mark);
    cr_assert_null(a.segment);
    sw__span_async_detach(&a); /* ends the no-op span */
    sw__span_async_saved_t s;
    cr_assert_not(sw__span_async_resume(&a, &s));
    cr_assert(sw__span_async_end(&a, &s));
    sw_entry_span_begin("after", NULL);
    sw_span_end();
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_reported, 1, "only the sampled trace, and nothing left open");
}

Test(span_async, a_span_begun_late_starts_at_the_given_time_but_not_before_its_parent)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    int64_t before = sw__span_clock_ms();
    usleep(20000);
    sw_entry_span_begin("root", NULL);
    sw__span_mark_t mark;
    sw__span_begin_exit_since("early", "peer:1", before - 1000, &mark); /* clamped */
    sw_span_end();
    int64_t parent_start = 0;
    usleep(20000);
    int64_t since = sw__span_clock_ms() - 10;
    sw__span_begin_exit_since("late", "peer:1", since, &mark);
    sw_span_end();
    sw_span_end();
    agent_test_stop();
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 1);
    const Skywalking__V3__SegmentObject *seg = d.items[0];
    parent_start = seg->spans[0]->starttime;
    cr_assert_eq(seg->spans[1]->starttime, parent_start, "not before its parent");
    cr_assert_eq(seg->spans[2]->starttime, since);
    cr_assert_geq(seg->spans[2]->endtime, since + 10);
    agent_test_free(&d);
}
