/*
 * test_grpc_hostile.c - the gRPC reporter against a collector that should not be trusted, with
 * the real gRPC collector (tests/support/grpc_collector.py) and the public API:
 *
 *   - oversized answers (--answer-pad: a Commands answer of 100 KB) are refused on every call
 *     (collect, keepAlive, InstanceProperties, fetchConfigurations): the command is never seen,
 *     the configuration never applied, and the refusal said; answers of a normal size pass;
 *   - TLS: a collector whose certificate is not signed by the configured CA, or does not name
 *     the address dialed, gets nothing; the same collector with a good certificate gets all;
 *   - a token sent without TLS is warned about exactly once.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_collector_proc.h"
#include "skywalking.h"
#include "test_util.h"

/* What the agent logged (the handler runs on the agent's threads). */
static char said[1 << 16];
static pthread_mutex_t said_lock = PTHREAD_MUTEX_INITIALIZER;

static void said_capture(sw_log_level_t level, const char *message, void *opaque)
{
    (void)level, (void)opaque;
    pthread_mutex_lock(&said_lock);
    size_t at = strlen(said);
    snprintf(said + at, sizeof said - at, "%s\n", message);
    pthread_mutex_unlock(&said_lock);
}

static size_t said_count(const char *needle)
{
    pthread_mutex_lock(&said_lock);
    size_t n = occurrences(said, needle);
    pthread_mutex_unlock(&said_lock);
    return n;
}

/* Starts the agent on the collector at `port` with key/value pairs (NULL-terminated). */
static void agent_start(int port, const char *const *settings)
{
    sw_config_t cfg;
    sw_config_init(&cfg);
    char err[256] = "", backend[64];
    snprintf(backend, sizeof backend, "127.0.0.1:%d", port);
    const char *base[] = {"SW_REPORTER",
                          "grpc",
                          "SW_AGENT_COLLECTOR_BACKEND_SERVICES",
                          backend,
                          "SW_AGENT_HEARTBEAT_PERIOD",
                          "1",
                          "SW_AGENT_GRPC_TIMEOUT_MS",
                          "5000",
                          "SW_METER_REPORT_INTERVAL",
                          "0",
                          "SW_AGENT_NAME",
                          "hostile-test",
                          NULL};
    for (const char *const *kv = base; kv[0] != NULL; kv += 2) {
        cr_assert_eq(sw_config_set(&cfg, kv[0], kv[1], err, sizeof err), 0, "%s", err);
    }
    for (const char *const *kv = settings; kv != NULL && kv[0] != NULL; kv += 2) {
        cr_assert_eq(sw_config_set(&cfg, kv[0], kv[1], err, sizeof err), 0, "%s", err);
    }
    said[0] = '\0';
    sw_set_log_handler(said_capture, NULL);
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
}

static void segments_emit(int n)
{
    for (int i = 0; i < n; i++) {
        sw_entry_span_begin("hostile", NULL);
        sw_span_end();
    }
}

/* Stops the agent once every finished segment has an outcome (bounded). */
static sw_stats_t agent_stop(void)
{
    uint64_t deadline = now_ms() + WAIT_MS;
    sw_stats_t st;
    for (;;) {
        sw_stats(&st);
        if (st.segments_reported + st.segments_failed + st.segments_dropped ==
            st.segments_finished) {
            break;
        }
        cr_assert_lt(now_ms(), deadline, "segments without an outcome after %d ms", WAIT_MS);
        poll_pause();
    }
    cr_assert_eq(sw_shutdown(), 0);
    sw_stats(&st);
    sw_set_log_handler(NULL, NULL);
    return st;
}

