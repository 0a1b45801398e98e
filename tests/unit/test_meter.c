/*
 * test_meter.c - the meter registry (agent/src/meter/): exact concurrent recording, histogram
 * bucket edges, validation, deduplication and the SW_METER_MAX bound; the /proc/self readings;
 * one period's MeterData messages (decoded with protobuf-c) and their Kafka collection; and the
 * dynamic configuration (config/dynamic_config.c) as configuration discovery applies it
 * (grpc/cds.c: same UUID, bad values, unknown keys, defaults restored).
 *
 * Criterion runs each test in its own process, so each starts with an empty registry.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command.pb-c.h"
#include "config/dynamic_config.h"
#include "meter.pb-c.h"
#include "meter/meter.h"
#include "meter/process_meters.h"
#include "grpc/cds.h"
#include "meter/meter_report.h"
#include "skywalking.h"
#include "test_agent_support.h"

#ifndef SW_TEST_MAL_FILE
#error "SW_TEST_MAL_FILE (agent/contrib/oap/meter-analyzer-config/skywalking-c.yaml) is needed"
#endif

/* ---- recording ------------------------------------------------------------------------- */

#define THREADS    4
#define PER_THREAD 50000

static sw_meter_t *shared_counter, *shared_histogram;

static void *hammer(void *arg)
{
    (void)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        sw_meter_counter_add(shared_counter, 1.0);
        sw_meter_histogram_add(shared_histogram, (double)(i % 3) * 10.0); /* 0, 10, 20 */
    }
    return NULL;
}

