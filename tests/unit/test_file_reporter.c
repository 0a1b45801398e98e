/*
 * test_file_reporter.c - segments written by the file reporter, decoded with protobuf-c and
 * compared field by field with what the test recorded.
 */
#include <fcntl.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "propagation/correlation.h"
#include "propagation/sw8.h"
#include "test_agent_support.h"
#include "test_wait.h"

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void assert_id_shape(const char *id)
{
    regex_t re;
    cr_assert_eq(regcomp(&re, "^[0-9a-f]{32}\\.[0-9]+\\.[0-9]+$", REG_EXTENDED | REG_NOSUB), 0);
    cr_expect_eq(regexec(&re, id, 0, NULL, 0), 0, "id '%s' is not <uuid>.<tid>.<seq>", id);
    regfree(&re);
}

static void assert_kv(const Skywalking__V3__KeyStringValuePair *kv, const char *k, const char *v)
{
    cr_expect_str_eq(kv->key, k);
    if (v != NULL) {
        cr_expect_str_eq(kv->value, v);
    }
}

static void *worker_continue(void *arg)
{
    sw_local_span_begin("worker");
    cr_expect_eq(sw_continue(arg), 0);
    sw_span_end();
    return NULL;
}

/* The upstream sw8 / correlation this test pretends to receive. */
static const sw__sw8_t upstream = {
    .sample = 1,
    .parent_span_id = 3,
    .trace_id = "upstream-trace.1.2",
    .parent_segment_id = "upstream-segment.1.2",
    .parent_service = "gateway",
    .parent_instance = "gateway-1",
    .parent_endpoint = "POST /checkout",
    .address = "orders:8080",
};

/* Records the two segments the field test checks; returns the outgoing sw8 of the exit span. */
static void record_segments(char *out_sw8, size_t out_len, int64_t *t0, int64_t *t1)
{
    char sw8[SW_SW8_MAX], corr[256], x[32];
    cr_assert_gt(sw__sw8_encode(&upstream, sw8, sizeof sw8), 0);
    sw_correlation_t c = {0};
    cr_assert_eq(sw__correlation_put(&c, "tenant", "acme"), 0);
    cr_assert_gt(sw__correlation_encode(&c, corr, sizeof corr), 0);
    *t0 = wall_ms();
    snprintf(x, sizeof x, "1-%lld", (long long)*t0);

    sw_entry_span_begin_headers("GET /orders", sw8, corr, x);
    cr_assert_eq(sw_span_set_component(5001), 0);
    cr_assert_eq(sw_span_set_layer(SW_LAYER_HTTP), 0);
    cr_assert_eq(sw_span_tag("a", "1"), 0);
    cr_assert_eq(sw_span_tag("b", "2"), 0);
    sw_kv_t log[] = {{"event", "boom"}, {"stack", "frame0"}};
    cr_assert_eq(sw_span_log(log, 2), 0);
    cr_assert_eq(sw_span_set_error(true), 0);

    sw_exit_span_begin("SELECT", "db:5432");
    cr_assert_eq(sw_span_set_layer(SW_LAYER_DATABASE), 0);
    cr_assert_eq(sw_span_set_component(22), 0);
    cr_assert_eq(sw_span_tag("db.statement", "SELECT 1"), 0);
    char ocorr[SW_CORRELATION_HEADER_MAX], ox[SW_SW8_X_MAX];
    cr_assert_eq(sw_inject(out_sw8, out_len, ocorr, sizeof ocorr, ox, sizeof ox), 0);
    cr_expect_str_eq(ocorr, corr, "correlation travels on: got '%s'", ocorr);
    cr_expect_eq(strncmp(ox, "0-", 2), 0);
    sw_span_end();

    sw_snapshot_t snap;
    cr_assert_eq(sw_capture(&snap), 0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, worker_continue, &snap), 0);
    pthread_join(t, NULL);

    sw_local_span_begin("local-1");
    cr_assert_eq(sw_span_set_peer("not-really-a-peer"), 0);
    sw_span_end();
    sw_span_end();
    *t1 = wall_ms();
}

