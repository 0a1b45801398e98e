/*
 * test_rdkafka_spans.c - the librdkafka plugin of libskywalking-preload.so against the real
 * Kafka broker of the ctest fixture (tests/0_kafka_fixture.cmake; the broker does not create
 * topics). rk_client (an ordinary librdkafka program) produces and consumes with every API the
 * plugin interposes; each test reads the segment files the preloaded runs wrote and checks the
 * span trees, operation names, layers, components, peers, tags, errors and the references that
 * join a consumer's span to the producer's.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka_test_env.h"
#include "preload/pl_support.h"

#define WAIT_MS 90000

static char bootstrap[1024];

static void fixture(void)
{
    sw_test_kafka_t k;
    cr_assert_eq(sw_test_kafka_fixture(&k), 0, "the kafka fixture broker is not running");
    snprintf(bootstrap, sizeof bootstrap, "%s", k.bootstrap);
}

/* A topic name no other run used. */
static void topic_unique(char *out, size_t len, const char *tag)
{
    static int n;
    snprintf(out, len, "rk-%s-%d-%d", tag, (int)getpid(), n++);
}

/* Runs rk_client with `args` (NULL-terminated, after BOOTSTRAP), preloaded unless `plain`,
   the segments into `dir`/<name>.bin; returns its stdout (malloc'd) and reads the segments. */
static char *run(const char *name, bool plain, const char *dir, const char *const *args,
                 pl_segments_t *segs)
{
    char file[600], out[600], err[600], e[3][700];
    snprintf(file, sizeof file, "%s/%s.bin", dir, name);
    snprintf(out, sizeof out, "%s/%s.out", dir, name);
    snprintf(err, sizeof err, "%s/%s.err", dir, name);
    snprintf(e[0], sizeof e[0], "LD_PRELOAD=%s", plain ? "" : PL_PRELOAD_LIB);
    snprintf(e[1], sizeof e[1], "SW_REPORTER_FILE_PATH=%s", file);
    snprintf(e[2], sizeof e[2], "SW_AGENT_NAME=%s", name);
    char *env[] = {e[0], e[1], e[2], NULL};
    char *argv[16] = {(char *)RK_CLIENT, bootstrap};
    int n = 2;
    for (; args[n - 2] != NULL && n < 15; n++) {
        argv[n] = (char *)args[n - 2];
    }
    argv[n] = NULL;
    int rc = pl_run(argv, env, out, err, WAIT_MS);
    char *msg = pl_slurp(err, NULL);
    cr_assert_eq(rc, 0, "rk_client %s %s exited %d: %s", args[0], args[1], rc,
                 msg != NULL ? msg : "");
    free(msg);
    if (segs != NULL) {
        cr_assert_geq(pl_segments_read(segs, file), 0, "%s: corrupt segment file", name);
    }
    char *text = pl_slurp(out, NULL);
    cr_assert_not_null(text);
    return text;
}

static void tag_is(const pl_span_t *sp, const char *key, const char *want)
{
    const char *v = pl_span_tag(sp, key);
    cr_assert_not_null(v, "%s: no tag %s", sp->operationname, key);
    cr_assert_str_eq(v, want, "%s: tag %s", sp->operationname, key);
}

/* The checks of a producer's segment: one exit span, root, on `topic`. */
static void producer_check(const pl_segment_t *seg, const char *topic, bool error)
{
    char op[256];
    snprintf(op, sizeof op, "Kafka/%s/Producer", topic);
    cr_assert_eq(seg->n_spans, 1, "a producer segment has its exit span only");
    const pl_span_t *sp = seg->spans[0];
    cr_assert_str_eq(sp->operationname, op);
    cr_assert_eq(sp->spantype, SKYWALKING__V3__SPAN_TYPE__Exit);
    cr_assert_eq(sp->parentspanid, -1);
    cr_assert_eq((int)sp->spanlayer, SKYWALKING__V3__SPAN_LAYER__MQ);
    cr_assert_eq(sp->componentid, 40, "kafka-producer");
    cr_assert_str_eq(sp->peer, bootstrap, "peer = bootstrap.servers");
    tag_is(sp, "mq.broker", bootstrap);
    tag_is(sp, "mq.topic", topic);
    cr_assert_eq(sp->iserror, error, "%s: error flag", op);
    cr_assert_geq(sp->endtime, sp->starttime);
}