Test(meter, concurrent_recording_is_exact)
{
    const double steps[] = {0, 10, 20};
    sw_kv_t tag = {"pool", "main"};
    cr_assert_eq(sw_meter_counter_new("requests_total", &tag, 1, &shared_counter), 0);
    cr_assert_eq(sw_meter_histogram_new("latency", NULL, 0, steps, 3, &shared_histogram), 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        cr_assert_eq(pthread_create(&t[i], NULL, hammer, NULL), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    double v;
    cr_assert_eq(sw_meter_value(shared_counter, &v), 0);
    cr_assert_eq(v, (double)THREADS * PER_THREAD, "counter %.1f", v);
    cr_assert_eq(sw_meter_value(shared_histogram, &v), 0);
    cr_assert_eq(v, (double)THREADS * PER_THREAD);
    uint64_t per_bucket[3] = {0};
    for (int i = 0; i < PER_THREAD; i++) {
        per_bucket[i % 3] += THREADS;
    }
    for (int b = 0; b < 3; b++) {
        cr_assert_eq(atomic_load(&shared_histogram->counts[b]), per_bucket[b], "bucket %d", b);
    }
}

Test(meter, histogram_bucket_edges)
{
    const double steps[] = {0, 10, 100};
    cr_assert_eq(sw__meter_bucket_index(steps, 3, -0.5), -1, "below the first step: not counted");
    cr_assert_eq(sw__meter_bucket_index(steps, 3, 0), 0, "a value equal to a step: its bucket");
    cr_assert_eq(sw__meter_bucket_index(steps, 3, 9.999), 0);
    cr_assert_eq(sw__meter_bucket_index(steps, 3, 10), 1);
    cr_assert_eq(sw__meter_bucket_index(steps, 3, 99.99), 1);
    cr_assert_eq(sw__meter_bucket_index(steps, 3, 100), 2);
    cr_assert_eq(sw__meter_bucket_index(steps, 3, 1e300), 2, "the last bucket is open");
    cr_assert_eq(sw__meter_bucket_index(steps, 3, NAN), -1);
    const double one[] = {5};
    cr_assert_eq(sw__meter_bucket_index(one, 1, 5), 0);
    cr_assert_eq(sw__meter_bucket_index(one, 1, 4), -1);

    sw_meter_t *h;
    cr_assert_eq(sw_meter_histogram_new("edges", NULL, 0, steps, 3, &h), 0);
    const double values[] = {-1, 0, 5, 10, 50, 100, 1000, NAN};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        sw_meter_histogram_add(h, values[i]);
    }
    cr_assert_eq(atomic_load(&h->counts[0]), 2);
    cr_assert_eq(atomic_load(&h->counts[1]), 2);
    cr_assert_eq(atomic_load(&h->counts[2]), 2);
}

static double supplied = 7.5;
static double supplier(void *opaque)
{
    return *(double *)opaque;
}

Test(meter, gauges_and_negative_increments)
{
    sw_meter_t *g, *cb, *c;
    cr_assert_eq(sw_meter_gauge_new("queue_depth", NULL, 0, &g), 0);
    double v = -1;
    cr_assert_eq(sw_meter_value(g, &v), 0);
    cr_assert_eq(v, 0.0);
    sw_meter_gauge_set(g, 42.25);
    cr_assert_eq(sw_meter_value(g, &v), 0);
    cr_assert_eq(v, 42.25);
    cr_assert_eq(sw_meter_gauge_callback_new("pool_active", NULL, 0, supplier, &supplied, &cb), 0);
    cr_assert_eq(sw_meter_value(cb, &v), 0);
    cr_assert_eq(v, 7.5);
    cr_assert_eq(sw_meter_counter_new("balance", NULL, 0, &c), 0);
    sw_meter_counter_add(c, 5);
    sw_meter_counter_add(c, -2);
    cr_assert_eq(sw_meter_value(c, &v), 0);
    cr_assert_eq(v, 3.0);
    /* Operations of another kind are ignored. */
    sw_meter_gauge_set(c, 100);
    sw_meter_counter_add(g, 1);
    sw_meter_histogram_add(c, 1);
    sw_meter_counter_add(NULL, 1);
    cr_assert_eq(sw_meter_value(c, &v), 0);
    cr_assert_eq(v, 3.0);
    cr_assert_eq(sw_meter_value(g, &v), 0);
    cr_assert_eq(v, 42.25);
    cr_assert_eq(sw_meter_value(NULL, &v), SW_EINVAL);
}

Test(meter, validation_and_deduplication)
{
    sw_meter_t *m = NULL, *again = NULL;
    const char *bad_names[] = {"", "1st", "a-b", "a b", "sw_c_mine", NULL};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        cr_assert_eq(sw_meter_counter_new(bad_names[i], NULL, 0, &m), SW_EINVAL, "name %zu", i);
    }
    char long_name[SW_METER_NAME_MAX + 2];
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    cr_assert_eq(sw_meter_counter_new(long_name, NULL, 0, &m), SW_EINVAL);
    long_name[SW_METER_NAME_MAX] = '\0';
    cr_assert_eq(sw_meter_counter_new(long_name, NULL, 0, &m), 0, "exactly the maximum");

    sw_kv_t dup[] = {{"k", "1"}, {"k", "2"}};
    cr_assert_eq(sw_meter_counter_new("dup", dup, 2, &m), SW_EINVAL, "a label twice");
    sw_kv_t ctl[] = {{"k", "a\nb"}};
    cr_assert_eq(sw_meter_counter_new("ctl", ctl, 1, &m), SW_EINVAL, "control byte in a value");
    /* A label is a proto3 string: a value that is not valid UTF-8 would fail the meter stream
       at the OAP. Valid multi-byte values are fine. */
    sw_kv_t bad_utf8[] = {{"k", "caf\xe9"}};
    cr_assert_eq(sw_meter_counter_new("latin1", bad_utf8, 1, &m), SW_EINVAL, "invalid UTF-8 value");
    sw_kv_t good_utf8[] = {{"k", "caf\xc3\xa9"}};
    cr_assert_eq(sw_meter_counter_new("utf8", good_utf8, 1, &m), 0, "a valid UTF-8 value");
    sw_kv_t many[SW_METER_TAGS_MAX + 1];
    char keys[SW_METER_TAGS_MAX + 1][8];
    for (int i = 0; i <= SW_METER_TAGS_MAX; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        many[i] = (sw_kv_t){keys[i], "v"};
    }
    cr_assert_eq(sw_meter_counter_new("many", many, SW_METER_TAGS_MAX + 1, &m), SW_EINVAL);
    cr_assert_eq(sw_meter_counter_new("many", many, SW_METER_TAGS_MAX, &m), 0);

    const double desc[] = {1, 1}, nan_step[] = {0, NAN};
    cr_assert_eq(sw_meter_histogram_new("h", NULL, 0, desc, 2, &m), SW_EINVAL, "not ascending");
    cr_assert_eq(sw_meter_histogram_new("h", NULL, 0, nan_step, 2, &m), SW_EINVAL);
    cr_assert_eq(sw_meter_histogram_new("h", NULL, 0, desc, 0, &m), SW_EINVAL);
    cr_assert_eq(sw_meter_gauge_callback_new("cb", NULL, 0, NULL, NULL, &m), SW_EINVAL);

    sw_kv_t ab[] = {{"a", "1"}, {"b", "2"}}, ba[] = {{"b", "2"}, {"a", "1"}};
    cr_assert_eq(sw_meter_counter_new("same", ab, 2, &m), 0);
    cr_assert_eq(sw_meter_counter_new("same", ba, 2, &again), 0);
    cr_assert_eq(m, again, "same name and tags in another order: the same meter");
    cr_assert_eq(sw_meter_gauge_new("same", ab, 2, &again), SW_EINVAL, "same id, other kind");
    cr_assert_eq(sw_meter_counter_new("same", ab, 1, &again), 0);
    cr_assert_neq(m, again, "other tags: another meter");
}

