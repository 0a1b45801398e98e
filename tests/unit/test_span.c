/*
 * test_span.c - the span API and TracingContext: tree shape, agent-off no-ops, ids (unique
 * across threads and after fork), the API's error codes, capture/continue, correlation,
 * restart of the agent.
 */
#include <pthread.h>
#include <sys/wait.h>

#include "agent_internal.h"
#include "segment/ids.h"
#include "encode/segment_item.h"
#include "test_agent_support.h"
#include "test_util.h"

Test(span, calls_while_the_agent_is_off_are_harmless_no_ops)
{
    cr_assert(!sw_enabled());
    sw_entry_span_begin("off", "garbage-sw8");
    sw_local_span_begin("off");
    cr_expect_eq(sw_span_tag("k", "v"), SW_ENOSPAN);
    cr_expect_eq(sw_span_set_error(true), SW_ENOSPAN);
    char buf[SW_SW8_MAX];
    cr_expect_eq(sw_inject(buf, sizeof buf, NULL, 0, NULL, 0), SW_ENOSPAN);
    cr_expect_str_eq(buf, "");
    sw_snapshot_t snap;
    cr_expect_eq(sw_capture(&snap), SW_ENOSPAN);
    cr_expect_eq(sw_continue(&snap), SW_EINVAL);
    cr_expect_eq(sw_correlation_set("k", "v"), SW_ENOSPAN);
    sw_span_end();
    sw_span_end();
    sw_span_end(); /* one too many: still harmless */
    cr_expect_eq(sw_shutdown(), SW_ESTATE);
    sw_stats_t st;
    sw_stats(&st);
    cr_expect_eq(st.segments_finished, 0);
}

Test(span, tree_shape_and_segment_boundaries)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    for (int round = 0; round < 2; round++) {
        sw_entry_span_begin("root", NULL);    /* 0 */
        sw_local_span_begin("a");             /* 1 <- 0 */
        sw_exit_span_begin("a.call", "peer"); /* 2 <- 1 */
        sw_span_end();
        sw_span_end();
        sw_local_span_begin("b");       /* 3 <- 0 */
        sw_local_span_begin("b.inner"); /* 4 <- 3 */
        sw_span_end();
        sw_span_end();
        sw_span_end(); /* stack empty: one segment per round */
    }
    sw_stats_t st = agent_test_stop();
    cr_expect_eq(st.segments_finished, 2);
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 2);
    const int32_t parents[] = {-1, 0, 1, 0, 3};
    const char *ops[] = {"root", "a", "a.call", "b", "b.inner"};
    for (size_t s = 0; s < 2; s++) {
        cr_assert_eq(d.items[s]->n_spans, 5);
        for (int i = 0; i < 5; i++) {
            cr_expect_eq(d.items[s]->spans[i]->spanid, i);
            cr_expect_eq(d.items[s]->spans[i]->parentspanid, parents[i]);
            cr_expect_str_eq(d.items[s]->spans[i]->operationname, ops[i]);
        }
    }
    cr_expect_str_neq(d.items[0]->traceid, d.items[1]->traceid, "a new trace per segment");
    cr_expect_str_neq(d.items[0]->traceid, d.items[0]->tracesegmentid);
    agent_test_free(&d);
}

/* Segments up to SW__THREAD_ENCODE_MAX_SPANS spans are encoded by their thread, bigger ones by
   the consumer (encode/segment_item.h): interleaved, both kinds arrive whole, in the file the
   reporter wrote, with their spans, tags, ids and the service. */