/* The consumer's entry span (span 0 of seg) on `topic` of `group`; when `from` is not NULL it
   continues one of from's producer segments (and the trace), else it has no reference. */
static void consumer_check(const pl_segment_t *seg, const char *topic, const char *group,
                           const pl_segments_t *from)
{
    char op[256];
    snprintf(op, sizeof op, "Kafka/%s/Consumer/%s", topic, group);
    const pl_span_t *sp = seg->spans[0];
    cr_assert_str_eq(sp->operationname, op);
    cr_assert_eq(sp->spantype, SKYWALKING__V3__SPAN_TYPE__Entry);
    cr_assert_eq(sp->parentspanid, -1);
    cr_assert_eq((int)sp->spanlayer, SKYWALKING__V3__SPAN_LAYER__MQ);
    cr_assert_eq(sp->componentid, 41, "kafka-consumer");
    tag_is(sp, "mq.broker", bootstrap);
    tag_is(sp, "mq.topic", topic);
    cr_assert_not(sp->iserror);
    if (from == NULL) {
        cr_assert_eq(sp->n_refs, 0, "%s: a message without a valid sw8 starts a new trace", op);
        return;
    }
    cr_assert_eq(sp->n_refs, 1, "%s continues the producer's trace", op);
    const Skywalking__V3__SegmentReference *r = sp->refs[0];
    cr_assert_eq(r->reftype, SKYWALKING__V3__REF_TYPE__CrossProcess);
    const pl_segment_t *parent = pl_segment_find(from, r->parenttracesegmentid);
    cr_assert_not_null(parent, "%s: the ref names a segment of the producer", op);
    cr_assert_str_eq(r->traceid, parent->traceid);
    cr_assert_str_eq(seg->traceid, parent->traceid, "one trace from producer to consumer");
    cr_assert_eq(r->parentspanid, 0, "the ref names the producer's exit span");
    cr_assert_str_eq(r->parentservice, parent->service);
    cr_assert_str_eq(r->networkaddressusedatpeer, bootstrap);
}

/* Produces `count` messages with `papi`, consumes them with `capi`, checks both sides. */
static void roundtrip(const char *papi, const char *capi, int count)
{
    fixture();
    char dir[256], topic[128], n[8];
    pl_tmpdir(dir, sizeof dir, "rdkafka");
    topic_unique(topic, sizeof topic, papi);
    snprintf(n, sizeof n, "%d", count);
    pl_segments_t p = {0}, c = {0};
    free(run("rkp", false, dir, (const char *[]){topic, "produce", papi, n, NULL}, &p));
    char *out = run("rkc", false, dir, (const char *[]){topic, "consume", capi, n, "g1", NULL}, &c);
    cr_assert_eq(p.n, (size_t)count, "one producer segment per message");
    for (size_t i = 0; i < p.n; i++) {
        producer_check(p.segs[i], topic, false);
    }
    cr_assert_eq(c.n, (size_t)count, "one consumer segment per message");
    for (size_t i = 0; i < c.n; i++) {
        cr_assert_eq(c.segs[i]->n_spans, 1);
        consumer_check(c.segs[i], topic, "g1", &p);
    }
    /* The caller's own header travels, before ours. */
    if (strcmp(papi, "headers") == 0 || strcmp(papi, "header") == 0) {
        const char *app = strstr(out, "hdr 0 app=1\n");
        const char *sw8 = strstr(out, "hdr 0 sw8=1-");
        cr_assert(app != NULL && sw8 != NULL && app < sw8, "headers: %s", out);
    }
    free(out);
    pl_segments_free(&p);
    pl_segments_free(&c);
}

