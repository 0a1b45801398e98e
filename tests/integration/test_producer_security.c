/*
 * test_producer_security.c - the producer over TLS and SASL against the real broker of the
 * ctest fixture, which broker.sh starts with --security (listeners ssl, badhost, mtls, sasl,
 * sasl_ssl and reauth; certificates made with openssl, SCRAM credentials created at format
 * time): a round trip per security.protocol and mechanism read back with kcat over the same
 * listener, a wrong password (KP_EAUTH, bounded reconnects counted in the broker's log, no
 * secret in any message), a wrong CA, a host name mismatch, and KIP-368 re-authentication
 * (the reauth listener's connections.max.reauth.ms=5000).
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka_test_env.h"
#include "kproducer.h"
#include "producer_test_util.h"
#include "test_util.h"
#include "test_wait.h"

#define TOPIC "sw-test-1p"

static sw_test_kafka_t k;
static char ca[700], wrong_ca[700], client_ks[700], key_pw[128], user[64], pass[128];

/* The first line of DIR/<rel>, trailing newline removed; fails the test when missing. */
static void read_line(const char *rel, char *out, size_t len)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", k.dir, rel);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s is missing: is the fixture broker started with --security?", path);
    cr_assert_not_null(fgets(out, (int)len, f), "%s is empty", path);
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
}

/* "127.0.0.1:<port of listener name>". */
static void listener(const char *name, char *out, size_t len)
{
    char rel[64], port[16];
    snprintf(rel, sizeof rel, "node1/%s_port", name);
    read_line(rel, port, sizeof port);
    snprintf(out, len, "127.0.0.1:%s", port);
}

static void setup(void)
{
    cr_assert_eq(sw_test_kafka_fixture(&k), 0);
    snprintf(ca, sizeof ca, "%s/tls/ca.pem", k.dir);
    snprintf(wrong_ca, sizeof wrong_ca, "%s/tls/wrong-ca.pem", k.dir);
    snprintf(client_ks, sizeof client_ks, "%s/tls/client-keystore.pem", k.dir);
    read_line("tls/key_password", key_pw, sizeof key_pw);
    read_line("tls/sasl_user", user, sizeof user);
    read_line("tls/sasl_password", pass, sizeof pass);
}

struct tally {
    atomic_int acked, failed, last_error;
};

static void on_delivery(void *opaque, int error, int32_t partition, int64_t offset)
{
    struct tally *t = opaque;
    (void)partition;
    (void)offset;
    if (error == 0) {
        atomic_fetch_add(&t->acked, 1);
    } else {
        atomic_store(&t->last_error, error);
        atomic_fetch_add(&t->failed, 1);
    }
}

static kp_producer_t *producer(const char *bootstrap, const char *const *kv)
{
    char err[512];
    kp_conf_t *c = kp_conf_new();
    cr_assert_eq(kp_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof err), 0, "%s", err);
    cr_assert_eq(kp_conf_set(c, "linger.ms", "0", err, sizeof err), 0, "%s", err);
    for (; kv && kv[0]; kv += 2) {
        cr_assert_eq(kp_conf_set(c, kv[0], kv[1], err, sizeof err), 0, "%s=%s: %s", kv[0], kv[1],
                     err);
    }
    kp_producer_t *p = NULL;
    int rc = kp_producer_new(c, &p, err, sizeof err);
    kp_conf_destroy(c);
    cr_assert_eq(rc, KP_OK, "kp_producer_new: %s: %s", kp_err_name(rc), err);
    return p;
}

/* Sends n records "<tag>:<i>" through the listener, checks every delivery report, then reads
 * the partition back with kcat over the same listener (kcat_props) and finds each id once. */