Test(meter, registry_is_bounded)
{
    size_t before = sw__meter_registry_count();
    sw_meter_t *first = NULL, *m;
    char name[32];
    for (size_t i = before; i < SW_METER_MAX; i++) {
        snprintf(name, sizeof name, "m_%zu", i);
        cr_assert_eq(sw_meter_counter_new(name, NULL, 0, &m), 0, "meter %zu", i);
        if (first == NULL) {
            first = m;
        }
    }
    cr_assert_eq(sw__meter_registry_count(), SW_METER_MAX);
    cr_assert_eq(sw_meter_counter_new("one_too_many", NULL, 0, &m), SW_ELIMIT);
    snprintf(name, sizeof name, "m_%zu", before);
    cr_assert_eq(sw_meter_counter_new(name, NULL, 0, &m), 0, "an existing one is still found");
    cr_assert_eq(m, first);
    cr_assert_eq(sw__meter_registry_count(), SW_METER_MAX);
}

/* ---- /proc/self ------------------------------------------------------------------------ */

Test(meter, proc_stat_parse)
{
    /* A command name with spaces and parentheses; utime 250, stime 150 ticks, 7 threads. */
    const char *text = "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 "
                       "7 0 12345 1000000 200 18446744073709551615\n";
    double cpu = 0;
    uint32_t threads = 0;
    cr_assert(sw__process_stat_parse(text, 100, &cpu, &threads));
    cr_assert_float_eq(cpu, 4.0, 1e-9);
    cr_assert_eq(threads, 7);
    cr_assert_not(sw__process_stat_parse("1234 (x S 1 2", 100, &cpu, &threads));
    cr_assert_not(sw__process_stat_parse("1234 (x) S 1 2 3", 100, &cpu, &threads));
}

Test(meter, process_sample_follows_fds)
{
    sw__process_sample_t a, b;
    cr_assert_eq(sw__process_sample(&a), 0);
    cr_assert_gt(a.rss_bytes, 0);
    cr_assert_geq(a.threads, 1);
    cr_assert_geq(a.open_fds, 3, "stdin, stdout, stderr at least");
    int fds[10];
    for (int i = 0; i < 10; i++) {
        fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fds[i], 0);
    }
    cr_assert_eq(sw__process_sample(&b), 0);
    cr_assert_eq(b.open_fds, a.open_fds + 10, "open fds %u then %u", a.open_fds, b.open_fds);
    for (int i = 0; i < 10; i++) {
        close(fds[i]);
    }
}

/* ---- one period's messages --------------------------------------------------------------- */

/* A named test double: a reporter that carries meters but sends nothing (collect only). */
static int double_report_meters(sw__reporter_t *self, const sw__report_record_t *items, size_t n)
{
    (void)self;
    (void)items;
    (void)n;
    return 0;
}