TestSuite(rdkafka_spans, .timeout = 240);

Test(rdkafka_spans, producev_then_consumer_poll)
{
    roundtrip("producev", "poll", 3);
}

Test(rdkafka_spans, produceva_then_consume_batch)
{
    roundtrip("produceva", "batch", 2);
}

Test(rdkafka_spans, produce_then_consume)
{
    roundtrip("produce", "consume", 2);
}

Test(rdkafka_spans, caller_headers_object_kept)
{
    roundtrip("headers", "consume", 2);
}

Test(rdkafka_spans, caller_single_headers_kept)
{
    roundtrip("header", "batch", 2);
}

/* rd_kafka_consume_callback: the callback runs inside the message's entry span, so the reply
   it produces is an exit span under it, in the same trace. */
Test(rdkafka_spans, consume_callback_reply_is_child)
{
    fixture();
    char dir[256], topic[128], reply[160];
    pl_tmpdir(dir, sizeof dir, "rdkafka");
    topic_unique(topic, sizeof topic, "cb");
    snprintf(reply, sizeof reply, "%s-reply", topic);
    pl_segments_t p = {0}, c = {0};
    free(run("rkp", false, dir, (const char *[]){topic, "produce", "producev", "2", NULL}, &p));
    free(run("rkc", false, dir,
             (const char *[]){topic, "consume", "callback", "2", "g2", reply, NULL}, &c));
    cr_assert_eq(c.n, 2);
    for (size_t i = 0; i < c.n; i++) {
        const pl_segment_t *seg = c.segs[i];
        consumer_check(seg, topic, "g2", &p);
        cr_assert_eq(seg->n_spans, 2, "the entry span and the reply's exit span");
        const pl_span_t *ex = seg->spans[1];
        char op[256];
        snprintf(op, sizeof op, "Kafka/%s/Producer", reply);
        cr_assert_str_eq(ex->operationname, op);
        cr_assert_eq(ex->parentspanid, 0, "the reply is produced inside the message's span");
        cr_assert_eq(ex->componentid, 40);
        tag_is(ex, "mq.topic", reply);
    }
    pl_segments_free(&p);
    pl_segments_free(&c);
}

/* Eight threads produce on one client at once: one well-formed segment per message, and every
   consumer span continues one of them. */
Test(rdkafka_spans, threads_produce_at_once)
{
    fixture();
    char dir[256], topic[128];
    pl_tmpdir(dir, sizeof dir, "rdkafka");
    topic_unique(topic, sizeof topic, "mt");
    pl_segments_t p = {0}, c = {0};
    free(run("rkp", false, dir, (const char *[]){topic, "mt", "8", "25", NULL}, &p));
    cr_assert_eq(p.n, 200, "one segment per message of the 8 threads");
    for (size_t i = 0; i < p.n; i++) {
        producer_check(p.segs[i], topic, false);
    }
    free(
        run("rkc", false, dir, (const char *[]){topic, "consume", "batch", "200", "g4", NULL}, &c));
    cr_assert_eq(c.n, 200);
    for (size_t i = 0; i < c.n; i++) {
        consumer_check(c.segs[i], topic, "g4", &p);
    }
    pl_segments_free(&p);
    pl_segments_free(&c);
}

/* librdkafka's C++ API (RdKafka::Producer::produce with RdKafka::Headers, KafkaConsumer::consume)
   goes through the same C functions: the same spans, the caller's header kept. */
