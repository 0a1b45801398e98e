/*
 * test_sampling.c - N traces per 3-second window, the upstream sample flag, ignore_suffix, and
 * what an unsampled trace does (nothing, but balanced).
 */
#include <time.h>

#include "segment/sampler.h"
#include "propagation/sw8.h"
#include "test_agent_support.h"

Test(sampler, n_per_window_with_explicit_clock)
{
    sw__sampler_t s;
    sw__sampler_init(&s, 2);
    cr_expect(sw__sampler_try(&s, 3000));
    cr_expect(sw__sampler_try(&s, 3001));
    cr_expect(!sw__sampler_try(&s, 4000), "third in the window");
    cr_expect(!sw__sampler_try(&s, 5999));
    cr_expect(sw__sampler_try(&s, 6000), "a new window");
    sw__sampler_force(&s, 6001); /* upstream-forced: counted, never refused */
    cr_expect(!sw__sampler_try(&s, 6002), "the forced one used the window's second slot");
    sw__sampler_init(&s, -1);
    for (int i = 0; i < 1000; i++) {
        cr_assert(sw__sampler_try(&s, 1));
    }
    sw__sampler_init(&s, 0);
    cr_expect(sw__sampler_try(&s, 1), "0 means sample everything, like SkyWalking");
}

static int64_t window_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000) / 3000;
}

static void sample_2(sw_config_t *cfg)
{
    cfg->sample_n_per_3_secs = 2;
}

Test(sampling, at_most_n_traces_per_window_and_unsampled_traces_are_no_ops)
{
    const char *path = agent_test_path();
    agent_test_start(path, sample_2);
    int64_t w0 = window_now();
    int not_traced = 0;
    for (int i = 0; i < 10; i++) {
        sw_entry_span_begin("req", NULL);
        sw_local_span_begin("inner");
        int rc = sw_span_tag("k", "v");
        char sw8[SW_SW8_MAX];
        sw_exit_span_begin("out", "peer");
        int inj = sw_inject(sw8, sizeof sw8, NULL, 0, NULL, 0);
        sw_span_end();
        sw_span_end();
        sw_span_end();
        if (rc == SW_ENOTRACED) {
            not_traced++;
            cr_expect_eq(inj, SW_ENOTRACED);
            cr_expect_str_eq(sw8, "");
        }
    }
    int64_t w1 = window_now();
    sw_stats_t st = agent_test_stop();
    uint64_t allowed = 2 * (uint64_t)(w1 - w0 + 1);
    cr_expect_leq(st.segments_finished, allowed);
    cr_expect_geq(st.segments_finished, 2);
    cr_expect_eq(st.segments_finished + st.traces_sampled_out, 10);
    cr_expect_eq((uint64_t)not_traced, st.traces_sampled_out);
    decoded_segments_t d = agent_test_read(path);
    cr_expect_eq(d.count, st.segments_finished);
    for (size_t i = 0; i < d.count; i++) {
        cr_expect_eq(d.items[i]->n_spans, 3, "sampled traces are complete");
    }
    agent_test_free(&d);
}

static void sample_1(sw_config_t *cfg)
{
    cfg->sample_n_per_3_secs = 1;
}

static void upstream_header(int sample, char *buf, size_t len)
{
    sw__sw8_t up = {sample, 0, "up.trace", "up.segment", "up", "up-1", "/", "me:1"};
    cr_assert_gt(sw__sw8_encode(&up, buf, len), 0);
}

Test(sampling, upstream_sample_flag_is_honored)
{
    agent_test_start(agent_test_path(), sample_1);
    char yes[SW_SW8_MAX], no[SW_SW8_MAX];
    upstream_header(1, yes, sizeof yes);
    upstream_header(0, no, sizeof no);
    for (int i = 0; i < 5; i++) {
        sw_entry_span_begin("forced", yes); /* always sampled, limit or not */
        cr_expect_eq(sw_span_tag("k", "v"), 0, "upstream said sample");
        sw_span_end();
        sw_entry_span_begin("refused", no);
        cr_expect_eq(sw_span_tag("k", "v"), SW_ENOTRACED, "upstream said do not sample");
        sw_span_end();
    }
    sw_entry_span_begin("garbage", "1-not-a-valid-header");
    sw_span_end();
    sw_stats_t st = agent_test_stop();
    cr_expect_geq(st.segments_finished, 5);
    cr_expect_geq(st.traces_sampled_out, 5);
    cr_expect_eq(st.sw8_invalid, 1);
}

static void ignore_static(sw_config_t *cfg)
{
    snprintf(cfg->ignore_suffix, sizeof cfg->ignore_suffix, ".jpg, .css");
}

Test(sampling, ignore_suffix_skips_matching_trace_starts)
{
    const char *path = agent_test_path();
    agent_test_start(path, ignore_static);
    sw_entry_span_begin("GET /logo.jpg", NULL);
    sw_local_span_begin("decode");
    cr_expect_eq(sw_span_tag("k", "v"), SW_ENOTRACED);
    sw_span_end();
    sw_span_end();
    sw_entry_span_begin("GET /site.css", NULL);
    sw_span_end();
    sw_entry_span_begin("GET /index.html", NULL);
    sw_local_span_begin("load.css"); /* only the trace start is matched */
    sw_span_end();
    sw_span_end();
    sw_stats_t st = agent_test_stop();
    cr_expect_eq(st.traces_ignored, 2);
    cr_expect_eq(st.segments_finished, 1);
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 1);
    cr_expect_str_eq(d.items[0]->spans[0]->operationname, "GET /index.html");
    cr_expect_eq(d.items[0]->n_spans, 2);
    agent_test_free(&d);
}
