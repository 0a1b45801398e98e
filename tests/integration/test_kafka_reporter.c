/*
 * test_kafka_reporter.c - the agent's Kafka reporter against the real fixture broker: what the
 * OAP's kafka-fetcher reads (topics, keys, SegmentObject / InstanceProperties / InstancePingPkg
 * values), read back independently with kcat and decoded with protobuf-c; exact accounting
 * through the public API; a backend that is down for the whole run; bad producer settings.
 *
 * The fixture's topics are shared with other tests, so every test uses its own service and
 * instance names and only looks at the records that carry them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kafka_test_env.h"
#include "logging.pb-c.h"
#include "management.pb-c.h"
#include "meter.pb-c.h"
#include "kafka/kafka_reporter.h"
#include "skywalking.h"
#include "test_agent_support.h"
#include "test_util.h"
#include "tracing.pb-c.h"

#define SEGMENT_PARTITIONS 3

/* ---- reading topics back with kcat ------------------------------------------------------ */

typedef struct record {
    char *key; /* NUL-terminated copy (keys are text here); NULL for a null key */
    uint8_t *value;
    size_t value_len;
} record_t;

typedef struct records {
    record_t *items;
    size_t count;
} records_t;

/* Parses "<len>:" (len may be -1) at *pos. Returns the length or -2 on malformed input. */
static long length_parse(const char *buf, size_t n, size_t *pos)
{
    char *end = NULL;
    char tmp[24];
    size_t i = 0;
    while (*pos + i < n && i < sizeof tmp - 1 && buf[*pos + i] != ':') {
        tmp[i] = buf[*pos + i];
        i++;
    }
    if (*pos + i >= n || buf[*pos + i] != ':' || i == 0) {
        return -2;
    }
    tmp[i] = '\0';
    long v = strtol(tmp, &end, 10);
    if (*end != '\0' || v < -1) {
        return -2;
    }
    *pos += i + 1;
    return v;
}

/* Every record of every partition of `topic`, read with kcat in a binary-safe format: the key
 * and value are each preceded by their decimal length and ':' (-f '%K:%k%S:%s'). */
static records_t topic_read_x(const char *bootstrap, const char *topic, const char *const *props)
{
    char *argv[32] = {
        "timeout", "60",          "kcat", "-C",        "-q", "-e",         "-b", (char *)bootstrap,
        "-t",      (char *)topic, "-o",   "beginning", "-f", "%K:%k%S:%s", NULL};
    int argc = 14;
    for (; props && *props && argc < 30; props++) { /* -X name=value: security settings */
        argv[argc++] = "-X";
        argv[argc++] = (char *)*props;
    }
    argv[argc] = NULL;
    char *out = NULL;
    size_t n = 0;
    int rc = sw_test_kafka_exec(argv, &out, &n);
    cr_assert_eq(rc, 0, "kcat -C -t %s failed (exit %d)", topic, rc);
    records_t rs = {NULL, 0};
    size_t pos = 0, cap = 0;
    while (pos < n) {
        long klen = length_parse(out, n, &pos);
        cr_assert_geq(klen, -1, "kcat output for %s: bad key length at byte %zu", topic, pos);
        cr_assert_leq(pos + (size_t)(klen < 0 ? 0 : klen), n, "kcat output truncated (key)");
        record_t r = {NULL, NULL, 0};
        if (klen >= 0) {
            r.key = strndup(out + pos, (size_t)klen);
            pos += (size_t)klen;
        }
        long vlen = length_parse(out, n, &pos);
        cr_assert_geq(vlen, -1, "kcat output for %s: bad value length at byte %zu", topic, pos);
        cr_assert_leq(pos + (size_t)(vlen < 0 ? 0 : vlen), n, "kcat output truncated (value)");
        if (vlen > 0) {
            r.value = malloc((size_t)vlen);
            memcpy(r.value, out + pos, (size_t)vlen);
            r.value_len = (size_t)vlen;
            pos += (size_t)vlen;
        }
        if (rs.count == cap) {
            cap = cap ? cap * 2 : 256;
            rs.items = realloc(rs.items, cap * sizeof *rs.items);
            cr_assert_not_null(rs.items);
        }
        rs.items[rs.count++] = r;
    }
    free(out);
    return rs;
}

static records_t topic_read(const char *bootstrap, const char *topic)
{
    return topic_read_x(bootstrap, topic, NULL);
}

static void records_free(records_t *rs)
{
    for (size_t i = 0; i < rs->count; i++) {
        free(rs->items[i].key);
        free(rs->items[i].value);
    }
    free(rs->items);
}

/* ---- checks ---------------------------------------------------------------------------- */

