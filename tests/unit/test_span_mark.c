/*
 * test_span_mark.c - first spans set aside between two calls of one request and put back
 * (instrument/span_mark.h: sw__span_stash_marked / sw__span_resume_marked), as the
 * libmicrohttpd layer uses them: only untouched first spans, only under their own key, one per
 * thread, nothing reported or lost when a set-aside span is never resumed.
 */
#include <pthread.h>

#include "instrument/span_mark.h"
#include "test_agent_support.h"

static int key_a, key_b, key_c;

/* An entry span with no incoming headers, as the libmicrohttpd layer begins one. */
static void entry_begin(const char *op, sw__span_mark_t *mark)
{
    sw__span_begin_entry_marked(op, NULL, NULL, NULL, NULL, NULL, mark);
}

static const Skywalking__V3__SegmentObject *segment_named(const decoded_segments_t *d,
                                                          const char *op)
{
    for (size_t i = 0; i < d->count; i++) {
        if (strcmp(d->items[i]->spans[0]->operationname, op) == 0) {
            return d->items[i];
        }
    }
    cr_assert_fail("no segment begins with %s", op);
    return NULL;
}

Test(span_mark, a_set_aside_span_is_resumed_under_its_key_only)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    sw__span_mark_t mark;
    entry_begin("/request", &mark);
    cr_assert_eq(mark.span_id, 0);
    cr_assert(sw__span_stash_marked(&mark, &key_a, &key_b));
    cr_assert_eq(sw_span_tag("k", "v"), SW_ENOSPAN, "the set-aside span is off the stack");

    sw_local_span_begin("/between"); /* a segment of its own meanwhile */
    sw_span_end();

    cr_assert_not(sw__span_resume_marked(&key_a, &key_c, &mark), "another key");
    cr_assert(sw__span_resume_marked(&key_a, &key_b, &mark));
    cr_assert_eq(mark.span_id, 0);
    cr_assert_not(sw__span_resume_marked(&key_a, &key_b, &mark), "resumed once only");
    cr_assert_eq(sw_span_tag("resumed", "yes"), 0, "the span is active again");
    sw_span_end();

    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_finished, 2);
    cr_assert_eq(st.segments_reported, 2);
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 2);
    const Skywalking__V3__SegmentObject *req = segment_named(&d, "/request");
    const Skywalking__V3__SegmentObject *between = segment_named(&d, "/between");
    cr_assert_eq(req->n_spans, 1);
    cr_assert_eq(req->spans[0]->n_tags, 1);
    cr_assert_str_eq(req->spans[0]->tags[0]->key, "resumed");
    cr_assert_leq(req->spans[0]->starttime, between->spans[0]->starttime,
                  "the span keeps the time of its begin");
    cr_assert_str_neq(req->tracesegmentid, between->tracesegmentid);
    agent_test_free(&d);
}

Test(span_mark, touched_or_inner_spans_are_not_set_aside)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    sw__span_mark_t mark;
    entry_begin("/tagged", &mark);
    cr_assert_eq(sw_span_tag("k", "v"), 0);
    cr_assert_not(sw__span_stash_marked(&mark, &key_a, &key_b), "a tag was attached");
    sw_span_end();

    sw_local_span_begin("/outer");
    entry_begin("/inner", &mark);
    cr_assert_eq(mark.span_id, 1);
    cr_assert_not(sw__span_stash_marked(&mark, &key_a, &key_b), "not the segment's first span");
    cr_assert(sw__span_discard_marked(&mark));
    sw_span_end();

    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_reported, 2);
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(segment_named(&d, "/outer")->n_spans, 1, "the inner span was removed");
    agent_test_free(&d);
}

Test(span_mark, a_newer_stash_gives_the_older_back_unreported)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    sw__span_mark_t mark;
    entry_begin("/first", &mark);
    cr_assert(sw__span_stash_marked(&mark, &key_a, &key_b));
    entry_begin("/second", &mark);
    cr_assert(sw__span_stash_marked(&mark, &key_c, &key_b));
    cr_assert_not(sw__span_resume_marked(&key_a, &key_b, &mark), "the older one is gone");
    cr_assert(sw__span_resume_marked(&key_c, &key_b, &mark));
    sw_span_end();
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_finished, 1, "a span never resumed is not a finished segment");
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 1);
    cr_assert_str_eq(d.items[0]->spans[0]->operationname, "/second");
    agent_test_free(&d);
}

static void *stash_and_exit(void *arg)
{
    (void)arg;
    sw__span_mark_t mark;
    entry_begin("/left", &mark);
    cr_assert(sw__span_stash_marked(&mark, &key_a, &key_b));
    return NULL;
}

static void one_block(sw_config_t *cfg)
{
    cfg->max_segments = 1;
}

/* The exiting thread gives its set-aside block back to the pool: with room for one block only,
   the next trace gets it (a block kept would make that trace an unrecorded, dropped one). */
Test(span_mark, a_stash_left_at_thread_exit_is_given_back)
{
    const char *path = agent_test_path();
    agent_test_start(path, one_block);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, stash_and_exit, NULL), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    sw_entry_span_begin("/after", NULL);
    sw_span_end();
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_finished, 1);
    cr_assert_eq(st.segments_dropped, 0, "the exited thread kept its block");
    cr_assert_eq(st.segments_reported, 1);
}