static void check_entry_span(const Skywalking__V3__SpanObject *s, int64_t t0, int64_t t1)
{
    cr_expect_eq(s->spanid, 0);
    cr_expect_eq(s->parentspanid, -1);
    cr_expect(s->starttime >= t0 && s->starttime <= s->endtime && s->endtime <= t1);
    cr_expect_str_eq(s->operationname, "GET /orders");
    cr_expect_str_eq(s->peer, "");
    cr_expect_eq(s->spantype, SKYWALKING__V3__SPAN_TYPE__Entry);
    cr_expect_eq(s->spanlayer, SKYWALKING__V3__SPAN_LAYER__Http);
    cr_expect_eq(s->componentid, 5001);
    cr_expect(s->iserror);
    cr_expect(s->skipanalysis, "sw8-x 1- sets skipAnalysis");
    cr_assert_eq(s->n_tags, 3);
    assert_kv(s->tags[0], "transmission.latency", NULL);
    assert_kv(s->tags[1], "a", "1");
    assert_kv(s->tags[2], "b", "2");
    cr_assert_eq(s->n_logs, 1);
    cr_expect(s->logs[0]->time >= t0 && s->logs[0]->time <= t1);
    cr_assert_eq(s->logs[0]->n_data, 2);
    assert_kv(s->logs[0]->data[0], "event", "boom");
    assert_kv(s->logs[0]->data[1], "stack", "frame0");
    cr_assert_eq(s->n_refs, 1);
    const Skywalking__V3__SegmentReference *r = s->refs[0];
    cr_expect_eq(r->reftype, SKYWALKING__V3__REF_TYPE__CrossProcess);
    cr_expect_str_eq(r->traceid, upstream.trace_id);
    cr_expect_str_eq(r->parenttracesegmentid, upstream.parent_segment_id);
    cr_expect_eq(r->parentspanid, 3);
    cr_expect_str_eq(r->parentservice, upstream.parent_service);
    cr_expect_str_eq(r->parentserviceinstance, upstream.parent_instance);
    cr_expect_str_eq(r->parentendpoint, upstream.parent_endpoint);
    cr_expect_str_eq(r->networkaddressusedatpeer, upstream.address);
}

static void check_child_spans(const Skywalking__V3__SegmentObject *seg)
{
    const Skywalking__V3__SpanObject *e = seg->spans[1];
    cr_expect_eq(e->spanid, 1);
    cr_expect_eq(e->parentspanid, 0);
    cr_expect_str_eq(e->operationname, "SELECT");
    cr_expect_str_eq(e->peer, "db:5432");
    cr_expect_eq(e->spantype, SKYWALKING__V3__SPAN_TYPE__Exit);
    cr_expect_eq(e->spanlayer, SKYWALKING__V3__SPAN_LAYER__Database);
    cr_expect_eq(e->componentid, 22);
    cr_expect(!e->iserror && !e->skipanalysis);
    cr_assert_eq(e->n_tags, 1);
    assert_kv(e->tags[0], "db.statement", "SELECT 1");
    cr_expect_eq(e->n_logs, 0);
    cr_expect_eq(e->n_refs, 0);
    cr_expect(e->starttime >= seg->spans[0]->starttime && e->endtime <= seg->spans[0]->endtime);

    const Skywalking__V3__SpanObject *l = seg->spans[2];
    cr_expect_eq(l->spanid, 2);
    cr_expect_eq(l->parentspanid, 0);
    cr_expect_str_eq(l->operationname, "local-1");
    cr_expect_str_eq(l->peer, "not-really-a-peer");
    cr_expect_eq(l->spantype, SKYWALKING__V3__SPAN_TYPE__Local);
    cr_expect_eq(l->spanlayer, SKYWALKING__V3__SPAN_LAYER__Unknown);
    cr_expect_eq(l->componentid, 0);
    cr_expect_eq(l->n_tags + l->n_logs + l->n_refs, 0);
}