static const Skywalking__V3__MeterData *find_meter(Skywalking__V3__MeterData **all, size_t n,
                                                   const char *name)
{
    for (size_t i = 0; i < n; i++) {
        const char *nm = all[i]->metric_case == SKYWALKING__V3__METER_DATA__METRIC_SINGLE_VALUE
                             ? all[i]->singlevalue->name
                             : all[i]->histogram->name;
        if (strcmp(nm, name) == 0) {
            return all[i];
        }
    }
    return NULL;
}

Test(meter, period_messages)
{
    sw_meter_t *c, *h;
    sw_kv_t tag = {"route", "/orders"};
    const double steps[] = {0, 5};
    cr_assert_eq(sw_meter_counter_new("orders_total", &tag, 1, &c), 0);
    sw_meter_counter_add(c, 3);
    cr_assert_eq(sw_meter_histogram_new("order_ms", NULL, 0, steps, 2, &h), 0);
    sw_meter_histogram_add(h, 1);
    sw_meter_histogram_add(h, 6);
    sw_meter_histogram_add(h, 7);

    sw_config_t cfg;
    sw_config_init(&cfg);
    snprintf(cfg.service_name, sizeof cfg.service_name, "svc");
    snprintf(cfg.instance_name, sizeof cfg.instance_name, "inst");
    sw__reporter_t dbl = {.name = "test double", .report_meters = double_report_meters};
    sw__meter_report_t *mr;
    cr_assert_eq(sw__meter_report_start(&cfg, &dbl, NULL, 0, sw_stats, false, &mr), 0);
    const sw__report_record_t *items;
    size_t n;
    cr_assert_eq(sw__meter_report_collect(mr, 1700000000123, &items, &n), 0);
    cr_assert_geq(n, 4 + 6 + 2, "process, agent and user meters: %zu", n);

    Skywalking__V3__MeterData **md = calloc(n, sizeof *md);
    for (size_t i = 0; i < n; i++) {
        md[i] = skywalking__v3__meter_data__unpack(NULL, items[i].len, items[i].data);
        cr_assert_not_null(md[i], "message %zu does not decode", i);
        if (i == 0) {
            cr_assert_str_eq(md[i]->service, "svc");
            cr_assert_str_eq(md[i]->serviceinstance, "inst");
            cr_assert_eq(md[i]->timestamp, 1700000000123);
        } else {
            cr_assert_str_empty(md[i]->service, "only the first element names the service");
            cr_assert_str_empty(md[i]->serviceinstance);
            cr_assert_eq(md[i]->timestamp, 0);
        }
    }
    const Skywalking__V3__MeterData *o = find_meter(md, n, "orders_total");
    cr_assert_not_null(o);
    cr_assert_eq(o->singlevalue->value, 3.0);
    cr_assert_eq(o->singlevalue->n_labels, 1);
    cr_assert_str_eq(o->singlevalue->labels[0]->name, "route");
    cr_assert_str_eq(o->singlevalue->labels[0]->value, "/orders");
    const Skywalking__V3__MeterData *hd = find_meter(md, n, "order_ms");
    cr_assert_not_null(hd);
    cr_assert_eq(hd->histogram->n_values, 2);
    cr_assert_eq(hd->histogram->values[0]->bucket, 0.0);
    cr_assert_eq(hd->histogram->values[0]->count, 1);
    cr_assert_eq(hd->histogram->values[1]->bucket, 5.0);
    cr_assert_eq(hd->histogram->values[1]->count, 2);
    const Skywalking__V3__MeterData *rss = find_meter(md, n, "sw_c_process_rss_bytes");
    cr_assert_not_null(rss);
    cr_assert_gt(rss->singlevalue->value, 0);
    const Skywalking__V3__MeterData *thr = find_meter(md, n, "sw_c_process_threads");
    cr_assert_not_null(thr);
    cr_assert_geq(thr->singlevalue->value, 1);
    cr_assert_not_null(find_meter(md, n, "sw_c_segments_finished"));
    cr_assert_null(find_meter(md, n, "sw_c_producer_records_sent"), "no producer here");
    /* Every agent meter has its rule in the MAL file users install in the OAP. */
    FILE *f = fopen(SW_TEST_MAL_FILE, "r");
    cr_assert_not_null(f, "cannot read %s", SW_TEST_MAL_FILE);
    char *mal = calloc(1, 1 << 16);
    size_t mal_len = fread(mal, 1, (1 << 16) - 1, f);
    mal[mal_len] = '\0';
    fclose(f);
    for (size_t i = 0; i < n; i++) {
        if (md[i]->metric_case != SKYWALKING__V3__METER_DATA__METRIC_SINGLE_VALUE ||
            strncmp(md[i]->singlevalue->name, SW__METER_PREFIX, 5) != 0) {
            continue;
        }
        char rule[192];
        snprintf(rule, sizeof rule, "- name: %s\n", md[i]->singlevalue->name);
        cr_assert(strstr(mal, rule) != NULL, "no MAL rule for %s", md[i]->singlevalue->name);
    }
    free(mal);

    /* The Kafka value: a MeterDataCollection of the same messages. */
    sw__bytes_t coll = {0};
    cr_assert_eq(sw__meter_collection_pack(items, n, &coll), 0);
    Skywalking__V3__MeterDataCollection *mc =
        skywalking__v3__meter_data_collection__unpack(NULL, coll.len, coll.data);
    cr_assert_not_null(mc);
    cr_assert_eq(mc->n_meterdata, n);
    cr_assert_str_eq(mc->meterdata[0]->service, "svc");
    skywalking__v3__meter_data_collection__free_unpacked(mc, NULL);
    sw__bytes_free(&coll);
    for (size_t i = 0; i < n; i++) {
        skywalking__v3__meter_data__free_unpacked(md[i], NULL);
    }
    free(md);
    sw__meter_report_stop(mr);
}