static int string_compare(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Decodes every record of the segment topic; for those of `service`, asserts key ==
 * traceSegmentId and that no segment id appears twice. Returns how many belong to service. */
static size_t segments_check(const records_t *rs, const char *service, const char *instance)
{
    char **ids = calloc(rs->count + 1, sizeof *ids);
    size_t mine = 0;
    for (size_t i = 0; i < rs->count; i++) {
        const record_t *r = &rs->items[i];
        Skywalking__V3__SegmentObject *seg =
            skywalking__v3__segment_object__unpack(NULL, r->value_len, r->value);
        if (seg == NULL || strcmp(seg->service, service) != 0) {
            if (seg != NULL) {
                skywalking__v3__segment_object__free_unpacked(seg, NULL);
            }
            continue; /* another test's record (or not ours to judge) */
        }
        cr_assert_not_null(r->key, "segment %s has a null key", seg->tracesegmentid);
        cr_assert_str_eq(r->key, seg->tracesegmentid, "key != traceSegmentId");
        cr_assert_str_eq(seg->serviceinstance, instance);
        cr_assert_gt(seg->n_spans, 0, "segment %s without spans", seg->tracesegmentid);
        ids[mine++] = strdup(seg->tracesegmentid);
        skywalking__v3__segment_object__free_unpacked(seg, NULL);
    }
    qsort(ids, mine, sizeof *ids, string_compare);
    for (size_t i = 1; i < mine; i++) {
        cr_assert_str_neq(ids[i - 1], ids[i], "segment %s delivered twice", ids[i]);
    }
    for (size_t i = 0; i < mine; i++) {
        free(ids[i]);
    }
    free(ids);
    return mine;
}

static const char *property_find(const Skywalking__V3__InstanceProperties *p, const char *key)
{
    for (size_t i = 0; i < p->n_properties; i++) {
        if (strcmp(p->properties[i]->key, key) == 0) {
            return p->properties[i]->value;
        }
    }
    return NULL;
}

/* Asserts the management records of `instance`: at least one InstanceProperties under
 * register-<instance> and one InstancePingPkg under <instance>, all naming service. */
static void management_check(const records_t *rs, const char *service, const char *instance)
{
    char register_key[300];
    snprintf(register_key, sizeof register_key, "register-%s", instance);
    size_t props = 0, pings = 0;
    for (size_t i = 0; i < rs->count; i++) {
        const record_t *r = &rs->items[i];
        if (r->key != NULL && strcmp(r->key, register_key) == 0) {
            Skywalking__V3__InstanceProperties *p =
                skywalking__v3__instance_properties__unpack(NULL, r->value_len, r->value);
            cr_assert_not_null(p, "value under %s is not an InstanceProperties", r->key);
            cr_assert_str_eq(p->service, service);
            cr_assert_str_eq(p->serviceinstance, instance);
            const char *lang = property_find(p, "language");
            cr_assert(lang != NULL && strcmp(lang, "C") == 0, "language property missing");
            cr_assert_not_null(property_find(p, "Process No."));
            cr_assert_not_null(property_find(p, "OS Name"));
            cr_assert_not_null(property_find(p, "hostname"));
            cr_assert_not_null(property_find(p, "ipv4"), "no ipv4 property");
            skywalking__v3__instance_properties__free_unpacked(p, NULL);
            props++;
        } else if (r->key != NULL && strcmp(r->key, instance) == 0) {
            Skywalking__V3__InstancePingPkg *p =
                skywalking__v3__instance_ping_pkg__unpack(NULL, r->value_len, r->value);
            cr_assert_not_null(p, "value under %s is not an InstancePingPkg", r->key);
            cr_assert_str_eq(p->service, service);
            cr_assert_str_eq(p->serviceinstance, instance);
            skywalking__v3__instance_ping_pkg__free_unpacked(p, NULL);
            pings++;
        }
    }
    cr_assert_geq(props, 1, "no InstanceProperties under %s", register_key);
    cr_assert_geq(pings, 1, "no InstancePingPkg under %s", instance);
}

static void unique_name(char *buf, size_t len, const char *what)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(buf, len, "kr-%s-%ld-%ld%09ld", what, (long)getpid(), (long)ts.tv_sec, ts.tv_nsec);
}

static void fixture_attach(sw_test_kafka_t *k)
{
    cr_assert_eq(sw_test_kafka_fixture(k), 0, "no fixture broker (run through ctest)");
}

/* ---- the demo program, configured by the environment ------------------------------------ */

typedef struct demo_result {
    unsigned long long finished, reported, dropped, failed;
} demo_result_t;

static demo_result_t demo_run(const char *bootstrap, const char *ns, const char *service,
                              const char *instance)
{
    cr_assert_eq(setenv("SW_REPORTER", "kafka", 1), 0);
    cr_assert_eq(setenv("SW_KAFKA_BOOTSTRAP_SERVERS", bootstrap, 1), 0);
    cr_assert_eq(setenv("SW_KAFKA_NAMESPACE", ns, 1), 0);
    cr_assert_eq(setenv("SW_AGENT_NAME", service, 1), 0);
    cr_assert_eq(setenv("SW_AGENT_INSTANCE_NAME", instance, 1), 0);
    char *argv[] = {SW_DEMO_PATH, "30", NULL};
    char *out = NULL;
    int rc = sw_test_kafka_exec(argv, &out, NULL);
    cr_assert_eq(rc, 0, "sw_demo exited with %d", rc);
    demo_result_t d = {0, 0, 0, 0};
    const char *line = out ? strstr(out, "segments: finished=") : NULL;
    cr_assert_not_null(line, "sw_demo printed no counters:\n%s", out ? out : "");
    cr_assert_eq(sscanf(line, "segments: finished=%llu reported=%llu dropped=%llu failed=%llu",
                        &d.finished, &d.reported, &d.dropped, &d.failed),
                 4, "cannot parse: %s", line);
    free(out);
    /* The demo's own variables must not leak into a later test of this process. */
    unsetenv("SW_REPORTER");
    unsetenv("SW_KAFKA_BOOTSTRAP_SERVERS");
    unsetenv("SW_KAFKA_NAMESPACE");
    unsetenv("SW_AGENT_NAME");
    unsetenv("SW_AGENT_INSTANCE_NAME");
    return d;
}