Test(file_reporter, every_field_round_trips)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    char sw8[SW_SW8_MAX];
    int64_t t0, t1;
    record_segments(sw8, sizeof sw8, &t0, &t1);
    sw_stats_t st = agent_test_stop();
    cr_expect_eq(st.segments_finished, 2);
    cr_expect_eq(st.segments_reported, 2);

    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 2);
    Skywalking__V3__SegmentObject *a = agent_test_find(&d, "GET /orders");
    Skywalking__V3__SegmentObject *b = agent_test_find(&d, "worker");
    cr_assert(a != NULL && b != NULL);
    cr_expect_str_eq(a->traceid, upstream.trace_id, "the entry joined the upstream trace");
    assert_id_shape(a->tracesegmentid);
    cr_expect_str_eq(a->service, "test-service");
    cr_expect_str_eq(a->serviceinstance, "test-instance");
    cr_expect(!a->issizelimited);
    cr_assert_eq(a->n_spans, 3);
    check_entry_span(a->spans[0], t0, t1);
    check_child_spans(a);

    /* The outgoing sw8 points at this segment's exit span. */
    char scratch[SW__SW8_HEADER_MAX + 16];
    sw__sw8_t out;
    cr_assert_eq(sw__sw8_decode(sw8, strlen(sw8), &out, scratch, sizeof scratch, NULL), 0);
    cr_expect_eq(out.sample, 1);
    cr_expect_str_eq(out.trace_id, upstream.trace_id);
    cr_expect_str_eq(out.parent_segment_id, a->tracesegmentid);
    cr_expect_eq(out.parent_span_id, 1);
    cr_expect_str_eq(out.parent_service, "test-service");
    cr_expect_str_eq(out.parent_instance, "test-instance");
    cr_expect_str_eq(out.parent_endpoint, "GET /orders");
    cr_expect_str_eq(out.address, "db:5432");

    /* The worker's segment: a CrossThread reference to span 0 of the first segment. */
    cr_expect_str_eq(b->traceid, upstream.trace_id);
    assert_id_shape(b->tracesegmentid);
    cr_expect_str_neq(b->tracesegmentid, a->tracesegmentid);
    cr_assert_eq(b->n_spans, 1);
    cr_expect_eq(b->spans[0]->spantype, SKYWALKING__V3__SPAN_TYPE__Local);
    cr_assert_eq(b->spans[0]->n_refs, 1);
    const Skywalking__V3__SegmentReference *r = b->spans[0]->refs[0];
    cr_expect_eq(r->reftype, SKYWALKING__V3__REF_TYPE__CrossThread);
    cr_expect_str_eq(r->traceid, upstream.trace_id);
    cr_expect_str_eq(r->parenttracesegmentid, a->tracesegmentid);
    cr_expect_eq(r->parentspanid, 0);
    cr_expect_str_eq(r->parentservice, "test-service");
    cr_expect_str_eq(r->parentserviceinstance, "test-instance");
    cr_expect_str_eq(r->parentendpoint, "GET /orders");
    cr_expect_str_eq(r->networkaddressusedatpeer, "");
    agent_test_free(&d);
}

static void limit_5(sw_config_t *cfg)
{
    cfg->span_limit_per_segment = 5;
}

Test(file_reporter, size_limited_segment_is_flagged)
{
    const char *path = agent_test_path();
    agent_test_start(path, limit_5);
    sw_entry_span_begin("root", NULL);
    for (int i = 0; i < 10; i++) {
        sw_local_span_begin("child");
        sw_local_span_begin("grandchild");
        cr_expect_eq(sw_span_tag("k", "v"), i < 2 ? 0 : SW_ENOTRACED);
        sw_span_end();
        sw_span_end();
    }
    sw_span_end();
    sw_stats_t st = agent_test_stop();
    cr_expect_eq(st.spans_limited, 16, "21 spans, 5 recorded");
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 1);
    cr_expect(d.items[0]->issizelimited);
    cr_assert_eq(d.items[0]->n_spans, 5);
    int32_t parents[5] = {-1, 0, 1, 0, 3};
    for (int i = 0; i < 5; i++) {
        cr_expect_eq(d.items[0]->spans[i]->parentspanid, parents[i], "span %d", i);
    }
    agent_test_free(&d);
}

static void small_arena(sw_config_t *cfg)
{
    cfg->segment_arena_bytes = 1024;
}

Test(file_reporter, full_arena_truncates_and_counts)
{
    const char *path = agent_test_path();
    agent_test_start(path, small_arena);
    char value[300];
    memset(value, 'v', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    sw_local_span_begin("root");
    for (int i = 0; i < 20; i++) {
        cr_expect_eq(sw_span_tag("key", value), 0);
    }
    sw_span_end();
    sw_stats_t st = agent_test_stop();
    cr_expect_gt(st.arena_truncated, 0);
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 1);
    const Skywalking__V3__SpanObject *s = d.items[0]->spans[0];
    cr_expect_str_eq(s->operationname, "root");
    cr_expect_lt(s->n_tags, 20);
    for (size_t i = 0; i < s->n_tags; i++) {
        cr_expect_eq(strncmp(s->tags[i]->value, value, strlen(s->tags[i]->value)), 0);
    }
    agent_test_free(&d);
}

