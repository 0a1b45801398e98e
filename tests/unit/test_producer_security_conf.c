/*
 * test_producer_security_conf.c - the producer's security settings without a broker:
 * security.protocol / sasl.mechanism / ssl.* values and aliases, the sasl.jaas.config parser
 * (quoting, escapes, wrong module, missing options; no secret in any message), SCRAM against
 * RFC 7677's SCRAM-SHA-256 example, the server-first / server-final checks,
 * kp_producer_new's TLS file errors, and the clamp of a broker's SASL session lifetime.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "core/conf.h"
#include "core/jaas.h"
#include "core/sasl.h"
#include "core/scram.h"
#include "kproducer.h"
#include "producer_test_util.h"

#define PW "s3cr\"et\\pw"

static char err[512];

static kp_conf_t *conf_with(const char *const *kv)
{
    kp_conf_t *c = kp_conf_new();
    cr_assert_eq(kp_conf_set(c, "bootstrap.servers", "127.0.0.1:9", err, sizeof err), 0);
    for (; kv && kv[0]; kv += 2) {
        cr_assert_eq(kp_conf_set(c, kv[0], kv[1], err, sizeof err), 0, "%s: %s", kv[0], err);
    }
    return c;
}

Test(security_conf, defaults_are_plaintext_with_host_verification)
{
    kp_conf_t *c = kp_conf_new();
    cr_assert_eq(c->security_protocol, KP__SEC_PLAINTEXT);
    cr_assert(c->ssl_verify_hostname);
    cr_assert_eq(c->sasl_mechanism, KP__SASL_PLAIN);
    cr_assert(!kp__conf_tls(c) && !kp__conf_sasl(c));
    kp_conf_destroy(c);
}

Test(security_conf, values_and_aliases_are_stored)
{
    const char *kv[] = {"security.protocol",
                        "sasl_ssl",
                        "sasl.mechanisms",
                        "SCRAM-SHA-512",
                        "ssl.ca.location",
                        "/ca.pem",
                        "ssl.certificate.location",
                        "/client.pem",
                        "ssl.key.location",
                        "/client.key",
                        "ssl.truststore.type",
                        "PEM",
                        "ssl.keystore.type",
                        "pem",
                        "ssl.endpoint.identification.algorithm",
                        "",
                        NULL};
    kp_conf_t *c = conf_with(kv);
    cr_assert(kp__conf_tls(c) && kp__conf_sasl(c));
    cr_assert_eq(c->sasl_mechanism, KP__SASL_SCRAM_SHA_512);
    cr_assert_str_eq(c->ssl_truststore_location, "/ca.pem");
    cr_assert_str_eq(c->ssl_keystore_location, "/client.pem");
    cr_assert_str_eq(c->ssl_key_location, "/client.key");
    cr_assert(!c->ssl_verify_hostname);
    cr_assert_eq(kp_conf_set(c, "ssl.endpoint.identification.algorithm", "https", err, sizeof err),
                 0);
    cr_assert(c->ssl_verify_hostname);
    cr_assert_eq(kp_conf_set(c, "ssl.truststore.location", "/other.pem", err, sizeof err), 0);
    cr_assert_str_eq(c->ssl_truststore_location, "/other.pem", "the Java name and the alias share");
    kp_conf_destroy(c);
}

Test(security_conf, bad_values_are_named)
{
    conf_expect_bad("security.protocol", "TLS", "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL");
    conf_expect_bad("sasl.mechanism", "GSSAPI", "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512");
    conf_expect_bad("sasl.mechanism", "OAUTHBEARER", "sasl.mechanism");
    conf_expect_bad("ssl.truststore.type", "JKS", "PEM files only");
    conf_expect_bad("ssl.keystore.type", "PKCS12", "PEM files only");
    conf_expect_bad("ssl.endpoint.identification.algorithm", "http", "https or empty");
}

Test(security_conf, secret_values_are_never_in_messages)
{
    char big[400];
    memset(big, 'Q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    const char *names[] = {"sasl.password", "ssl.key.password", "sasl.jaas.config"};
    for (size_t i = 0; i < 3; i++) {
        kp_conf_t *c = kp_conf_new();
        err[0] = '\0';
        if (strcmp(names[i], "sasl.jaas.config") == 0) {
            char huge[2100];
            memset(huge, 'Q', sizeof huge - 1);
            huge[sizeof huge - 1] = '\0';
            cr_assert_eq(kp_conf_set(c, names[i], huge, err, sizeof err), KP_ECONF);
        } else {
            cr_assert_eq(kp_conf_set(c, names[i], big, err, sizeof err), KP_ECONF);
        }
        cr_assert_null(strstr(err, "QQQQ"), "%s: %s", names[i], err);
        kp_conf_destroy(c);
    }
}

Test(security_conf, validate_checks_sasl_credentials_and_key_password)
{
    const char *none[] = {"security.protocol", "SASL_PLAINTEXT", NULL};
    kp_conf_t *c = conf_with(none);
    cr_assert_eq(kp_conf_validate(c, err, sizeof err), KP_ECONF);
    cr_assert_not_null(strstr(err, "sasl.jaas.config"), "%s", err);
    kp_conf_destroy(c);

    const char *user[] = {
        "security.protocol", "SASL_SSL", "sasl.username", "u", "sasl.password", PW, NULL};
    c = conf_with(user);
    cr_assert_eq(kp_conf_validate(c, err, sizeof err), 0, "%s", err);
    kp_conf_destroy(c);

    const char *kp[] = {"security.protocol", "SSL", "ssl.key.password", PW, NULL};
    c = conf_with(kp);
    cr_assert_eq(kp_conf_validate(c, err, sizeof err), KP_ECONF);
    cr_assert_not_null(strstr(err, "ssl.keystore.location"), "%s", err);
    cr_assert_null(strstr(err, "s3cr"), "%s", err);
    kp_conf_destroy(c);
}

static char u[256], p[256];

static int jaas(const char *text, int mech)
{
    err[0] = '\0';
    int rc = kp__jaas_parse(text, mech, u, sizeof u, p, sizeof p, err, sizeof err);
    if (rc != 0) {
        cr_assert_null(strstr(err, "s3cr"), "a message holds the password: %s", err);
        cr_assert_null(strstr(err, "LoginModule required"), "a message holds the JAAS text: %s",
                       err);
    }
    return rc;
}

Test(security_conf, jaas_entries_of_the_java_client)
{
    cr_assert_eq(jaas("org.apache.kafka.common.security.plain.PlainLoginModule required "
                      "username=\"alice\" password=\"s3cr\\\"et\\\\pw\";",
                      KP__SASL_PLAIN),
                 0, "%s", err);
    cr_assert_str_eq(u, "alice");
    cr_assert_str_eq(p, PW, "the quote and backslash escapes are undone");
    /* ScramLoginModule, bare words, other options, spaces and newlines, the short class. */
    cr_assert_eq(jaas("  org.apache.kafka.common.security.scram.ScramLoginModule\n required\t"
                      "tokenauth=false  username = bob password=pw2 ; ",
                      KP__SASL_SCRAM_SHA_256),
                 0, "%s", err);
    cr_assert_str_eq(u, "bob");
    cr_assert_str_eq(p, "pw2");
    cr_assert_eq(
        jaas("ScramLoginModule optional username=\"a,b=c\" password=\"\";", KP__SASL_SCRAM_SHA_512),
        0, "%s", err);
    cr_assert_str_eq(u, "a,b=c");
    cr_assert_str_eq(p, "");
}