Test(span, segments_on_both_sides_of_the_thread_encode_limit_arrive_whole)
{
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    const int sizes[] = {1, SW__THREAD_ENCODE_MAX_SPANS, SW__THREAD_ENCODE_MAX_SPANS + 1, 100, 3};
    enum { KINDS = sizeof sizes / sizeof sizes[0], ROUNDS = 20 };
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < KINDS; k++) {
            char op[32];
            snprintf(op, sizeof op, "size-%d", sizes[k]);
            sw_entry_span_begin(op, NULL);
            sw_span_tag("round", round % 2 ? "odd" : "even");
            for (int i = 1; i < sizes[k]; i++) {
                sw_local_span_begin("child");
                sw_span_end();
            }
            sw_span_end();
        }
    }
    sw_stats_t st = agent_test_stop();
    cr_expect_eq(st.segments_reported, KINDS * ROUNDS);
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, KINDS * ROUNDS);
    int seen[KINDS] = {0};
    for (size_t s = 0; s < d.count; s++) {
        Skywalking__V3__SegmentObject *m = d.items[s];
        int size = -1;
        cr_assert_eq(sscanf(m->spans[0]->operationname, "size-%d", &size), 1);
        cr_assert_eq((int)m->n_spans, size, "%s has %zu spans", m->spans[0]->operationname,
                     m->n_spans);
        cr_assert_eq(m->spans[0]->n_tags, 1);
        cr_expect_str_eq(m->spans[0]->tags[0]->key, "round");
        cr_expect_neq(m->tracesegmentid[0], '\0');
        cr_expect_neq(m->traceid[0], '\0');
        cr_expect_neq(m->service[0], '\0');
        for (int i = 1; i < size; i++) {
            cr_assert_str_eq(m->spans[i]->operationname, "child");
            cr_assert_eq(m->spans[i]->parentspanid, 0);
        }
        for (int k = 0; k < KINDS; k++) {
            seen[k] += sizes[k] == size;
        }
    }
    for (int k = 0; k < KINDS; k++) {
        cr_expect_eq(seen[k], ROUNDS, "%d segments of %d spans", seen[k], sizes[k]);
    }
    agent_test_free(&d);
}

Test(span, api_error_codes)
{
    agent_test_start(agent_test_path(), NULL);
    sw_local_span_begin("local");
    char sw8[SW_SW8_MAX];
    cr_expect_eq(sw_inject(sw8, sizeof sw8, NULL, 0, NULL, 0), SW_ENOTEXIT);
    cr_expect_eq(sw_span_set_layer((sw_layer_t)42), SW_EINVAL);
    cr_expect_eq(sw_span_tag(NULL, "v"), SW_EINVAL);
    cr_expect_eq(sw_span_log(NULL, 1), SW_EINVAL);
    sw_exit_span_begin("exit", "peer:1");
    cr_expect_eq(sw_inject(sw8, 8, NULL, 0, NULL, 0), SW_ENOSPACE);
    cr_expect_str_eq(sw8, "");
    cr_expect_eq(sw_inject(sw8, sizeof sw8, NULL, 0, NULL, 0), 0);
    cr_expect_eq(strncmp(sw8, "1-", 2), 0);
    sw_span_end();
    sw_span_end();
    cr_expect_eq(sw_init(NULL), SW_ESTATE, "a second sw_init is refused");
    agent_test_stop();
    cr_expect_str_eq(sw_err_name(SW_ENOTEXIT), "SW_ENOTEXIT");
    cr_expect_str_eq(sw_strerror(SW_ENOSPAN), "no active span on this thread");
    cr_expect_str_eq(sw_err_name(12345), "unknown");
}

Test(span, correlation_through_the_api)
{
    agent_test_start(agent_test_path(), NULL);
    sw_entry_span_begin("root", NULL);
    cr_expect_eq(sw_correlation_set("k1", "v1"), 0);
    cr_expect_eq(sw_correlation_set("k2", "v2"), 0);
    cr_expect_eq(sw_correlation_set("k3", "v3"), 0);
    cr_expect_eq(sw_correlation_set("k4", "v4"), SW_ELIMIT);
    char big[200];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cr_expect_eq(sw_correlation_set("k1", big), SW_ELIMIT);
    char buf[SW_CORRELATION_VALUE_MAX + 1];
    cr_expect_eq(sw_correlation_get("k2", buf, sizeof buf), 2);
    cr_expect_str_eq(buf, "v2");
    cr_expect_eq(sw_correlation_get("k2", buf, 2), SW_ENOSPACE);
    cr_expect_eq(sw_correlation_get("nope", buf, sizeof buf), SW_ENOTFOUND);
    sw_snapshot_t snap;
    cr_assert_eq(sw_capture(&snap), 0);
    sw_span_end();
    /* A new trace continuing the snapshot inherits its correlation. */
    sw_local_span_begin("continued");
    cr_expect_eq(sw_correlation_get("k3", buf, sizeof buf), SW_ENOTFOUND);
    cr_expect_eq(sw_continue(&snap), 0);
    cr_expect_eq(sw_correlation_get("k3", buf, sizeof buf), 2);
    sw_span_end();
    agent_test_stop();
}