Test(rdkafka_spans, cxx_api)
{
    fixture();
    char dir[256], topic[128], file[600], out[600], err[600], e[2][700];
    pl_tmpdir(dir, sizeof dir, "rdkafka");
    topic_unique(topic, sizeof topic, "cpp");
    free(run("plain", true, dir, (const char *[]){topic, "create", NULL}, NULL));
    snprintf(file, sizeof file, "%s/cpp.bin", dir);
    snprintf(out, sizeof out, "%s/cpp.out", dir);
    snprintf(err, sizeof err, "%s/cpp.err", dir);
    snprintf(e[0], sizeof e[0], "LD_PRELOAD=%s", PL_PRELOAD_LIB);
    snprintf(e[1], sizeof e[1], "SW_REPORTER_FILE_PATH=%s", file);
    char *env[] = {e[0], e[1], NULL};
    char *argv[] = {RK_CPP, bootstrap, topic, "2", NULL};
    int rc = pl_run(argv, env, out, err, WAIT_MS);
    char *msg = pl_slurp(err, NULL);
    cr_assert_eq(rc, 0, "rk_cpp exited %d: %s", rc, msg != NULL ? msg : "");
    free(msg);
    char *text = pl_slurp(out, NULL);
    cr_assert(text != NULL && strstr(text, "hdr 1 app\nhdr 1 sw8\n") != NULL, "%s", text);
    free(text);
    pl_segments_t s = {0}, p = {0}, c = {0};
    cr_assert_geq(pl_segments_read(&s, file), 0);
    for (size_t i = 0; i < s.n; i++) { /* split: the producer's segments, the consumer's */
        pl_segments_t *to =
            s.segs[i]->spans[0]->spantype == SKYWALKING__V3__SPAN_TYPE__Exit ? &p : &c;
        pl_segment_t **grown = realloc(to->segs, (to->n + 1) * sizeof *grown);
        cr_assert_not_null(grown);
        to->segs = grown;
        to->segs[to->n++] = s.segs[i];
    }
    cr_assert_eq(p.n, 2);
    cr_assert_eq(c.n, 2);
    for (size_t i = 0; i < 2; i++) {
        producer_check(p.segs[i], topic, false);
        consumer_check(c.segs[i], topic, "cpp", &p);
    }
    free(p.segs); /* the segments themselves belong to s */
    free(c.segs);
    pl_segments_free(&s);
}

/* rd_kafka_produce_batch: one exit span for the call (the batch API carries no headers). */
Test(rdkafka_spans, produce_batch_one_span)
{
    fixture();
    char dir[256], topic[128];
    pl_tmpdir(dir, sizeof dir, "rdkafka");
    topic_unique(topic, sizeof topic, "batch");
    pl_segments_t p = {0};
    free(run("rkp", false, dir, (const char *[]){topic, "produce", "batch", "3", NULL}, &p));
    cr_assert_eq(p.n, 1);
    producer_check(p.segs[0], topic, false);
    pl_segments_free(&p);
}

/* A produce to a topic that does not exist fails in the call: the span has the error flag and
   a log with librdkafka's message. */
Test(rdkafka_spans, produce_to_missing_topic_is_error)
{
    fixture();
    char dir[256], topic[128];
    pl_tmpdir(dir, sizeof dir, "rdkafka");
    topic_unique(topic, sizeof topic, "missing");
    pl_segments_t p = {0};
    char *out = run("rkp", false, dir, (const char *[]){topic, "missing", NULL}, &p);
    cr_assert(strstr(out, "_UNKNOWN_TOPIC") != NULL, "%s", out);
    free(out);
    cr_assert_eq(p.n, 1);
    producer_check(p.segs[0], topic, true);
    const pl_span_t *sp = p.segs[0]->spans[0];
    cr_assert_eq(sp->n_logs, 1);
    bool found = false;
    for (size_t i = 0; i < sp->logs[0]->n_data; i++) {
        const Skywalking__V3__KeyStringValuePair *kv = sp->logs[0]->data[i];
        if (strcmp(kv->key, "message") == 0) {
            found = strstr(kv->value, "Unknown topic") != NULL;
        }
    }
    cr_assert(found, "the log carries librdkafka's message");
    pl_segments_free(&p);
}