static void demo_check(const char *ns)
{
    sw_test_kafka_t k;
    fixture_attach(&k);
    char seg_topic[128], mgmt_topic[128];
    snprintf(seg_topic, sizeof seg_topic, "%s%sskywalking-segments", ns, ns[0] ? "-" : "");
    snprintf(mgmt_topic, sizeof mgmt_topic, "%s%sskywalking-managements", ns, ns[0] ? "-" : "");
    if (ns[0] != '\0') {
        cr_assert_eq(sw_test_kafka_create_topic(&k, seg_topic, SEGMENT_PARTITIONS), 0);
        cr_assert_eq(sw_test_kafka_create_topic(&k, mgmt_topic, 1), 0);
    }
    char service[96], instance[96];
    unique_name(service, sizeof service, "demo");
    unique_name(instance, sizeof instance, "inst");
    demo_result_t d = demo_run(k.bootstrap, ns, service, instance);
    cr_assert_gt(d.finished, 0);
    cr_assert_eq(d.finished, d.reported + d.dropped + d.failed);
    cr_assert_eq(d.failed, 0, "a live broker failed %llu segments", d.failed);
    cr_assert_eq(d.dropped, 0, "the demo's few segments were dropped");

    records_t segs = topic_read(k.bootstrap, seg_topic);
    cr_assert_eq(segments_check(&segs, service, instance), d.reported,
                 "topic %s holds a different number of segments than reported", seg_topic);
    records_free(&segs);
    records_t mgmt = topic_read(k.bootstrap, mgmt_topic);
    management_check(&mgmt, service, instance);
    records_free(&mgmt);
    if (ns[0] != '\0') { /* nothing of this run went to the unprefixed topics */
        records_t plain = topic_read(k.bootstrap, "skywalking-segments");
        cr_assert_eq(segments_check(&plain, service, instance), 0);
        records_free(&plain);
    }
}

Test(kafka_reporter, demo_segments_and_management, .timeout = 240)
{
    demo_check("");
}

Test(kafka_reporter, demo_with_namespace, .timeout = 240)
{
    demo_check("krns");
}

/* ---- through the public API in this process --------------------------------------------- */

#define API_THREADS             4
#define API_SEGMENTS_PER_THREAD 250

static void *segments_make(void *arg)
{
    int n = *(const int *)arg;
    for (int i = 0; i < n; i++) {
        sw_entry_span_begin("GET /kafka-reporter", NULL);
        sw_local_span_begin("work");
        sw_span_tag("i", "x");
        sw_span_end();
        sw_exit_span_begin("SELECT", "db:5432");
        sw_span_end();
        sw_span_end();
    }
    return NULL;
}

static void threads_run(int per_thread)
{
    pthread_t t[API_THREADS];
    for (int i = 0; i < API_THREADS; i++) {
        cr_assert_eq(pthread_create(&t[i], NULL, segments_make, &per_thread), 0);
    }
    for (int i = 0; i < API_THREADS; i++) {
        pthread_join(t[i], NULL);
    }
}

static void config_kafka(sw_config_t *cfg, const char *bootstrap, const char *service,
                         const char *producer_config)
{
    char err[512];
    sw_config_init(cfg);
    cr_assert_eq(sw_config_set(cfg, "SW_REPORTER", "kafka", err, sizeof err), 0, "%s", err);
    cr_assert_eq(sw_config_set(cfg, "SW_KAFKA_BOOTSTRAP_SERVERS", bootstrap, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(sw_config_set(cfg, "SW_AGENT_NAME", service, err, sizeof err), 0, "%s", err);
    cr_assert_eq(sw_config_set(cfg, "SW_AGENT_INSTANCE_NAME", service, err, sizeof err), 0);
    cr_assert_eq(sw_config_set(cfg, "SW_KAFKA_PRODUCER_CONFIG", producer_config, err, sizeof err),
                 0, "%s", err);
}

Test(kafka_reporter, api_exact_accounting, .timeout = 240)
{
    sw_test_kafka_t k;
    fixture_attach(&k);
    char service[96];
    unique_name(service, sizeof service, "api");
    sw_config_t cfg;
    config_kafka(&cfg, k.bootstrap, service, "linger.ms=10,compression.type=gzip");
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
    threads_run(API_SEGMENTS_PER_THREAD);
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_finished, API_THREADS * API_SEGMENTS_PER_THREAD);
    cr_assert_eq(st.segments_failed, 0, "a live broker failed segments");
    cr_assert_gt(st.segments_reported, 0);

    records_t segs = topic_read(k.bootstrap, "skywalking-segments");
    cr_assert_eq(segments_check(&segs, service, service), st.segments_reported,
                 "the topic must hold exactly the reported segments");
    records_free(&segs);
}

/* SW_KAFKA_TOPIC_* replace the topic names; the namespace still prefixes them. */
Test(kafka_reporter, topic_overrides_with_namespace, .timeout = 240)
{
    sw_test_kafka_t k;
    fixture_attach(&k);
    cr_assert_eq(sw_test_kafka_create_topic(&k, "krns-kr-segs", 2), 0);
    cr_assert_eq(sw_test_kafka_create_topic(&k, "krns-kr-mgmt", 1), 0);
    char service[96], err[256];
    unique_name(service, sizeof service, "ovr");
    sw_config_t cfg;
    config_kafka(&cfg, k.bootstrap, service, "");
    cr_assert_eq(sw_config_set(&cfg, "SW_KAFKA_NAMESPACE", "krns", err, sizeof err), 0);
    cr_assert_eq(sw_config_set(&cfg, "SW_KAFKA_TOPIC_SEGMENT", "kr-segs", err, sizeof err), 0);
    cr_assert_eq(sw_config_set(&cfg, "SW_KAFKA_TOPIC_MANAGEMENT", "kr-mgmt", err, sizeof err), 0);
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
    threads_run(10);
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_reported, API_THREADS * 10);
    records_t segs = topic_read(k.bootstrap, "krns-kr-segs");
    cr_assert_eq(segments_check(&segs, service, service), st.segments_reported);
    records_free(&segs);
    records_t mgmt = topic_read(k.bootstrap, "krns-kr-mgmt");
    management_check(&mgmt, service, service);
    records_free(&mgmt);
}