Test(span, continue_rejects_bad_snapshots_and_caps_references)
{
    agent_test_start(agent_test_path(), NULL);
    sw_local_span_begin("root");
    sw_snapshot_t snap;
    cr_assert_eq(sw_capture(&snap), 0);
    sw_snapshot_t broken = snap;
    broken.span_id = -1;
    cr_expect_eq(sw_continue(&broken), SW_EINVAL);
    broken = snap;
    memset(broken.trace_id, 'x', sizeof broken.trace_id); /* not terminated */
    cr_expect_eq(sw_continue(&broken), SW_EINVAL);
    cr_expect_eq(sw_continue(NULL), SW_EINVAL);
    int ok = 0, limited = 0;
    for (int i = 0; i < 20; i++) {
        int rc = sw_continue(&snap);
        ok += rc == 0;
        limited += rc == SW_ELIMIT;
    }
    cr_expect_eq(ok, 8, "8 references per segment");
    cr_expect_eq(limited, 12);
    sw_span_end();
    agent_test_stop();
}

#define ID_THREADS     4
#define IDS_PER_THREAD 20000

static char ids[ID_THREADS][IDS_PER_THREAD][SW__ID_LEN_MAX + 1];

static void *ids_make(void *arg)
{
    intptr_t t = (intptr_t)arg;
    sw__id_state_t st = {0};
    for (int i = 0; i < IDS_PER_THREAD; i++) {
        sw__id_generate(&st, 1700000000000, ids[t][i]); /* same ms: the sequence must differ */
    }
    return NULL;
}

static int id_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

Test(ids, unique_across_threads_even_within_one_millisecond)
{
    sw__ids_seed();
    pthread_t th[ID_THREADS];
    for (intptr_t t = 0; t < ID_THREADS; t++) {
        cr_assert_eq(pthread_create(&th[t], NULL, ids_make, (void *)t), 0);
    }
    for (int t = 0; t < ID_THREADS; t++) {
        pthread_join(th[t], NULL);
    }
    size_t n = (size_t)ID_THREADS * IDS_PER_THREAD;
    qsort(ids, n, SW__ID_LEN_MAX + 1, id_cmp);
    const char(*flat)[SW__ID_LEN_MAX + 1] = (const void *)ids;
    for (size_t i = 1; i < n; i++) {
        cr_assert_str_neq(flat[i - 1], flat[i], "duplicate id %s", flat[i]);
    }
    cr_expect_eq(strncmp(flat[0], sw__ids_process_uuid(), 32), 0);
}

/* The tail of an id (after "<uuid>.<tid>.") is the decimal of ms * 10000 + sequence, whatever
   digits were cached from the id before: the same millisecond, a new one, a sequence that runs
   past 9999 into the next millisecond's numbers, a clock that goes back, and ms 0. */
Test(ids, tails_are_the_decimal_of_ms_times_10000_plus_sequence)
{
    sw__ids_seed();
    sw__id_state_t st = {0};
    char id[SW__ID_LEN_MAX + 1], want[32];
    uint64_t last = 0; /* tails only grow: each is max(ms * 10000, the one before + 1) */
    const int64_t ms[] = {
        0, 0, 1, 1, 99, 1700000000000, 1700000000000, 1700000000001, 1699999999999, 1700000000002};
    for (size_t k = 0; k < sizeof ms / sizeof ms[0]; k++) {
        for (int i = 0; i < (k == 5 ? 10003 : 3); i++) {
            size_t n = sw__id_generate(&st, ms[k], id);
            uint64_t expect = (uint64_t)ms[k] * 10000u > last ? (uint64_t)ms[k] * 10000u : last + 1;
            last = expect;
            sw__u64_to_dec(expect, want);
            const char *tail = strrchr(id, '.') + 1;
            cr_assert_str_eq(tail, want, "ms %lld, id %d: %s", (long long)ms[k], i, id);
            cr_assert_eq(n, strlen(id));
        }
    }
}