static void round_trip(const char *bootstrap, const char *const *kv, const char *tag,
                       const char *const *kcat_props)
{
    enum { N = 200 };
    kp_producer_t *p = producer(bootstrap, kv);
    struct tally t = {0};
    for (int i = 0; i < N; i++) {
        char v[96];
        int n = snprintf(v, sizeof v, "%s:%d", tag, i);
        int rc = kp_send(p, TOPIC, -1, NULL, 0, v, (size_t)n, NULL, 0, 0, on_delivery, &t);
        char msg[512] = "";
        if (rc != 0) {
            kp_last_error(p, msg, sizeof msg);
        }
        cr_assert_eq(rc, 0, "kp_send #%d over %s: %s (%s)", i, bootstrap, kp_err_name(rc), msg);
    }
    cr_assert_eq(kp_flush(p, 120000), 0, "flush over %s timed out", bootstrap);
    cr_assert_eq(atomic_load(&t.acked), N, "acked %d of %d (failed %d, last %s)",
                 atomic_load(&t.acked), N, atomic_load(&t.failed),
                 kp_err_name(atomic_load(&t.last_error)));
    cr_assert_eq(kp_last_error(p, NULL, 0), 0);
    cr_assert_eq(kp_close(p, 30000), 0);

    size_t len = 0;
    char *out = sw_test_kafka_consume_x(bootstrap, TOPIC, 0, -1, 0, "%s\n", kcat_props, &len);
    cr_assert_not_null(out, "kcat over %s failed", bootstrap);
    static char seen[N];
    memset(seen, 0, sizeof seen);
    char *cur = out;
    long id;
    while (tagged_line_next(&cur, out + len, tag, &id)) {
        cr_assert(id >= 0 && id < N, "unexpected id %ld", id);
        seen[id]++;
    }
    for (int i = 0; i < N; i++) {
        cr_assert_eq(seen[i], 1, "%s:%d read back %d times over %s", tag, i, seen[i], bootstrap);
    }
    free(out);
}

/* A unique tag per run: the partition keeps earlier runs' records. */
static const char *tag_of(const char *what, char *buf, size_t len)
{
    snprintf(buf, len, "%s-%ld-%d", what, (long)time(NULL), (int)getpid());
    return buf;
}

/* Lines of the broker's log that contain `needle` and the listener address `at` (the
 * channel id names it: other tests' connections to other listeners do not count). */
static int broker_log_count(const char *needle, const char *at)
{
    char path[700], line[4096];
    snprintf(path, sizeof path, "%s/node1/server.log", k.dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        n += strstr(line, needle) != NULL && strstr(line, at) != NULL;
    }
    fclose(f);
    return n;
}

/* A failure that kp_send reports at once (not after max.block.ms) with `want`, and a message
 * that contains every string of `says` and none of `secret`. */
static kp_producer_t *expect_refused(const char *b, const char *const *kv, int want,
                                     const char *const *says, const char *secret)
{
    kp_producer_t *p = producer(b, kv);
    struct tally t = {0};
    double t0 = now_s();
    int rc = kp_send(p, TOPIC, -1, NULL, 0, "x", 1, NULL, 0, 0, on_delivery, &t);
    double took = now_s() - t0;
    char msg[512] = "";
    int last = kp_last_error(p, msg, sizeof msg);
    cr_assert_eq(rc, want, "kp_send: %s, expected %s (%s)", kp_err_name(rc), kp_err_name(want),
                 msg);
    cr_assert_lt(took, 10.0, "kp_send took %.1f s (max.block.ms is 60 s): it must fail at once",
                 took);
    cr_assert_eq(last, want, "kp_last_error: %s", kp_err_name(last));
    cr_log_info("%s after %.2f s: %s", kp_err_name(rc), took, msg);
    for (; says && *says; says++) {
        cr_assert_not_null(strstr(msg, *says), "'%s' not in: %s", *says, msg);
    }
    if (secret) {
        cr_assert_null(strstr(msg, secret), "the secret is in: %s", msg);
    }
    return p;
}