/* Counts the InstancePingPkg records of `instance` in the management topic. */
static size_t pings_count(const char *bootstrap, const char *instance)
{
    records_t rs = topic_read(bootstrap, "skywalking-managements");
    size_t n = 0;
    for (size_t i = 0; i < rs.count; i++) {
        n += rs.items[i].key != NULL && strcmp(rs.items[i].key, instance) == 0;
    }
    records_free(&rs);
    return n;
}

/* SW_AGENT_HEARTBEAT_PERIOD=1: the management thread keeps pinging while the agent runs
 * (one ping at start, then one per period). The wait is bounded: 30 reads of the topic. */
Test(kafka_reporter, heartbeat_pings_periodically, .timeout = 240)
{
    sw_test_kafka_t k;
    fixture_attach(&k);
    char service[96], err[256];
    unique_name(service, sizeof service, "beat");
    sw_config_t cfg;
    config_kafka(&cfg, k.bootstrap, service, "linger.ms=0");
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_HEARTBEAT_PERIOD", "1", err, sizeof err), 0);
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
    size_t pings = 0;
    for (int attempt = 0; attempt < 30 && pings < 3; attempt++) {
        pings = pings_count(k.bootstrap, service);
        if (pings < 3) {
            struct timespec pause = {0, 500 * 1000 * 1000}; /* between reads, not for sync */
            nanosleep(&pause, NULL);
        }
    }
    agent_test_stop();
    cr_assert_geq(pings, 3, "only %zu pings of %s after 30 reads of the topic", pings, service);
}

/* close() wakes the management thread at once: with a one-day heartbeat period sw_shutdown
 * still returns (the test's timeout is the bound), and the start-up records were sent. */
Test(kafka_reporter, shutdown_wakes_the_management_thread, .timeout = 60)
{
    sw_test_kafka_t k;
    fixture_attach(&k);
    char service[96], err[256];
    unique_name(service, sizeof service, "wake");
    sw_config_t cfg;
    config_kafka(&cfg, k.bootstrap, service, "");
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_HEARTBEAT_PERIOD", "86400", err, sizeof err), 0);
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
    threads_run(1);
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_reported, API_THREADS);
    records_t mgmt = topic_read(k.bootstrap, "skywalking-managements");
    management_check(&mgmt, service, service);
    records_free(&mgmt);
}

/* The broker is unreachable for the whole run. Host threads must still get through every span
 * pair (the test's timeout bounds the whole run, shutdown included); no segment is reported;
 * each is dropped (queue full) or failed (no metadata within max.block.ms); memory stays
 * bounded (the producer never buffers without metadata, the queue is fixed). */
Test(kafka_reporter, backend_down_never_blocks_hosts, .timeout = 120)
{
    char bootstrap[64], service[96];
    /* bound for the life of the process, so nobody else takes the port */
    int port = loopback_refused_port(true);
    cr_assert_gt(port, 0, "no free loopback port: %s", strerror(errno));
    snprintf(bootstrap, sizeof bootstrap, "127.0.0.1:%d", port);
    unique_name(service, sizeof service, "down");
    sw_config_t cfg;
    config_kafka(&cfg, bootstrap, service,
                 "max.block.ms=300,request.timeout.ms=300,delivery.timeout.ms=1000,"
                 "buffer.memory=1048576,reconnect.backoff.max.ms=100");
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
    /* Warm-up: the first send waits max.block.ms while the threads fill the carrier, so the
       queue and the segment pool reach their full (bounded) size here. */
    threads_run(2000);
    long before = proc_status_kb("VmRSS");
    threads_run(3100);
    long after = proc_status_kb("VmRSS");
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.segments_finished, API_THREADS * 5100);
    cr_assert_eq(st.segments_reported, 0, "nothing can be reported without a broker");
    cr_assert_eq(st.segments_dropped + st.segments_failed, st.segments_finished);
    cr_assert_gt(st.segments_failed, 0, "the reporter never tried");
    /* After the warm-up, 12400 more segments (each with a 16 KiB arena) would take ~200 MB
       if anything kept them; bound the growth well below that but above allocator noise. Sanitizer
       runtimes (quarantine, shadow) make RSS meaningless, so only a plain build checks it. */