/* Records of `kind` whose line also holds `also` (NULL: any). */
static size_t records_count(const collector_t *c, const char *kind, const char *also)
{
    char needle[64];
    snprintf(needle, sizeof needle, "\"kind\": \"%s\"", kind);
    FILE *f = fopen(c->out, "r");
    if (f == NULL) {
        return 0;
    }
    size_t n = 0, cap = 0;
    char *line = NULL;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        n += line[len - 1] == '\n' && strstr(line, needle) != NULL &&
             (also == NULL || strstr(line, also) != NULL);
    }
    free(line);
    fclose(f);
    return n;
}

static void records_wait(const collector_t *c, const char *kind, const char *also, size_t want)
{
    uint64_t deadline = now_ms() + WAIT_MS;
    while (records_count(c, kind, also) < want) {
        cr_assert_lt(now_ms(), deadline, "fewer than %zu '%s' records within %d ms", want, kind,
                     WAIT_MS);
        poll_pause();
    }
}

TestSuite(grpc_hostile, .fini = collector_fini, .timeout = 300);

/* One run against a collector that pads every answer by `pad` bytes. */
static void padded_run(const char *pad, const char *cds_path)
{
    collector_t *c = &the_collector;
    collector_answer_pad = pad;
    collector_cds_file = cds_path;
    collector_start(c, 0, NULL, "TestCommand");
    collector_answer_pad = NULL;
    collector_cds_file = NULL;
    static const char *const settings[] = {"SW_AGENT_CDS_INTERVAL", "1", NULL};
    agent_start(c->port, settings);
    segments_emit(20);
    /* Every kind of call reached the collector, and was answered, more than once. */
    records_wait(c, "cds_fetch", NULL, 3);
    records_wait(c, "ping", NULL, 2);
    records_wait(c, "properties", NULL, 1);
    records_wait(c, "segment", NULL, 1);
    (void)agent_stop();
    collector_stop(c);
}

Test(grpc_hostile, oversized_answers_are_refused_and_normal_ones_pass)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL); /* makes c->dir for the answer file */
    collector_stop(c);
    char cds[256];
    snprintf(cds, sizeof cds, "%.200s/cds.json", c->dir);
    FILE *f = fopen(cds, "w");
    cr_assert_not_null(f);
    fputs("{\"uuid\": \"big\", \"config\": {\"agent.span_limit_per_segment\": \"4\"}}", f);
    fclose(f);

    padded_run("100000", cds);
    cr_expect_eq(said_count("command 'TestCommand'"), 0,
                 "a 100 KB answer was taken (its command was seen):\n%s", said);
    cr_expect_eq(said_count("applied configuration"), 0,
                 "a 100 KB configuration answer was applied:\n%s", said);
    cr_expect_eq(records_count(c, "cds_fetch", "\"uuid\": \"big\""), 0,
                 "a fetch sent the UUID of a refused answer");
    cr_expect_geq(said_count("RESOURCE_EXHAUSTED"), 1, "the refusal was not said:\n%s", said);

    unlink(c->out);
    padded_run("2000", cds); /* a large but plausible answer */
    cr_expect_eq(said_count("command 'TestCommand'"), 1, "a 2 KB answer was refused:\n%s", said);
    cr_expect_eq(said_count("applied configuration big"), 1,
                 "a 2 KB configuration answer was refused:\n%s", said);
    cr_expect_eq(said_count("RESOURCE_EXHAUSTED"), 0, "%s", said);
    unlink(cds);
}

Test(grpc_hostile, a_token_without_tls_is_warned_about_once)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, "tok3n", NULL);
    static const char *const settings[] = {"SW_AGENT_AUTHENTICATION", "tok3n",
                                           "SW_AGENT_CDS_INTERVAL", "1", NULL};
    agent_start(c->port, settings);
    segments_emit(20);
    records_wait(c, "cds_fetch", NULL, 2);
    records_wait(c, "ping", NULL, 2);
    sw_stats_t st = agent_stop();
    collector_stop(c);
    cr_expect_eq(st.segments_reported, 20, "the right token works");
    cr_expect_eq(said_count("SW_AGENT_AUTHENTICATION is sent without TLS"), 1, "%s", said);
    cr_expect_eq(said_count("tok3n"), 0, "the token was printed");
}