Test(security_conf, bad_jaas_entries_are_refused_without_the_text)
{
    /* %s: the PlainLoginModule class; the second column must be in the message. */
    static const char *const bad[][2] = {
        {"org.apache.kafka.common.security.scram.ScramLoginModule required username=\"a\" "
         "password=\"s3cr\";",
         "PlainLoginModule"},
        {"%s mandatory username=\"a\" password=\"s3cr\";", "required, requisite"},
        {"%s required username=\"a\" password=\"s3cr\"", "';'"},
        {"%s required username=\"a\" password=\"s3cr;", "unterminated"},
        {"%s required username=\"a\" password \"s3cr\";", "name=value"},
        {"%s required password=\"s3cr\";", "username"},
        {"%s required username=\"a\" password=\"s3cr\"; x", "after the closing"},
        {"", "login module"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char t[512];
        snprintf(t, sizeof t, bad[i][0], "org.apache.kafka.common.security.plain.PlainLoginModule");
        cr_assert_eq(jaas(t, KP__SASL_PLAIN), KP_ECONF, "accepted: %s", t);
        cr_assert_not_null(strstr(err, bad[i][1]), "'%s' not in: %s", bad[i][1], err);
        cr_assert_eq(p[0], '\0', "a refused entry left a password behind");
    }
}

/* RFC 7677 section 3: user "user", password "pencil". */
#define C_NONCE "rOprNGfwEbeRWgbNEkqO"
#define S_FIRST \
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
#define C_FINAL                                                                      \
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+" \
    "Ute9ytag9zjfMHgs"                                                               \
    "qmmiz7AndVQ="
#define S_FINAL "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

Test(security_conf, scram_sha_256_matches_rfc_7677)
{
    kp__scram_t s;
    char out[512];
    cr_assert_eq(kp__scram_client_first(&s, 256, "user", C_NONCE, out, sizeof out), 0);
    cr_assert_str_eq(out, "n,,n=user,r=" C_NONCE);
    cr_assert_eq(kp__scram_client_final(&s, "pencil", S_FIRST, strlen(S_FIRST), out, sizeof out,
                                        err, sizeof err),
                 0, "%s", err);
    cr_assert_str_eq(out, C_FINAL);
    cr_assert_eq(kp__scram_verify_server_final(&s, S_FINAL, strlen(S_FINAL), err, sizeof err), 0,
                 "%s", err);
    const char *forged = "v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
    cr_assert_eq(kp__scram_verify_server_final(&s, forged, strlen(forged), err, sizeof err),
                 KP_EAUTH);
    const char *e = "e=invalid-proof";
    cr_assert_eq(kp__scram_verify_server_final(&s, e, strlen(e), err, sizeof err), KP_EAUTH);
    cr_assert_not_null(strstr(err, "invalid-proof"), "%s", err);
    /* A wrong password gives another proof. */
    cr_assert_eq(kp__scram_client_first(&s, 256, "user", C_NONCE, out, sizeof out), 0);
    cr_assert_eq(kp__scram_client_final(&s, "pencil2", S_FIRST, strlen(S_FIRST), out, sizeof out,
                                        err, sizeof err),
                 0);
    cr_assert_str_neq(out, C_FINAL);
}

Test(security_conf, scram_user_names_are_escaped_and_nonces_fresh)
{
    kp__scram_t s;
    char a[512], b[512];
    cr_assert_eq(kp__scram_client_first(&s, 512, "a=b,c", NULL, a, sizeof a), 0);
    cr_assert_eq(strncmp(a, "n,,n=a=3Db=2Cc,r=", 17), 0, "%s", a);
    cr_assert_eq(strlen(a), 17 + 32, "%s", a);
    cr_assert_eq(kp__scram_client_first(&s, 512, "a=b,c", NULL, b, sizeof b), 0);
    cr_assert_str_neq(a, b, "two client-first messages with the same nonce");
}

static int server_first(const char *msg)
{
    kp__scram_t s;
    char out[256];
    kp__scram_server_first_t sf;
    cr_assert_eq(kp__scram_client_first(&s, 256, "user", C_NONCE, out, sizeof out), 0);
    return kp__scram_parse_server_first(&s, msg, strlen(msg), &sf, err, sizeof err);
}

Test(security_conf, scram_server_first_is_checked)
{
    cr_assert_eq(server_first(S_FIRST), 0, "%s", err);
    cr_assert_eq(server_first(S_FIRST ",x=extension"), 0, "%s", err);
    cr_assert_eq(server_first("r=" C_NONCE ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"), KP_EMALFORMED,
                 "a nonce that does not extend ours");
    cr_assert_eq(server_first("r=XXXX" C_NONCE "abc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
                 KP_EMALFORMED);
    cr_assert_eq(server_first("m=ext,r=" C_NONCE "abc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
                 KP_EMALFORMED);
    cr_assert_eq(server_first("r=" C_NONCE "abc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095"), KP_EMALFORMED,
                 "fewer iterations than RFC 7677's minimum");
    cr_assert_eq(server_first("r=" C_NONCE "abc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999"),
                 KP_EMALFORMED);
    cr_assert_eq(server_first("r=" C_NONCE "abc,s=W22ZaJ0SNY7soEsUEjb6gQ=,i=4096"), KP_EMALFORMED,
                 "bad base64");
    cr_assert_eq(server_first("r=" C_NONCE "abc,s=,i=4096"), KP_EMALFORMED);
    cr_assert_eq(server_first("r=" C_NONCE "abc,s=W22ZaJ0SNY7soEsUEjb6gQ=="), KP_EMALFORMED);
    cr_assert_eq(server_first("r=" C_NONCE "abc,i=4096,s=W22ZaJ0SNY7soEsUEjb6gQ=="), KP_EMALFORMED);
    cr_assert_eq(server_first(""), KP_EMALFORMED);
}

Test(security_conf, producer_new_names_unreadable_tls_files)
{
    const char *kv[] = {"security.protocol", "SSL", "ssl.truststore.location",
                        "/nonexistent/ca.pem", NULL};
    kp_conf_t *c = conf_with(kv);
    kp_producer_t *p = NULL;
    cr_assert_eq(kp_producer_new(c, &p, err, sizeof err), KP_ECONF, "%s", err);
    cr_assert_null(p);
    cr_assert_not_null(strstr(err, "/nonexistent/ca.pem"), "%s", err);
    cr_assert_not_null(strstr(err, "ssl.truststore.location"), "%s", err);
    kp_conf_destroy(c);
    const char *ks[] = {"security.protocol",
                        "SSL",
                        "ssl.keystore.location",
                        "/nonexistent/k.pem",
                        "ssl.key.password",
                        PW,
                        NULL};
    c = conf_with(ks);
    cr_assert_eq(kp_producer_new(c, &p, err, sizeof err), KP_ECONF, "%s", err);
    cr_assert_null(p);
    cr_assert_not_null(strstr(err, "/nonexistent/k.pem"), "%s", err);
    cr_assert_null(strstr(err, "s3cr"), "%s", err);
    kp_conf_destroy(c);
}

/* KIP-368's session_lifetime_ms comes from the broker (or whoever sits between): a tiny one
 * must not make the sender re-authenticate in a loop, a huge one must not overflow. */
Test(security_conf, sasl_session_lifetime_is_clamped)
{
    const int64_t now = 1000000;
    const int64_t month = 30LL * 24 * 3600 * 1000;
    cr_assert_eq(kp__sasl_reauth_at(now, 0, 1), 0, "no lifetime: no re-authentication");
    cr_assert_eq(kp__sasl_reauth_at(now, -5, 1), 0);
    for (unsigned seed = 0; seed < 200; seed++) {
        int64_t at = kp__sasl_reauth_at(now, 1, seed);
        cr_assert_eq(at, now + KP_SASL_REAUTH_MIN_MS, "a 1 ms lifetime re-authenticates at %lld",
                     (long long)(at - now));
        at = kp__sasl_reauth_at(now, 100000, seed);
        cr_assert(at >= now + 85000 && at <= now + 95000, "85..95%% of 100 s: %lld",
                  (long long)(at - now));
        at = kp__sasl_reauth_at(now, INT64_MAX, seed);
        cr_assert(at >= now + month * 85 / 100 && at <= now + month * 95 / 100,
                  "INT64_MAX counts as 30 days: %lld", (long long)(at - now));
        at = kp__sasl_reauth_at(INT64_MAX / 2, INT64_MAX - 1, seed);
        cr_assert_gt(at, INT64_MAX / 2, "overflow");
    }
}