#if !TEST_SANITIZED
    cr_assert_lt(after - before, 4096, "RSS grew by %ld KiB while the broker was down",
                 after - before);
#else
    (void)before;
    (void)after;
#endif
}

/* The broker is unreachable and max.block.ms keeps its default (60 s): every kp_send of the
 * drain would wait that long. sw_shutdown must still return after the drain's grace period
 * (SW_KAFKA_FLUSH_TIMEOUT_MS), with every segment accounted for. The bound below is a
 * functional one (no stall of a minute per batch), far above the expected ~5 s. */
Test(kafka_reporter, shutdown_with_the_broker_down_is_bounded, .timeout = 120)
{
    char bootstrap[64], service[96];
    /* bound for the life of the process, so nobody else takes the port */
    int port = loopback_refused_port(true);
    cr_assert_gt(port, 0, "no free loopback port: %s", strerror(errno));
    snprintf(bootstrap, sizeof bootstrap, "127.0.0.1:%d", port);
    unique_name(service, sizeof service, "downexit");
    sw_config_t cfg;
    config_kafka(&cfg, bootstrap, service, "");
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
    threads_run(20);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sw_stats_t st = agent_test_stop();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_assert_lt(seconds, 30.0, "sw_shutdown took %.1f s with the broker down", seconds);
    cr_assert_eq(st.segments_reported, 0);
    cr_assert_eq(st.segments_dropped + st.segments_failed, st.segments_finished);
    cr_assert_eq(st.segments_finished, API_THREADS * 20);
}

/* ---- configuration errors (no broker needed) -------------------------------------------- */

/* Creates the reporter directly (no broker is contacted) and expects SW_ECONFIG with a
 * message that names `must_name`. */
static void create_fails_with(const char *producer_config, const char *must_name)
{
    sw_config_t cfg;
    config_kafka(&cfg, "127.0.0.1:9", "cfgerr", producer_config);
    sw__report_counters_t counters = {0, 0};
    sw__reporter_t *r = NULL;
    char err[512] = "";
    int rc = sw__kafka_reporter_create(&cfg, &counters, &r, err, sizeof err);
    cr_assert_eq(rc, SW_ECONFIG, "'%s' was accepted (%s)", producer_config, sw_strerror(rc));
    cr_assert_null(r);
    cr_assert(strstr(err, must_name) != NULL, "the message '%s' does not name '%s'", err,
              must_name);
}

Test(kafka_reporter, bad_producer_config_is_a_config_error)
{
    create_fails_with("acks=2", "acks");
    create_fails_with("no.such.property=1", "no.such.property");
    create_fails_with("linger.ms", "linger.ms");
    create_fails_with(" =5", "SW_KAFKA_PRODUCER_CONFIG");
    create_fails_with("linger.ms=abc", "linger.ms");
    create_fails_with("enable.idempotence=true,acks=1", "acks");
    /* Security: bad values, missing credentials, a CA file that cannot be read (the TLS
       context is made when the reporter is created), a key password with no key. */
    create_fails_with("security.protocol=TLS", "security.protocol");
    create_fails_with("security.protocol=SASL_SSL", "sasl.jaas.config");
    create_fails_with("security.protocol=SSL,ssl.truststore.location=/nonexistent/ca.pem",
                      "/nonexistent/ca.pem");
    create_fails_with("security.protocol=SSL,ssl.key.password=pw-Zr1", "ssl.keystore.location");
    /* the whole run through sw_init too: the agent stays off */
    sw_config_t cfg;
    config_kafka(&cfg, "127.0.0.1:9", "cfgerr", "acks=2");
    cr_assert_eq(sw_init(&cfg), SW_ECONFIG);
    cr_assert_not(sw_enabled());
}

Test(kafka_reporter, empty_bootstrap_is_a_config_error)
{
    sw_config_t cfg;
    char err[256];
    sw_config_init(&cfg);
    cr_assert_eq(sw_config_set(&cfg, "SW_REPORTER", "kafka", err, sizeof err), 0);
    cr_assert_eq(sw_init(&cfg), SW_ECONFIG);
    cr_assert_not(sw_enabled());
}

Test(kafka_reporter, new_config_keys)
{
    sw_config_t cfg;
    char err[256];
    sw_config_init(&cfg);
    cr_assert_eq(cfg.heartbeat_period_s, 30);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_HEARTBEAT_PERIOD", "5", err, sizeof err), 0);
    cr_assert_eq(cfg.heartbeat_period_s, 5);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_HEARTBEAT_PERIOD", "0", err, sizeof err),
                 SW_ECONFIG);
    cr_assert(strstr(err, "SW_AGENT_HEARTBEAT_PERIOD") != NULL, "message: %s", err);
    cr_assert_eq(sw_config_set(&cfg, "SW_KAFKA_TOPIC_SEGMENT", "segs", err, sizeof err), 0);
    cr_assert_str_eq(cfg.kafka_topic_segment, "segs");
    cr_assert_eq(sw_config_set(&cfg, "SW_KAFKA_TOPIC_MANAGEMENT", "mgmt", err, sizeof err), 0);
    cr_assert_str_eq(cfg.kafka_topic_management, "mgmt");
}