/* ---- dynamic configuration --------------------------------------------------------------- */

static char logged[4096];
static void log_capture(sw_log_level_t level, const char *message, void *opaque)
{
    (void)level;
    (void)opaque;
    size_t at = strlen(logged);
    snprintf(logged + at, sizeof logged - at, "%s\n", message);
}

/* Packs Commands with one ConfigurationDiscoveryCommand: SerialNumber, UUID, then kv pairs. */
static size_t cds_answer(uint8_t *buf, size_t cap, const char *uuid, const char *const *kv,
                         size_t n_kv)
{
    Skywalking__V3__KeyStringValuePair pairs[16], *ptrs[16];
    size_t n = 0;
    skywalking__v3__key_string_value_pair__init(&pairs[n]);
    pairs[n].key = "SerialNumber";
    pairs[n].value = "1";
    n++;
    skywalking__v3__key_string_value_pair__init(&pairs[n]);
    pairs[n].key = "UUID";
    pairs[n].value = (char *)uuid;
    n++;
    for (size_t i = 0; i + 1 < n_kv * 2; i += 2) {
        skywalking__v3__key_string_value_pair__init(&pairs[n]);
        pairs[n].key = (char *)kv[i];
        pairs[n].value = (char *)kv[i + 1];
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        ptrs[i] = &pairs[i];
    }
    Skywalking__V3__Command cmd = SKYWALKING__V3__COMMAND__INIT;
    cmd.command = SW_CDS_COMMAND;
    cmd.n_args = n;
    cmd.args = ptrs;
    Skywalking__V3__Command *cp = &cmd;
    Skywalking__V3__Commands cmds = SKYWALKING__V3__COMMANDS__INIT;
    cmds.n_commands = 1;
    cmds.commands = &cp;
    size_t len = skywalking__v3__commands__get_packed_size(&cmds);
    cr_assert_leq(len, cap);
    return skywalking__v3__commands__pack(&cmds, buf);
}

static void cds_config(sw_config_t *cfg)
{
    cfg->sample_n_per_3_secs = -1;
    cfg->span_limit_per_segment = 50;
    snprintf(cfg->ignore_suffix, sizeof cfg->ignore_suffix, ".startup");
}

static void trace_of(const char *op, int spans)
{
    sw_entry_span_begin(op, NULL);
    for (int i = 1; i < spans; i++) {
        sw_local_span_begin("child");
        sw_span_end();
    }
    sw_span_end();
}