Test(security, ssl_round_trip_java_names, .init = setup, .timeout = 300)
{
    char b[64], tag[96];
    listener("ssl", b, sizeof b);
    const char *kv[] = {"security.protocol",
                        "SSL",
                        "ssl.truststore.type",
                        "PEM",
                        "ssl.truststore.location",
                        ca,
                        NULL};
    const char *x[] = {"security.protocol=SSL", NULL, NULL};
    char xca[720];
    snprintf(xca, sizeof xca, "ssl.ca.location=%s", ca);
    x[1] = xca;
    round_trip(b, kv, tag_of("ssl", tag, sizeof tag), x);
}

Test(security, mtls_client_certificate_with_key_password, .init = setup, .timeout = 300)
{
    char b[64], tag[96], xca[720];
    listener("mtls", b, sizeof b);
    const char *kv[] = {"security.protocol",
                        "SSL",
                        "ssl.ca.location",
                        ca,
                        "ssl.keystore.type",
                        "PEM",
                        "ssl.keystore.location",
                        client_ks,
                        "ssl.key.password",
                        key_pw,
                        NULL};
    snprintf(xca, sizeof xca, "ssl.ca.location=%s", ca);
    char xcert[760], xkey[760], xpw[160];
    snprintf(xcert, sizeof xcert, "ssl.certificate.location=%s", client_ks);
    snprintf(xkey, sizeof xkey, "ssl.key.location=%s", client_ks);
    snprintf(xpw, sizeof xpw, "ssl.key.password=%s", key_pw);
    const char *x[] = {"security.protocol=SSL", xca, xcert, xkey, xpw, NULL};
    round_trip(b, kv, tag_of("mtls", tag, sizeof tag), x);
}

Test(security, mtls_without_client_certificate_fails, .init = setup, .timeout = 120)
{
    char b[64];
    listener("mtls", b, sizeof b);
    const char *kv[] = {"security.protocol", "SSL", "ssl.ca.location", ca, NULL};
    const char *says[] = {"TLS", b, NULL};
    kp_close(expect_refused(b, kv, KP_ETLS, says, NULL), 0);
}

/* SASL user/password as the Java client's JAAS entry: the quotes and escapes are parsed. */
static void jaas(char *out, size_t len, const char *module, const char *password)
{
    snprintf(out, len,
             "org.apache.kafka.common.security.%s required username=\"%s\" password=\"%s\";",
             module, user, password);
}

/* kcat's settings for reading back over a SASL listener. kcat authenticates with PLAIN on
 * the same listener: the Debian 12 kcat (librdkafka 2.0.2) fails SCRAM against this broker
 * with the credentials our producer authenticates with. */
static void sasl_kcat_props(const char **x, char *xu, char *xp, const char *proto, char *xca)
{
    static char xproto[64];
    static const char xmech[] = "sasl.mechanisms=PLAIN";
    snprintf(xproto, sizeof xproto, "security.protocol=%s", proto);
    snprintf(xu, 100, "sasl.username=%s", user);
    snprintf(xp, 160, "sasl.password=%s", pass);
    snprintf(xca, 720, "ssl.ca.location=%s", ca);
    x[0] = xproto;
    x[1] = xmech;
    x[2] = xu;
    x[3] = xp;
    x[4] = xca;
    x[5] = NULL;
}

/* SASL_PLAINTEXT with the credentials in a JAAS entry of `module` for `mechanism`. */
static void sasl_jaas_round_trip(const char *module, const char *mechanism, const char *what)
{
    char b[64], tag[96], j[512], xu[100], xp[160], xca[720];
    listener("sasl", b, sizeof b);
    jaas(j, sizeof j, module, pass);
    const char *kv[] = {"security.protocol",
                        "SASL_PLAINTEXT",
                        "sasl.mechanism",
                        mechanism,
                        "sasl.jaas.config",
                        j,
                        NULL};
    const char *x[6];
    sasl_kcat_props(x, xu, xp, "SASL_PLAINTEXT", xca);
    round_trip(b, kv, tag_of(what, tag, sizeof tag), x);
}

Test(security, sasl_plaintext_plain_jaas, .init = setup, .timeout = 300)
{
    sasl_jaas_round_trip("plain.PlainLoginModule", "PLAIN", "plain");
}