/* ---- meters: skywalking-meters, key = instance, value = MeterDataCollection ---------------- */

/* The single value of `name` in a collection, or NAN. */
static double collection_value(const Skywalking__V3__MeterDataCollection *mc, const char *name)
{
    for (size_t i = 0; i < mc->n_meterdata; i++) {
        const Skywalking__V3__MeterData *md = mc->meterdata[i];
        if (md->metric_case == SKYWALKING__V3__METER_DATA__METRIC_SINGLE_VALUE &&
            strcmp(md->singlevalue->name, name) == 0) {
            return md->singlevalue->value;
        }
    }
    return NAN;
}

/* SW_METER_REPORT_INTERVAL=1: one record per period on skywalking-meters, read back with kcat
 * and decoded: the first element names service, instance and time, later ones do not; the
 * process, agent, producer and user meters are there with their values. */
Test(kafka_reporter, meters_reach_the_meter_topic, .timeout = 240)
{
    sw_test_kafka_t k;
    fixture_attach(&k);
    char service[96], err[256];
    unique_name(service, sizeof service, "meters");
    sw_meter_t *counter;
    sw_kv_t tag = {"queue", "orders"};
    cr_assert_eq(sw_meter_counter_new("kafka_test_jobs", &tag, 1, &counter), 0);
    sw_meter_counter_add(counter, 77);
    sw_config_t cfg;
    config_kafka(&cfg, k.bootstrap, service, "linger.ms=0");
    cr_assert_eq(sw_config_set(&cfg, "SW_METER_REPORT_INTERVAL", "1", err, sizeof err), 0, "%s",
                 err);
    int64_t started = (int64_t)time(NULL) * 1000;
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
    threads_run(10);
    size_t mine = 0;
    Skywalking__V3__MeterDataCollection *last = NULL;
    for (int attempt = 0; attempt < 30 && mine < 2; attempt++) {
        records_t rs = topic_read(k.bootstrap, "skywalking-meters");
        mine = 0;
        for (size_t i = 0; i < rs.count; i++) {
            if (rs.items[i].key == NULL || strcmp(rs.items[i].key, service) != 0) {
                continue;
            }
            mine++;
            if (last != NULL) {
                skywalking__v3__meter_data_collection__free_unpacked(last, NULL);
            }
            last = skywalking__v3__meter_data_collection__unpack(NULL, rs.items[i].value_len,
                                                                 rs.items[i].value);
            cr_assert_not_null(last, "a skywalking-meters value is not a MeterDataCollection");
        }
        records_free(&rs);
        if (mine < 2) {
            struct timespec pause = {0, 500 * 1000 * 1000}; /* between reads, not for sync */
            nanosleep(&pause, NULL);
        }
    }
    agent_test_stop();
    cr_assert_geq(mine, 2, "only %zu meter records of %s after 30 reads", mine, service);
    cr_assert_gt(last->n_meterdata, 10);
    cr_assert_str_eq(last->meterdata[0]->service, service);
    cr_assert_str_eq(last->meterdata[0]->serviceinstance, service);
    cr_assert_geq(last->meterdata[0]->timestamp, started - 1000);
    for (size_t i = 1; i < last->n_meterdata; i++) {
        cr_assert_str_empty(last->meterdata[i]->service, "element %zu names the service", i);
        cr_assert_eq(last->meterdata[i]->timestamp, 0);
    }
    cr_assert_eq(collection_value(last, "kafka_test_jobs"), 77.0);
    cr_assert_gt(collection_value(last, "sw_c_process_rss_bytes"), 0);
    cr_assert_geq(collection_value(last, "sw_c_process_threads"), 1);
    cr_assert_eq(collection_value(last, "sw_c_producer_buffer_total_bytes"), 33554432.0,
                 "buffer.memory's default");
    cr_assert_gt(collection_value(last, "sw_c_producer_records_sent"), 0);
    cr_assert_eq(collection_value(last, "sw_c_segments_finished"), API_THREADS * 10.0);
    skywalking__v3__meter_data_collection__free_unpacked(last, NULL);
}

/* Application logs: topic [<ns>-]skywalking-logs, key = service, value = LogData, as the OAP's
   kafka-fetcher reads them; read back with kcat and decoded; the trace context is the active
   span's. */