/* A child of a multi-threaded process cannot start threads under the sanitizers' runtimes:
   TSan refuses, and clang 14's ASan allocator can stay locked by a parent thread that was
   inside it at the fork, so the child's new thread hangs. There the child only checks its ids. */
#define CHILD_CAN_RESTART_AGENT (!TEST_SANITIZED)

Test(ids, a_forked_child_gets_a_new_process_uuid_and_can_restart_the_agent)
{
    agent_test_start(agent_test_path(), NULL); /* registers the fork hook */
    char parent_uuid[33];
    memcpy(parent_uuid, sw__ids_process_uuid(), 33);
    sw_local_span_begin("open across fork");
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        char msg[128];
        sw__id_state_t st = {0};
        char id[SW__ID_LEN_MAX + 1];
        sw__id_generate(&st, 1, id);
        sw_span_end(); /* the parent's open span: dropped safely */
        int restarted = !sw_enabled(), stopped = 1;
#if CHILD_CAN_RESTART_AGENT
        sw_config_t cfg;
        sw_config_init(&cfg);
        snprintf(cfg.file_path, sizeof cfg.file_path, "/dev/null");
        restarted = restarted && sw_init(&cfg) == 0;
        sw_local_span_begin("child");
        sw_span_end();
        stopped = sw_shutdown() == 0;
#endif
        snprintf(msg, sizeof msg, "%s %d %d", id, restarted, stopped);
        ssize_t w = write(fds[1], msg, strlen(msg) + 1);
        _exit(w > 0 ? 0 : 1);
    }
    close(fds[1]);
    char msg[128] = "";
    ssize_t r = read(fds[0], msg, sizeof msg - 1);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(r > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed");
    cr_expect_neq(strncmp(msg, parent_uuid, 32), 0, "child id %s shares the parent uuid", msg);
    cr_expect_str_eq(msg + strlen(msg) - 4, " 1 1", "child restart/stop: %s", msg);
    sw_span_end();
    sw_stats_t st = agent_test_stop();
    cr_expect_eq(st.segments_finished, 1, "the parent's segment is its own");
}

Test(span, restart_drops_what_a_thread_held_from_the_previous_run)
{
    agent_test_start(agent_test_path(), NULL);
    sw_local_span_begin("left open");
    agent_test_stop();
    sw_span_end(); /* after shutdown: no-op */
    const char *path = agent_test_path();
    agent_test_start(path, NULL);
    sw_local_span_begin("second run");
    sw_span_end();
    sw_stats_t st = agent_test_stop();
    cr_expect_eq(st.segments_finished, 1);
    decoded_segments_t d = agent_test_read(path);
    cr_assert_eq(d.count, 1);
    cr_expect_str_eq(d.items[0]->spans[0]->operationname, "second run");
    cr_expect_eq(d.items[0]->n_spans, 1);
    agent_test_free(&d);
}

/* The decimal formatter of ids and tags against snprintf, at every digit-count boundary. */
Test(ids, u64_to_dec_matches_snprintf)
{
    uint64_t v[] = {0,
                    9,
                    10,
                    99,
                    100,
                    999,
                    1000,
                    9999,
                    10000,
                    12345,
                    99999,
                    100000,
                    17000000001230001ull,
                    UINT64_MAX,
                    UINT64_MAX / 10};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        for (int d = -1; d <= 1; d++) {
            uint64_t x = v[i] + (uint64_t)(int64_t)d;
            char ours[24], ref[24];
            size_t n = sw__u64_to_dec(x, ours);
            snprintf(ref, sizeof ref, "%llu", (unsigned long long)x);
            cr_assert_str_eq(ours, ref);
            cr_assert_eq(n, strlen(ref));
        }
    }
}