Test(security, sasl_plaintext_scram_sha_512_jaas, .init = setup, .timeout = 300)
{
    sasl_jaas_round_trip("scram.ScramLoginModule", "SCRAM-SHA-512", "scram512");
}

Test(security, sasl_ssl_scram_sha_256_librdkafka_names, .init = setup, .timeout = 300)
{
    char b[64], tag[96], xu[100], xp[160], xca[720];
    listener("sasl_ssl", b, sizeof b);
    const char *kv[] = {"security.protocol",
                        "SASL_SSL",
                        "sasl.mechanisms",
                        "SCRAM-SHA-256",
                        "sasl.username",
                        user,
                        "sasl.password",
                        pass,
                        "ssl.ca.location",
                        ca,
                        NULL};
    const char *x[6];
    sasl_kcat_props(x, xu, xp, "SASL_SSL", xca);
    round_trip(b, kv, tag_of("saslssl", tag, sizeof tag), x);
}

Test(security, wrong_password_is_auth_error_with_bounded_reconnects, .init = setup, .timeout = 300)
{
    char b[64], j[512];
    listener("sasl", b, sizeof b);
    const char *wrong = "not-the-password-7d1";
    jaas(j, sizeof j, "scram.ScramLoginModule", wrong);
    const char *kv[] = {"security.protocol",
                        "SASL_PLAINTEXT",
                        "sasl.mechanism",
                        "SCRAM-SHA-512",
                        "sasl.jaas.config",
                        j,
                        "reconnect.backoff.ms",
                        "50",
                        "reconnect.backoff.max.ms",
                        "1000",
                        NULL};
    const char *says[] = {"SCRAM-SHA-512", b, NULL};
    int before = broker_log_count("Failed authentication with", b);
    kp_producer_t *p = expect_refused(b, kv, KP_EAUTH, says, wrong);
    char msg[512];
    kp_last_error(p, msg, sizeof msg);
    cr_assert_null(strstr(msg, "ScramLoginModule"), "the JAAS text is in: %s", msg);
    /* 8 s more of sends: each fails at once; the reconnects follow the exponential backoff
     * (50 ms doubling to 1 s: about 12 attempts), not a storm. */
    double end = now_s() + 8.0;
    int sends = 0;
    struct tally t = {0};
    while (now_s() < end) {
        int rc = kp_send(p, TOPIC, -1, NULL, 0, "x", 1, NULL, 0, 0, on_delivery, &t);
        cr_assert_eq(rc, KP_EAUTH, "%s", kp_err_name(rc));
        sends++;
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL); /* pacing of the load, not synchronization */
    }
    kp_close(p, 0);
    int attempts = broker_log_count("Failed authentication with", b) - before;
    cr_log_info("wrong password: %d sends refused, %d authentication attempts in 8+ s", sends,
                attempts);
    cr_assert_geq(attempts, 2, "the producer stopped retrying (%d attempts)", attempts);
    cr_assert_leq(attempts, 20, "%d authentication attempts in about 8 s: a reconnect storm",
                  attempts);
}

Test(security, plain_wrong_password_is_auth_error, .init = setup, .timeout = 120)
{
    char b[64];
    listener("sasl", b, sizeof b);
    const char *kv[] = {"security.protocol",
                        "SASL_PLAINTEXT",
                        "sasl.mechanism",
                        "PLAIN",
                        "sasl.username",
                        user,
                        "sasl.password",
                        "wrong-pw-44",
                        NULL};
    const char *says[] = {"PLAIN", b, NULL};
    kp_close(expect_refused(b, kv, KP_EAUTH, says, "wrong-pw-44"), 0);
}

Test(security, wrong_ca_is_untrusted, .init = setup, .timeout = 120)
{
    char b[64];
    listener("ssl", b, sizeof b);
    const char *kv[] = {"security.protocol", "SSL", "ssl.truststore.location", wrong_ca, NULL};
    const char *says[] = {"not trusted", b, NULL};
    kp_close(expect_refused(b, kv, KP_ETLS_UNTRUSTED, says, NULL), 0);
}