Test(kafka_reporter, logs_to_the_logging_topic, .timeout = 240)
{
    sw_test_kafka_t k;
    fixture_attach(&k);
    cr_assert_eq(sw_test_kafka_create_topic(&k, "klog-skywalking-logs", 2), 0);
    cr_assert_eq(sw_test_kafka_create_topic(&k, "klog-skywalking-segments", 1), 0);
    cr_assert_eq(sw_test_kafka_create_topic(&k, "klog-skywalking-managements", 1), 0);
    char service[96], err[256];
    unique_name(service, sizeof service, "logs");
    sw_config_t cfg;
    config_kafka(&cfg, k.bootstrap, service, "linger.ms=5");
    cr_assert_eq(sw_config_set(&cfg, "SW_KAFKA_NAMESPACE", "klog", err, sizeof err), 0);
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
    const int n = 50;
    sw_snapshot_t snap;
    sw_entry_span_begin("GET /kafka-logs", NULL);
    cr_assert_eq(sw_capture(&snap), 0);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(sw_log(SW_SEVERITY_INFO, "kafka line %d", i), 0);
    }
    sw_span_end();
    sw_stats_t st = agent_test_stop();
    cr_assert_eq(st.logs_recorded, (uint64_t)n);
    cr_assert_eq(st.logs_reported, (uint64_t)n, "reported %llu failed %llu dropped %llu",
                 (unsigned long long)st.logs_reported, (unsigned long long)st.logs_failed,
                 (unsigned long long)st.logs_dropped);

    records_t rs = topic_read(k.bootstrap, "klog-skywalking-logs");
    size_t mine = 0;
    for (size_t i = 0; i < rs.count; i++) {
        const record_t *r = &rs.items[i];
        Skywalking__V3__LogData *log =
            skywalking__v3__log_data__unpack(NULL, r->value_len, r->value);
        cr_assert_not_null(log, "a record of klog-skywalking-logs is not a LogData");
        if (strcmp(log->service, service) == 0) {
            mine++;
            cr_expect_str_eq(r->key, service, "key must be the service");
            cr_expect_str_eq(log->serviceinstance, service);
            cr_expect_str_eq(log->endpoint, "GET /kafka-logs");
            cr_assert_not_null(log->body);
            cr_assert_not_null(log->body->text);
            cr_expect(strncmp(log->body->text->text, "kafka line ", 11) == 0, "text %s",
                      log->body->text->text);
            cr_assert_not_null(log->tracecontext);
            cr_expect_str_eq(log->tracecontext->traceid, snap.trace_id);
            cr_expect_str_eq(log->tracecontext->tracesegmentid, snap.segment_id);
            cr_expect_eq(log->tracecontext->spanid, 0);
            cr_assert_not_null(log->tags);
            cr_assert_geq(log->tags->n_data, 2);
            cr_expect_str_eq(log->tags->data[0]->key, "level");
            cr_expect_str_eq(log->tags->data[0]->value, "INFO");
            cr_expect_str_eq(log->tags->data[1]->key, "logger");
            cr_expect_gt(log->timestamp, 1600000000000LL);
        }
        skywalking__v3__log_data__free_unpacked(log, NULL);
    }
    records_free(&rs);
    cr_expect_eq(mine, (size_t)n, "the topic holds %zu lines of %s, %d were reported", mine,
                 service, n);
}

/* ---- security.protocol through SW_KAFKA_PRODUCER_CONFIG ---------------------------------- */

/* The fixture broker's --security files: listener ports and DIR/tls (broker.sh). */
static void fixture_file(const sw_test_kafka_t *k, const char *rel, char *out, size_t len)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", k->dir, rel);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s is missing: is the fixture broker started with --security?", path);
    cr_assert_not_null(fgets(out, (int)len, f), "%s is empty", path);
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
}

static void listener_address(const sw_test_kafka_t *k, const char *name, char *out, size_t len)
{
    char rel[64], port[16];
    snprintf(rel, sizeof rel, "node1/%s_port", name);
    fixture_file(k, rel, port, sizeof port);
    snprintf(out, len, "127.0.0.1:%s", port);
}

/* Log lines of the agent, collected while a secure run fails. */
static char said[16384];
static pthread_mutex_t said_lock = PTHREAD_MUTEX_INITIALIZER;

static void said_add(sw_log_level_t level, const char *message, void *opaque)
{
    (void)level;
    (void)opaque;
    pthread_mutex_lock(&said_lock);
    size_t n = strlen(said);
    snprintf(said + n, sizeof said - n, "%s\n", message);
    pthread_mutex_unlock(&said_lock);
}

/* Runs the agent's Kafka reporter through `bootstrap` with producer_config; returns its stats.
 * The host threads' 200 traced requests take well under a second whatever the broker says;
 * 10 s is the functional bound (no wait of max.block.ms = 60 s anywhere). */
static sw_stats_t secure_run(const char *bootstrap, const char *service,
                             const char *producer_config)
{
    sw_config_t cfg;
    config_kafka(&cfg, bootstrap, service, producer_config);
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
    double t0 = now_s();
    threads_run(50);
    double took = now_s() - t0;
    cr_assert_lt(took, 10.0, "the host threads took %.1f s: they blocked", took);
    return agent_test_stop();
}

/* SSL, SASL_PLAINTEXT (PLAIN) and SASL_SSL (SCRAM-SHA-512, JAAS) end to end: every segment
 * reported and on the topic, read back with kcat over the same listener. */