/* ---- TLS: the collector must prove who it is ---------------------------------------------- */

typedef struct pki {
    char dir[64];
    char ca[96], good[96], good_key[96], wrong_name[96], wrong_name_key[96], other_ca[96];
} pki_t;

/* A CA and two server certificates it signs: one for 127.0.0.1, one for another name only;
   and an unrelated CA. All made by openssl. */
static void pki_make(pki_t *p)
{
    snprintf(p->dir, sizeof p->dir, "/tmp/sw-tls-neg-XXXXXX");
    cr_assert_not_null(mkdtemp(p->dir));
    snprintf(p->ca, sizeof p->ca, "%s/ca.pem", p->dir);
    snprintf(p->good, sizeof p->good, "%s/good.pem", p->dir);
    snprintf(p->good_key, sizeof p->good_key, "%s/good.key", p->dir);
    snprintf(p->wrong_name, sizeof p->wrong_name, "%s/wrong.pem", p->dir);
    snprintf(p->wrong_name_key, sizeof p->wrong_name_key, "%s/wrong.key", p->dir);
    snprintf(p->other_ca, sizeof p->other_ca, "%s/other-ca.pem", p->dir);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd %s && for ca in ca other-ca; do openssl req -x509 -newkey rsa:2048 -nodes "
             "-days 1 -subj /CN=$ca -keyout $ca.key -out $ca.pem >/dev/null 2>&1 || exit 1; "
             "done && "
             "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > good.ext && "
             "printf 'subjectAltName=DNS:collector.example\\n' > wrong.ext && "
             "for s in good wrong; do openssl req -newkey rsa:2048 -nodes -subj /CN=$s "
             "-keyout $s.key -out $s.csr >/dev/null 2>&1 && openssl x509 -req -in $s.csr "
             "-CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile $s.ext -out $s.pem "
             ">/dev/null 2>&1 || exit 1; done",
             p->dir);
    int rc = system(cmd);
    cr_assert_eq(rc, 0, "openssl could not make the certificates (%d)", rc);
}

/* Segments reported to a TLS collector serving cert/key, the agent trusting ca. */
static uint64_t tls_run(const char *cert, const char *key, const char *ca, size_t *stored)
{
    collector_t *c = &the_collector;
    collector_tls_cert = cert;
    collector_tls_key = key;
    collector_start(c, 0, NULL, NULL);
    collector_tls_cert = collector_tls_key = NULL;
    const char *settings[] = {"SW_AGENT_SSL", "true", "SW_AGENT_SSL_CA_FILE", ca, NULL};
    agent_start(c->port, settings);
    segments_emit(20);
    sw_stats_t st = agent_stop();
    collector_stop(c);
    *stored = records_count(c, "segment", NULL);
    unlink(c->out);
    return st.segments_reported;
}

Test(grpc_hostile, tls_refuses_an_untrusted_ca_and_a_wrong_host_name)
{
    pki_t p;
    pki_make(&p);
    size_t stored;
    uint64_t reported = tls_run(p.good, p.good_key, p.ca, &stored);
    cr_assert_eq(reported, 20, "the good certificate must work (else this test proves nothing)");
    cr_assert_eq(stored, 20);
    reported = tls_run(p.good, p.good_key, p.other_ca, &stored);
    cr_expect_eq(reported, 0, "a collector whose CA is not trusted was sent segments");
    cr_expect_eq(stored, 0, "a collector whose CA is not trusted stored %zu segments", stored);
    reported = tls_run(p.wrong_name, p.wrong_name_key, p.ca, &stored);
    cr_expect_eq(reported, 0, "a certificate for another host name was accepted");
    cr_expect_eq(stored, 0, "a collector with another host name stored %zu segments", stored);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", p.dir);
    cr_expect_eq(system(cmd), 0);
}