Test(meter, configuration_discovery_applies_and_ignores)
{
    sw_set_log_handler(log_capture, NULL);
    agent_test_start(agent_test_path(), cds_config);
    char uuid[SW_CDS_UUID_MAX] = "";
    uint8_t buf[1024];
    int32_t sample;
    uint32_t limit;
    char ignore[128];

    const char *first[] = {"agent.sample_n_per_3_secs",    "1",
                           "agent.span_limit_per_segment", "7",
                           "agent.ignore_suffix",          ".health,.ping"};
    size_t len = cds_answer(buf, sizeof buf, "u1", first, 3);
    cr_assert_eq(sw__cds_apply(uuid, buf, len), 3);
    cr_assert_str_eq(uuid, "u1");
    sw__dyncfg_current(&sample, &limit, ignore, sizeof ignore);
    cr_assert_eq(sample, 1);
    cr_assert_eq(limit, 7);
    cr_assert_str_eq(ignore, ".health,.ping");

    /* Observable: a trace of 10 spans keeps 7; an ignored operation; one trace per window. */
    sw_stats_t st0, st;
    sw_stats(&st0);
    trace_of("GET /x.health", 1);
    trace_of("GET /big", 10);
    for (int i = 0; i < 5; i++) {
        trace_of("GET /more", 1);
    }
    sw_stats(&st);
    cr_assert_eq(st.traces_ignored - st0.traces_ignored, 1);
    cr_assert_geq(st.traces_sampled_out - st0.traces_sampled_out, 4,
                  "N=1: at most 2 of 6 traces sampled (a window edge may fall between)");

    /* The same UUID with other values: nothing changes. */
    const char *same[] = {"agent.sample_n_per_3_secs", "500"};
    len = cds_answer(buf, sizeof buf, "u1", same, 1);
    cr_assert_eq(sw__cds_apply(uuid, buf, len), 0);
    sw__dyncfg_current(&sample, &limit, ignore, sizeof ignore);
    cr_assert_eq(sample, 1);
    cr_assert_eq(limit, 7);

    /* A bad value (logged escaped, ignored), an unknown key; the absent ignore list goes back
       to its startup value. */
    logged[0] = '\0';
    const char *bad[] = {"agent.sample_n_per_3_secs",    "ten\x01", "agent.no_such_key", "1",
                         "agent.span_limit_per_segment", "5000"};
    len = cds_answer(buf, sizeof buf, "u2", bad, 3);
    cr_assert_eq(sw__cds_apply(uuid, buf, len), 1, "only the ignore list (restored) applies");
    cr_assert_str_eq(uuid, "u2");
    sw__dyncfg_current(&sample, &limit, ignore, sizeof ignore);
    cr_assert_eq(sample, 1, "the bad value left the sampler alone");
    cr_assert_eq(limit, 7, "above SW_AGENT_SPAN_LIMIT (50): refused");
    cr_assert_str_eq(ignore, ".startup");
    cr_assert(strstr(logged, "agent.sample_n_per_3_secs='ten\\x01'") != NULL, "log: %s", logged);
    cr_assert(strstr(logged, "agent.span_limit_per_segment='5000'") != NULL, "log: %s", logged);
    cr_assert(strstr(logged, "no_such_key") == NULL, "unknown keys are not warned about");

    /* Everything absent: back to the startup values. */
    len = cds_answer(buf, sizeof buf, "u3", NULL, 0);
    cr_assert_eq(sw__cds_apply(uuid, buf, len), 3);
    sw__dyncfg_current(&sample, &limit, ignore, sizeof ignore);
    cr_assert_eq(sample, -1);
    cr_assert_eq(limit, 50);
    cr_assert_str_eq(ignore, ".startup");
    cr_assert_eq(sw__cds_apply(uuid, (const uint8_t *)"\xff\xff", 2), -1, "not Commands");

    agent_test_stop();
    sw_set_log_handler(NULL, NULL);
}

Test(meter, ignore_list_replacements_are_bounded)
{
    agent_test_start(agent_test_path(), NULL);
    char err[256];
    for (int i = 0; i < SW__IGNORE_TABLES_MAX + 1; i++) {
        cr_assert_eq(sw__dyncfg_set_ignore_suffix(i % 2 ? ".a" : ".b", err, sizeof err), 0,
                     "change %d: %s", i, err);
    }
    cr_assert_eq(sw__dyncfg_set_ignore_suffix(".c", err, sizeof err), SW_ELIMIT);
    cr_assert_eq(sw__dyncfg_set_ignore_suffix(".b", err, sizeof err), 0, "unchanged is fine");
    cr_assert_eq(sw__dyncfg_set_ignore_suffix("x,\x02", err, sizeof err), SW_ELIMIT);
    agent_test_stop();
}