Test(kafka_reporter, security_protocols_end_to_end, .timeout = 300)
{
    sw_test_kafka_t k;
    fixture_attach(&k);
    char ca[600], user[64], pass[128], cfgs[3][1400], addr[3][64];
    snprintf(ca, sizeof ca, "%s/tls/ca.pem", k.dir);
    fixture_file(&k, "tls/sasl_user", user, sizeof user);
    fixture_file(&k, "tls/sasl_password", pass, sizeof pass);
    listener_address(&k, "ssl", addr[0], sizeof addr[0]);
    snprintf(cfgs[0], sizeof cfgs[0],
             "security.protocol=SSL,ssl.truststore.type=PEM,ssl.truststore.location=%s", ca);
    listener_address(&k, "sasl", addr[1], sizeof addr[1]);
    snprintf(cfgs[1], sizeof cfgs[1],
             "security.protocol=SASL_PLAINTEXT,sasl.mechanism=PLAIN,sasl.username=%s,"
             "sasl.password=%s",
             user, pass);
    listener_address(&k, "sasl_ssl", addr[2], sizeof addr[2]);
    snprintf(cfgs[2], sizeof cfgs[2],
             "security.protocol=SASL_SSL,ssl.truststore.location=%s,sasl.mechanism=SCRAM-SHA-512,"
             "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
             "username=\"%s\" password=\"%s\";",
             ca, user, pass);
    const char *protocols[] = {"SSL", "SASL_PLAINTEXT", "SASL_SSL"};
    for (int i = 0; i < 3; i++) {
        char service[96];
        unique_name(service, sizeof service, protocols[i]);
        sw_stats_t st = secure_run(addr[i], service, cfgs[i]);
        cr_assert_eq(st.segments_failed, 0, "%s: %llu segments failed", protocols[i],
                     (unsigned long long)st.segments_failed);
        cr_assert_gt(st.segments_reported, 0, "%s: nothing reported", protocols[i]);
        char xp[64], xca[640], xu[100], xpw[160];
        snprintf(xp, sizeof xp, "security.protocol=%s", protocols[i]);
        snprintf(xca, sizeof xca, "ssl.ca.location=%s", ca);
        snprintf(xu, sizeof xu, "sasl.username=%s", user);
        snprintf(xpw, sizeof xpw, "sasl.password=%s", pass);
        /* kcat reads back with PLAIN (see test_producer_security.c for why not SCRAM). */
        const char *props[] = {xp, xca, "sasl.mechanisms=PLAIN", xu, xpw, NULL};
        if (i == 0) {
            props[2] = NULL;
        }
        records_t segs = topic_read_x(addr[i], "skywalking-segments", props);
        cr_assert_eq(segments_check(&segs, service, service), st.segments_reported,
                     "%s: the topic must hold exactly the reported segments", protocols[i]);
        records_free(&segs);
    }
}

/* A wrong password, a wrong CA and a host name mismatch: no segment is reported, every one
 * is failed or dropped (sw_stats), the hosts never block (the test's timeout), and the log
 * says what went wrong, naming the broker, without the password. */
Test(kafka_reporter, security_failures_are_counted_and_said, .timeout = 300)
{
    sw_test_kafka_t k;
    fixture_attach(&k);
    char ca[600], wrong_ca[600], user[64], cfgs[3][1400], addr[3][64];
    snprintf(ca, sizeof ca, "%s/tls/ca.pem", k.dir);
    snprintf(wrong_ca, sizeof wrong_ca, "%s/tls/wrong-ca.pem", k.dir);
    fixture_file(&k, "tls/sasl_user", user, sizeof user);
    const char *wrong_pw = "wrong-pw-Kq81";
    listener_address(&k, "sasl_ssl", addr[0], sizeof addr[0]);
    snprintf(cfgs[0], sizeof cfgs[0],
             "security.protocol=SASL_SSL,ssl.ca.location=%s,sasl.mechanism=SCRAM-SHA-256,"
             "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
             "username=\"%s\" password=\"%s\";",
             ca, user, wrong_pw);
    listener_address(&k, "ssl", addr[1], sizeof addr[1]);
    snprintf(cfgs[1], sizeof cfgs[1], "security.protocol=SSL,ssl.ca.location=%s", wrong_ca);
    listener_address(&k, "badhost", addr[2], sizeof addr[2]);
    snprintf(cfgs[2], sizeof cfgs[2], "security.protocol=SSL,ssl.ca.location=%s", ca);
    const char *expect[][2] = {{"SCRAM-SHA-256", "KP_EAUTH"},
                               {"not trusted", "KP_ETLS_UNTRUSTED"},
                               {"does not name 127.0.0.1", "KP_ETLS_HOSTNAME"}};
    for (int i = 0; i < 3; i++) {
        char service[96];
        unique_name(service, sizeof service, "secfail");
        said[0] = '\0';
        sw_set_log_handler(said_add, NULL);
        sw_stats_t st = secure_run(addr[i], service, cfgs[i]);
        sw_set_log_handler(NULL, NULL);
        cr_assert_eq(st.segments_reported, 0, "case %d: reported without valid credentials", i);
        cr_assert_gt(st.segments_failed, 0, "case %d: no failed segment in sw_stats", i);
        cr_assert_not_null(strstr(said, expect[i][0]), "case %d: '%s' not said:\n%s", i,
                           expect[i][0], said);
        cr_assert_not_null(strstr(said, expect[i][1]), "case %d: '%s' not said:\n%s", i,
                           expect[i][1], said);
        cr_assert_not_null(strstr(said, addr[i]), "case %d: the broker is not named:\n%s", i, said);
        cr_assert_null(strstr(said, wrong_pw), "the password was logged:\n%s", said);
        cr_assert_null(strstr(said, "ScramLoginModule"), "the JAAS text was logged:\n%s", said);
    }
}