/* Every API fails at once for a partition that does not exist: the caller sees librdkafka's
   own error (errno ESRCH for rd_kafka_produce) and every such span is an error (the headers'
   fate: headers_ownership_under_valgrind). */
Test(rdkafka_spans, failed_produce_keeps_caller_semantics)
{
    fixture();
    char dir[256], topic[128];
    pl_tmpdir(dir, sizeof dir, "rdkafka");
    topic_unique(topic, sizeof topic, "badpart");
    pl_segments_t p = {0};
    char *plain = run("plain", true, dir, (const char *[]){topic, "badpart", NULL}, NULL);
    char *out = run("rkp", false, dir, (const char *[]){topic, "badpart", NULL}, &p);
    cr_assert_str_eq(out, plain, "traced and untraced calls return the same");
    cr_assert(strstr(out, "produce: _UNKNOWN_PARTITION ESRCH") != NULL, "%s", out);
    free(out);
    free(plain);
    cr_assert_eq(p.n, 7, "five failed calls, then two that succeed");
    int errors = 0;
    for (size_t i = 0; i < p.n; i++) {
        bool e = p.segs[i]->spans[0]->iserror;
        producer_check(p.segs[i], topic, e);
        errors += e;
    }
    cr_assert_eq(errors, 5, "every failed call's span is an error, no other");
    pl_segments_free(&p);
}

/* Under valgrind (Memcheck), traced and with the agent off (a bad setting: the preload only
   forwards, single headers still folded): every produce API on its failure path (a partition
   that does not exist), then the header-carrying APIs on their success path, free nothing twice,
   read nothing freed and leak nothing (definite leaks), the caller's headers included. */
Test(rdkafka_spans, headers_ownership_under_valgrind)
{
    fixture();
    char dir[256], topic[128];
    pl_tmpdir(dir, sizeof dir, "rdkafka");
    topic_unique(topic, sizeof topic, "vg");
    const char *agent[2] = {"SW_AGENT_NAME=rk-vg", "SW_REPORTER=bogus"};
    for (int a = 0; a < 2; a++) {
        char e[2][700], err[600];
        snprintf(e[0], sizeof e[0], "LD_PRELOAD=%s", PL_PRELOAD_LIB);
        snprintf(e[1], sizeof e[1], "SW_REPORTER_FILE_PATH=%s/vg.bin", dir);
        char *env[] = {e[0], e[1], (char *)agent[a], NULL};
        char *argv[] = {"valgrind",
                        "-q",
                        "--leak-check=full",
                        "--errors-for-leak-kinds=definite",
                        "--error-exitcode=9",
                        (char *)RK_CLIENT,
                        bootstrap,
                        topic,
                        "badpart",
                        NULL};
        snprintf(err, sizeof err, "%s/vg-%d.err", dir, a);
        int rc = pl_run(argv, env, NULL, err, WAIT_MS);
        char *msg = pl_slurp(err, NULL);
        cr_assert_eq(rc, 0, "valgrind rk_client badpart (%s) exited %d: %s", agent[a], rc,
                     msg ? msg : "");
        free(msg);
    }
}

/* Messages from an untraced producer: no headers, malformed sw8 values, a value with a NUL
   byte, a 5000-byte value. Each consumer span starts a new trace; nothing crashes. */