/* ---- dynamic configuration under running span threads ------------------------------------ */

#define SPAN_THREADS 3
static _Atomic bool spans_stop;

static void *spans_loop(void *arg)
{
    (void)arg;
    const char *ops[] = {"GET /a.x", "GET /b.y", "GET /c"};
    for (unsigned i = 0; !atomic_load_explicit(&spans_stop, memory_order_relaxed); i++) {
        trace_of(ops[i % 3], 1 + (int)(i % 12));
    }
    return NULL;
}

static void cds_stress_config(sw_config_t *cfg)
{
    cfg->span_limit_per_segment = 10;
    cfg->buffer_buffer_size = 4096;
}

/* The configuration discovery thread's changes (here: this thread) race trace starts on other
 * threads: under TSan this checks the publication of every setting (dynamic_config.h); the
 * accounting stays exact and each setting takes effect. */
Test(meter, settings_change_under_running_span_threads, .timeout = 120)
{
    agent_test_start(agent_test_path(), cds_stress_config);
    pthread_t t[SPAN_THREADS];
    for (int i = 0; i < SPAN_THREADS; i++) {
        cr_assert_eq(pthread_create(&t[i], NULL, spans_loop, NULL), 0);
    }
    char err[256];
    const char *lists[] = {".x", ".y", ".x,.y", ""};
    const char *samples[] = {"1", "-1", "1000", "0"};
    const char *limits[] = {"3", "10", "1", "7"};
    for (int round = 0; round < 60; round++) {
        cr_assert_eq(sw__dyncfg_set_ignore_suffix(lists[round % 4], err, sizeof err), 0, "%s", err);
        cr_assert_eq(sw__dyncfg_set_sample(samples[round % 4], err, sizeof err), 0, "%s", err);
        cr_assert_eq(sw__dyncfg_set_span_limit(limits[round % 4], err, sizeof err), 0, "%s", err);
        struct timespec pause = {0, 2 * 1000 * 1000}; /* let traces start under this setting */
        nanosleep(&pause, NULL);
    }
    atomic_store(&spans_stop, true);
    for (int i = 0; i < SPAN_THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    sw_stats_t st = agent_test_stop();
    cr_assert_gt(st.traces_ignored, 0, "an ignore list never took effect");
    cr_assert_gt(st.spans_limited, 0, "a span limit never took effect");
    cr_assert_gt(st.segments_finished, 0);
}

/* The new settings: ranges, defaults, and the meter topic checked as Kafka checks names. */
Test(meter, settings_are_checked)
{
    sw_config_t cfg;
    sw_config_init(&cfg);
    cr_assert_eq(cfg.meter_report_interval_s, 20);
    cr_assert_eq(cfg.cds_interval_s, 20);
    char err[256] = "";
    cr_assert_eq(sw_config_set(&cfg, "SW_METER_REPORT_INTERVAL", "86401", err, sizeof err),
                 SW_ECONFIG);
    cr_assert(strstr(err, "SW_METER_REPORT_INTERVAL") != NULL, "%s", err);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_CDS_INTERVAL", "-1", err, sizeof err), SW_ECONFIG);
    cr_assert_eq(sw_config_set(&cfg, "SW_METER_REPORT_INTERVAL", "0", err, sizeof err), 0);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_CDS_INTERVAL", "5", err, sizeof err), 0);
    cr_assert_eq(cfg.meter_report_interval_s, 0);
    cr_assert_eq(cfg.cds_interval_s, 5);
    cr_assert_eq(sw_config_set(&cfg, "SW_KAFKA_TOPIC_METER", "bad topic", err, sizeof err), 0);
    snprintf(cfg.file_path, sizeof cfg.file_path, "%s", agent_test_path());
    cr_assert_eq(sw_init(&cfg), SW_ECONFIG, "an invalid meter topic must stop sw_init");
    cr_assert_not(sw_enabled());
}