static void *many_segments(void *arg)
{
    (void)arg;
    for (int i = 0; i < 500; i++) {
        sw_entry_span_begin("many", NULL);
        sw_exit_span_begin("call", "peer:1");
        sw_span_end();
        sw_span_end();
    }
    return NULL;
}

Test(file_reporter, every_finished_segment_is_accounted_and_ids_are_unique)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(pthread_create(&t[i], NULL, many_segments, NULL), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
    }
    sw_stats_t st = agent_test_stop();
    cr_expect_eq(st.segments_finished, 2000);
    decoded_segments_t d = agent_test_read(path);
    cr_expect_eq(d.count, st.segments_reported, "the file holds exactly the reported segments");
    for (size_t i = 0; i < d.count; i++) {
        for (size_t j = i + 1; j < d.count; j++) {
            cr_assert_str_neq(d.items[i]->tracesegmentid, d.items[j]->tracesegmentid);
        }
    }
    agent_test_free(&d);
}

/* Reported + failed have caught up with `*(uint64_t *)arg` finished segments. */
static bool batches_settled(void *arg)
{
    sw_stats_t st;
    sw_stats(&st);
    return st.segments_reported + st.segments_failed + st.segments_dropped >= *(uint64_t *)arg;
}

/* Records `n` segments on this thread and waits until the reporter has counted them, so that
   every round is its own batch. */
static void round_record(int n, uint64_t *finished)
{
    for (int i = 0; i < n; i++) {
        sw_entry_span_begin("fsize", NULL);
        sw_span_tag("payload", "0123456789012345678901234567890123456789");
        sw_span_end();
    }
    *finished += (uint64_t)n;
    wait_until(batches_settled, finished, "the reporter counted the round");
}

Test(file_reporter, a_write_over_the_file_size_limit_leaves_no_torn_record)
{
    const char *path = agent_test_path();
    signal(SIGXFSZ, SIG_IGN); /* write() then fails with EFBIG instead of killing us */
    struct rlimit old, lim;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 20000; /* the limit falls inside some batch */
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    agent_test_start(path, NULL);
    uint64_t finished = 0;
    for (int r = 0; r < 40; r++) {
        round_record(7, &finished);
    }
    sw_stats_t mid;
    sw_stats(&mid);
    cr_assert_gt(mid.segments_failed, 0, "no batch hit the limit: the test proves nothing");
    cr_assert_gt(mid.segments_reported, 0);
    /* Room again: the next batches start on a record boundary and are readable. */
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    for (int r = 0; r < 3; r++) {
        round_record(7, &finished);
    }
    sw_stats_t st = agent_test_stop(); /* asserts finished == reported + dropped + failed */
    cr_expect_eq(st.segments_finished, finished);
    cr_expect_gt(st.segments_reported, mid.segments_reported, "later batches were written");
    decoded_segments_t d = agent_test_read(path); /* fails the test on a torn record */
    cr_expect_eq(d.count, st.segments_reported, "every segment counted reported decodes");
    agent_test_free(&d);
}

/* Whether the file system of `path`'s directory can reserve space (fallocate KEEP_SIZE). */
static bool reserve_supported(const char *path)
{
    char probe[4200];
    snprintf(probe, sizeof probe, "%s.probe", path);
    int fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    bool ok = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 4096) == 0;
    close(fd);
    unlink(probe);
    return ok;
}

Test(file_reporter, space_is_reserved_ahead_and_the_size_holds_only_whole_records)
{
    const char *path = agent_test_path();
    if (!reserve_supported(path)) {
        cr_skip("the file system of %s has no fallocate", path);
    }
    agent_test_start(path, NULL);
    uint64_t finished = 0;
    for (int r = 0; r < 5; r++) {
        round_record(20, &finished);
    }
    struct stat mid;
    cr_assert_eq(stat(path, &mid), 0);
    /* One reservation step (1 MiB) past the end while the agent writes: the writes land in
       allocated space, and the size is that of the records written, not of the reservation. */
    cr_expect_geq((long long)mid.st_blocks * 512, mid.st_size + (1 << 19),
                  "no space reserved past the end: %lld blocks for %lld bytes",
                  (long long)mid.st_blocks, (long long)mid.st_size);
    sw_stats_t st = agent_test_stop();
    cr_expect_eq(st.segments_reported, finished);
    decoded_segments_t d = agent_test_read(path); /* fails on a torn or padded record */
    cr_expect_eq(d.count, finished, "the size covers exactly the records");
    agent_test_free(&d);
}