Test(security, hostname_mismatch_is_reported_and_can_be_turned_off, .init = setup, .timeout = 300)
{
    char b[64], tag[96], xca[720];
    listener("badhost", b, sizeof b);
    const char *kv[] = {"security.protocol", "SSL", "ssl.truststore.location", ca, NULL};
    const char *says[] = {"does not name 127.0.0.1", b, NULL};
    kp_close(expect_refused(b, kv, KP_ETLS_HOSTNAME, says, NULL), 0);
    /* The Java client's empty ssl.endpoint.identification.algorithm: the chain is still
     * checked, the name is not. */
    const char *off[] = {"security.protocol",
                         "SSL",
                         "ssl.truststore.location",
                         ca,
                         "ssl.endpoint.identification.algorithm",
                         "",
                         NULL};
    snprintf(xca, sizeof xca, "ssl.ca.location=%s", ca);
    const char *x[] = {"security.protocol=SSL", xca, "ssl.endpoint.identification.algorithm=none",
                       NULL};
    round_trip(b, off, tag_of("nohostcheck", tag, sizeof tag), x);
}

/* The plaintext listener resets the connection on the ClientHello: a TLS error, and no
 * SIGPIPE kills the process (tls.c's socket BIO sends with MSG_NOSIGNAL). */
Test(security, ssl_client_to_plaintext_listener_is_tls_error, .init = setup, .timeout = 120)
{
    const char *kv[] = {"security.protocol", "SSL", "ssl.ca.location", ca, NULL};
    const char *says[] = {"TLS handshake", k.bootstrap, NULL};
    kp_close(expect_refused(k.bootstrap, kv, KP_ETLS, says, NULL), 0);
}

/* KIP-368: the reauth listener gives 5 s sessions; the broker closes a connection used after
 * its session ended. 16 s of steady sending over one connection must see no retry: every
 * session was renewed in time, between requests. */
Test(security, reauthentication_before_the_session_ends, .init = setup, .timeout = 300)
{
    char b[64], j[512];
    listener("reauth", b, sizeof b);
    jaas(j, sizeof j, "scram.ScramLoginModule", pass);
    const char *kv[] = {"security.protocol",
                        "SASL_PLAINTEXT",
                        "sasl.mechanism",
                        "SCRAM-SHA-512",
                        "sasl.jaas.config",
                        j,
                        NULL};
    kp_producer_t *p = producer(b, kv);
    struct tally t = {0};
    int before = broker_log_count("Failed authentication with", b);
    double end = now_s() + 16.0;
    int sent = 0;
    while (now_s() < end) {
        char v[64];
        int n = snprintf(v, sizeof v, "reauth:%d", sent);
        cr_assert_eq(kp_send(p, TOPIC, -1, NULL, 0, v, (size_t)n, NULL, 0, 0, on_delivery, &t), 0);
        sent++;
        struct timespec ts = {0, 50 * 1000000};
        nanosleep(&ts, NULL); /* pacing of the load, not synchronization */
    }
    cr_assert_eq(kp_flush(p, 60000), 0);
    kp_stats_t st;
    kp_stats(p, &st);
    char msg[512] = "";
    kp_last_error(p, msg, sizeof msg);
    cr_log_info("reauth: %d records over 16 s, %llu retried", sent,
                (unsigned long long)st.records_retried);
    cr_assert_eq(atomic_load(&t.acked), sent, "acked %d of %d (%s)", atomic_load(&t.acked), sent,
                 msg);
    cr_assert_eq(st.records_retried, 0, "%llu records retried: a session ran out (%s)",
                 (unsigned long long)st.records_retried, msg);
    cr_assert_eq(broker_log_count("Failed authentication with", b), before);
    cr_assert_eq(kp_close(p, 30000), 0);
}