Test(rdkafka_spans, foreign_or_malformed_headers_start_new_trace)
{
    fixture();
    char dir[256], topic[128];
    pl_tmpdir(dir, sizeof dir, "rdkafka");
    topic_unique(topic, sizeof topic, "hostile");
    const char *bad[] = {"-",
                         "garbage",
                         "1-x-y-0-a-b-c-d",
                         "1-MQ==-MQ==-notanumber-YQ==-Yg==-Yw==-ZA==",
                         "2-MQ==-MQ==-0-YQ==-Yg==-Yw==-ZA==",
                         "1-\xff\xfe-MQ==-0-YQ==-Yg==-Yw==-ZA==",
                         "",
                         "NUL",
                         "LONG"};
    enum { N = sizeof bad / sizeof *bad };
    const char *args[N + 3] = {topic, "raw"};
    for (int i = 0; i < N; i++) {
        args[2 + i] = bad[i];
    }
    free(run("plain", true, dir, args, NULL));
    pl_segments_t c = {0};
    char n[8];
    snprintf(n, sizeof n, "%d", (int)N);
    free(run("rkc", false, dir, (const char *[]){topic, "consume", "consume", n, "g3", NULL}, &c));
    cr_assert_eq(c.n, (size_t)N, "one consumer span per message");
    for (size_t i = 0; i < c.n; i++) {
        consumer_check(c.segs[i], topic, "g3", NULL);
    }
    pl_segments_free(&c);
}

/* The agent's own Kafka reporter (libkproducer, not librdkafka) is never a traced call: a
   traced librdkafka program reporting to the broker's skywalking-segments topic reports the
   span of its own produce, and no span of the reporter's topics. */
Test(rdkafka_spans, kafka_reporter_never_traced)
{
    fixture();
    char dir[256], topic[128], service[64], file[600], e[5][1200];
    pl_tmpdir(dir, sizeof dir, "rdkafka");
    topic_unique(topic, sizeof topic, "reporter");
    snprintf(service, sizeof service, "rk-reporter-%d", (int)getpid());
    snprintf(e[0], sizeof e[0], "LD_PRELOAD=%s", PL_PRELOAD_LIB);
    snprintf(e[1], sizeof e[1], "SW_REPORTER=kafka");
    snprintf(e[2], sizeof e[2], "SW_KAFKA_BOOTSTRAP_SERVERS=%s", bootstrap);
    snprintf(e[3], sizeof e[3], "SW_AGENT_NAME=%s", service);
    snprintf(e[4], sizeof e[4], "SW_REPORTER_FILE_PATH=%s/unused.bin", dir);
    char *env[] = {e[0], e[1], e[2], e[3], e[4], NULL};
    char *argv[] = {(char *)RK_CLIENT, bootstrap, topic, "produce", "producev", "2", NULL};
    char err[600];
    snprintf(err, sizeof err, "%s/reporter.err", dir);
    int rc = pl_run(argv, env, NULL, err, WAIT_MS);
    char *msg = pl_slurp(err, NULL);
    cr_assert_eq(rc, 0, "rk_client exited %d: %s", rc, msg != NULL ? msg : "");
    free(msg);
    snprintf(file, sizeof file, "%s/segments.bin", dir);
    char *dump[] = {(char *)RK_CLIENT, bootstrap, "skywalking-segments", "dump", file, NULL};
    cr_assert_eq(pl_run(dump, (char *[]){NULL}, NULL, NULL, WAIT_MS), 0, "dump failed");
    pl_segments_t all = {0};
    cr_assert_geq(pl_segments_read(&all, file), 0);
    size_t ours = 0;
    for (size_t i = 0; i < all.n; i++) {
        const pl_segment_t *seg = all.segs[i];
        if (strcmp(seg->service, service) != 0) {
            continue; /* another test's */
        }
        ours++;
        producer_check(seg, topic, false);
        for (size_t k = 0; k < seg->n_spans; k++) {
            const char *t = pl_span_tag(seg->spans[k], "mq.topic");
            cr_assert(strstr(seg->spans[k]->operationname, "skywalking-") == NULL &&
                          (t == NULL || strstr(t, "skywalking-") == NULL),
                      "the reporter's own produce was traced: %s", seg->spans[k]->operationname);
        }
    }
    cr_assert_eq(ours, 2, "the two produced messages' segments went through the reporter");
    pl_segments_free(&all);
}
