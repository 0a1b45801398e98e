/*
 * test_config_hostile.c - hostile configurations: secrets never printed, FIFOs / sockets /
 * directories refused without blocking, CA bundles parsed at sw_init, Kafka topic names and
 * address lists checked whatever reporter is selected, names with control characters refused.
 * Every message must name the setting the user wrote.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "config/config.h"
#include "config/pem.h"
#include "skywalking.h"

#define SECRET "Zq9SECRETtok77"

/* A self-signed certificate (openssl req -x509, EC P-256), for the CA tests. */
static const char cert_pem[] = "-----BEGIN CERTIFICATE-----\n"
                               "MIIBfDCCASGgAwIBAgIUIIug4OA8c8R/TwrSksIuTHdtDf4wCgYIKoZIzj0EAwIw\n"
                               "EjEQMA4GA1UEAwwHc3ctdGVzdDAgFw0yNjEyMDEyMTAxNTNaGA8yMTI2MTEwNzIx\n"
                               "MDE1M1owEjEQMA4GA1UEAwwHc3ctdGVzdDBZMBMGByqGSM49AgEGCCqGSM49AwEH\n"
                               "A0IABJOPG95STant0HQw8TuSvl8W+1Xs1VeajOKaSmkwrInP0z75msp4oFRCtXJx\n"
                               "sxkkS7CO6h5ldVvLmwTlYEgna92jUzBRMB0GA1UdDgQWBBSHc5qZ9gmGUjDq8JPs\n"
                               "BVCz7yWHFjAfBgNVHSMEGDAWgBSHc5qZ9gmGUjDq8JPsBVCz7yWHFjAPBgNVHRMB\n"
                               "Af8EBTADAQH/MAoGCCqGSM49BAMCA0kAMEYCIQC10/AbSVBv+CCYnDe6mZ9x1v1a\n"
                               "/xcPGpJCpRWCieikwgIhAIBnKFO2AQJIpNki/yfA9H37aOXOLGsoGA/GgR0G3Hs3\n"
                               "-----END CERTIFICATE-----\n";

/* Everything the agent said: log messages and error buffers, appended. */
static char said[1 << 16];

static void said_add(const char *text)
{
    size_t used = strlen(said);
    snprintf(said + used, sizeof said - used, "%s\n", text);
}

static void log_capture(sw_log_level_t level, const char *message, void *opaque)
{
    (void)level;
    (void)opaque;
    said_add(message);
}

static char dir[64];

static void setup(void)
{
    said[0] = '\0';
    sw_set_log_handler(log_capture, NULL);
    snprintf(dir, sizeof dir, "/tmp/sw-hostile-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

TestSuite(hostile, .init = setup, .timeout = 30);

static const char *file_write(const char *name, const char *text, size_t len)
{
    static char path[4][128];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(text, 1, len, f), len);
    fclose(f);
    return p;
}

/* A config with test names, the file reporter to /dev/null, and `key`=`value` applied. */
static int config_with(sw_config_t *c, const char *key, const char *value, char *err, size_t n)
{
    sw_config_init(c);
    snprintf(c->service_name, sizeof c->service_name, "svc");
    snprintf(c->file_path, sizeof c->file_path, "/dev/null");
    int rc = key != NULL ? sw_config_set(c, key, value, err, n) : 0;
    return rc != 0 ? rc : sw__config_finalize(c, err, n);
}

/* Expects config_with to fail with a message that starts with `key_named`. */
static void expect_refused(const char *key, const char *value, const char *key_named)
{
    sw_config_t c;
    char err[512] = "";
    cr_expect_eq(config_with(&c, key, value, err, sizeof err), SW_ECONFIG, "%s accepted", key);
    cr_expect_eq(strncmp(err, key_named, strlen(key_named)), 0, "'%s' does not start with %s", err,
                 key_named);
    said_add(err);
}

Test(hostile, secrets_are_never_printed)
{
    /* stderr too, in case anything bypassed the log (the handler is removed halfway). */
    char err_path[96];
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
    int err_fd = open(err_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(err_fd, 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(err_fd, STDERR_FILENO);
    const char *tokens[] = {(SECRET "\n"), (SECRET "\t"), (SECRET "\x7f"), (SECRET "\xc3\xa9"),
                            ("\x01" SECRET)};
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) {
        expect_refused("SW_AGENT_AUTHENTICATION", tokens[i], "SW_AGENT_AUTHENTICATION");
    }
    char longtok[400] = "";
    while (strlen(longtok) + sizeof SECRET < sizeof longtok) {
        strcat(longtok, SECRET);
    }
    expect_refused("SW_AGENT_AUTHENTICATION", longtok, "value of SW_AGENT_AUTHENTICATION");
    const char *props[] = {
        /* Accepted settings that hold a secret, refused by a later item or the combination. */
        ("sasl.password=" SECRET ",security.protocol=BOGUS"),
        ("security.protocol=SSL,ssl.key.password=" SECRET),
        ("security.protocol=SASL_PLAINTEXT,sasl.jaas.config=org.apache.kafka.common.security."
         "plain.PlainLoginModule required password=\"" SECRET "\";"),
        ("security.protocol=SASL_SSL,sasl.mechanism=SCRAM-SHA-512,sasl.jaas.config=org.apache."
         "kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"" SECRET
         "\";"),
        ("security.protocol=SASL_PLAINTEXT,sasl.jaas.config=" SECRET),
        ("security.protocol=SASL_PLAINTEXT,sasl.jaas.config=org.apache.kafka.common.security."
         "plain.PlainLoginModule required username=\"u\" password=\"" SECRET),
        ("sasl.password=" SECRET SECRET SECRET SECRET SECRET SECRET SECRET SECRET SECRET SECRET
             SECRET SECRET SECRET SECRET SECRET SECRET SECRET SECRET SECRET SECRET),
        ("ssl.keystore.key=" SECRET),
        ("oauth.token=" SECRET),
        ("client.secret=" SECRET ",acks=all"),
        SECRET,
        ("acks=all,=" SECRET),
    };
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) {
        expect_refused("SW_KAFKA_PRODUCER_CONFIG", props[i], "SW_KAFKA_PRODUCER_CONFIG");
    }

    /* Config file lines: without '=', the bare secret, a bad byte. */
    const char *lines[] = {("SW_AGENT_AUTHENTICATION " SECRET "\n"), (SECRET "\n"),
                           ("SW_AGENT_AUTHENTICATION=" SECRET "\x02\n"),
                           ("SW_AGENT_AUTHENTICATON=" SECRET "\n")};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        sw_config_t c;
        sw_config_init(&c);
        char err[512] = "";
        cr_expect_eq(
            sw__config_parse_buffer(&c, lines[i], strlen(lines[i]), "a.conf", err, sizeof err),
            SW_ECONFIG);
        cr_expect_eq(strncmp(err, "a.conf:1:", 9), 0, "%s", err);
        said_add(err);
        /* The same through the environment's file and sw_init: the log gets it. */
        setenv("SW_AGENT_CONFIG", file_write("agent.conf", lines[i], strlen(lines[i])), 1);
        cr_expect_eq(sw_init(NULL), SW_ECONFIG);
    }
    unsetenv("SW_AGENT_CONFIG");
    sw_set_log_handler(NULL, NULL); /* from here the default handler writes to stderr */
    setenv("SW_AGENT_AUTHENTICATION", SECRET "\n", 1);
    cr_expect_eq(sw_init(NULL), SW_ECONFIG);
    unsetenv("SW_AGENT_AUTHENTICATION");
    sw_config_t c;
    config_with(&c, NULL, NULL, NULL, 0);
    snprintf(c.authentication, sizeof c.authentication, "%s\x7f", SECRET);
    cr_expect_eq(sw_init(&c), SW_ECONFIG, "a programmatic token is checked too");
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    char err_text[8192] = "";
    ssize_t got = pread(err_fd, err_text, sizeof err_text - 1, 0);
    close(err_fd);
    cr_assert_gt(got, 0, "the default handler wrote nothing to stderr");
    said_add(err_text);
    cr_expect_not_null(strstr(err_text, "skywalking-c error: "), "%s", err_text);

    cr_assert_neq(said[0], '\0');
    cr_expect_null(strstr(said, SECRET), "a secret was printed:\n%s", said);
    cr_expect_null(strstr(said, "SECRETtok"), "part of a secret was printed:\n%s", said);
    cr_expect_not_null(strstr(said, "SW_AGENT_AUTHENTICATION holds a byte outside printable"), "%s",
                       said);
}

/* A private key (openssl genpkey, EC P-256), as a client key file or pasted inline. */
static const char key_pem[] = "-----BEGIN PRIVATE KEY-----\n"
                              "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgKEYSECRETkeyKEYb\n"
                              "-----END PRIVATE KEY-----\n";

/* sw__config_describe of a config with `key`=`value` set (unchecked: describe is pure). */
static const char *described(const char *key, const char *value)
{
    static char out[2048];
    sw_config_t c;
    sw_config_init(&c);
    char err[512] = "";
    cr_assert_eq(sw_config_set(&c, key, value, err, sizeof err), 0, "%s: %s", key, err);
    sw__config_describe(&c, out, sizeof out);
    said_add(out);
    return out;
}

Test(hostile, start_event_opts_never_carry_a_secret)
{
    /* The token. */
    cr_expect_str_eq(described("SW_AGENT_AUTHENTICATION", SECRET),
                     "SW_AGENT_AUTHENTICATION=(not shown)");
    /* Every secret property of the producer, alone and among others: names only. */
    cr_expect_str_eq(described("SW_KAFKA_PRODUCER_CONFIG",
                               "acks=all,security.protocol=SASL_PLAINTEXT,sasl.mechanism=PLAIN,"
                               "sasl.username=user1,sasl.password=" SECRET ",linger.ms=20"),
                     "SW_KAFKA_PRODUCER_CONFIG=[acks,security.protocol,sasl.mechanism,"
                     "sasl.username,sasl.password=(not shown),linger.ms]");
    cr_expect_str_eq(
        described("SW_KAFKA_PRODUCER_CONFIG",
                  "security.protocol=SASL_SSL,sasl.jaas.config=org.apache.kafka.common.security."
                  "plain.PlainLoginModule required username=\"u\" password=\"" SECRET "\";"),
        "SW_KAFKA_PRODUCER_CONFIG=[security.protocol,sasl.jaas.config=(not shown)]");
    cr_expect_str_eq(described("SW_KAFKA_PRODUCER_CONFIG",
                               "security.protocol=SSL,ssl.keystore.location=/k/client.pem,"
                               "ssl.key.location=/k/client.key,ssl.key.password=" SECRET),
                     "SW_KAFKA_PRODUCER_CONFIG=[security.protocol,ssl.keystore.location,"
                     "ssl.key.location,ssl.key.password=(not shown)]");
    /* A key given inline (the Java client's and librdkafka's names), and a secret holding a
       comma: its second piece is not shown as a name. */
    cr_expect_str_eq(described("SW_KAFKA_PRODUCER_CONFIG",
                               "ssl.keystore.key=" SECRET ",ssl.key.pem=" SECRET ",acks=1"),
                     "SW_KAFKA_PRODUCER_CONFIG=[ssl.keystore.key=(not shown),"
                     "ssl.key.pem=(not shown),acks]");
    cr_expect_str_eq(described("SW_KAFKA_PRODUCER_CONFIG",
                               "sasl.password=ab,X" SECRET "=cd,bootstrap.servers=a:1,b:2"),
                     "SW_KAFKA_PRODUCER_CONFIG=[sasl.password=(not shown),?,bootstrap.servers]");
    /* Other secrets by name: OAuth tokens and client secrets. */
    cr_expect_str_eq(described("SW_KAFKA_PRODUCER_CONFIG",
                               "oauth.token=" SECRET ",client.secret=" SECRET
                               ",sasl.oauthbearer.client.credentials=" SECRET),
                     "SW_KAFKA_PRODUCER_CONFIG=[oauth.token=(not shown),client.secret=(not "
                     "shown),sasl.oauthbearer.client.credentials=(not shown)]");
    /* A client key file: its path is shown, never its content; a PEM pasted where a path
       belongs is not shown at all. */
    const char *key_file = file_write("client.key", key_pem, strlen(key_pem));
    char expect[256];
    snprintf(expect, sizeof expect, "SW_AGENT_SSL_KEY_PATH=%s", key_file);
    cr_expect_str_eq(described("SW_AGENT_SSL_KEY_PATH", key_file), expect);
    cr_expect_str_eq(described("SW_AGENT_SSL_KEY_PATH", "-----BEGIN PRIVATE KEY-----\tMIGHAgE"),
                     "SW_AGENT_SSL_KEY_PATH=(not shown)");
    cr_expect_str_eq(described("SW_AGENT_SSL_CERT_CHAIN_PATH", "-----BEGIN PRIVATE KEY-----"),
                     "SW_AGENT_SSL_CERT_CHAIN_PATH=(not shown)");
    cr_expect_str_eq(
        described("SW_KAFKA_PRODUCER_CONFIG", "ssl.key.location=-----BEGIN PRIVATE KEY-----"),
        "SW_KAFKA_PRODUCER_CONFIG=(not shown)");
    /* All of them at once, through a real start: the describe the Start event sends. */
    sw_config_t c;
    sw_config_init(&c);
    char err[512] = "";
    cr_assert_eq(sw_config_set(&c, "SW_AGENT_AUTHENTICATION", SECRET, err, sizeof err), 0);
    cr_assert_eq(sw_config_set(&c, "SW_KAFKA_PRODUCER_CONFIG",
                               "security.protocol=SASL_SSL,sasl.mechanism=PLAIN,sasl.jaas.config="
                               "org.apache.kafka.common.security.plain.PlainLoginModule required "
                               "username=\"u\" password=\"" SECRET "\";,ssl.keystore.location=/"
                               "k.pem,ssl.key.password=" SECRET,
                               err, sizeof err),
                 0, "%s", err);
    char all[4096];
    sw__config_describe(&c, all, sizeof all);
    said_add(all);
    cr_expect_null(strstr(said, SECRET), "a secret was described:\n%s", said);
    cr_expect_null(strstr(said, "SECRETtok"), "part of a secret was described:\n%s", said);
    cr_expect_null(strstr(said, "SECRETkey"), "a key was described:\n%s", said);
    cr_expect_null(strstr(said, "LoginModule"), "a JAAS value was described:\n%s", said);
}

Test(hostile, file_lines_are_not_echoed)
{
    sw_config_t c;
    sw_config_init(&c);
    char err[512] = "";
    const char *shadow = "root:$6$salt$hash:19000:0:99999:7:::\n";
    cr_expect_eq(sw__config_parse_buffer(&c, shadow, strlen(shadow), "f", err, sizeof err),
                 SW_ECONFIG);
    cr_expect_null(strstr(err, "$6$"), "%s", err);
    const char *ansi = "\x1b[31mSW_X\n=1\n";
    cr_expect_eq(sw__config_parse_buffer(&c, ansi, strlen(ansi), "f", err, sizeof err), SW_ECONFIG);
    cr_expect_null(strchr(err, '\x1b'), "control bytes of a line are escaped: %s", err);
}

/* The three settings that name files, each given `path`: refused naming the key. */
static void expect_kind_refused(const char *path, const char *what)
{
    char err[512] = "";
    setenv("SW_AGENT_CONFIG", path, 1);
    sw_config_t c;
    sw_config_init(&c);
    cr_expect_eq(sw_config_load(&c, err, sizeof err), SW_ECONFIG, "%s as SW_AGENT_CONFIG", what);
    cr_expect_eq(strncmp(err, "SW_AGENT_CONFIG: ", 17), 0, "%s", err);
    unsetenv("SW_AGENT_CONFIG");

    cr_expect_eq(config_with(&c, "SW_AGENT_SSL_CA_FILE", path, err, sizeof err), SW_ECONFIG,
                 "%s as SW_AGENT_SSL_CA_FILE", what);
    cr_expect_eq(strncmp(err, "SW_AGENT_SSL_CA_FILE: ", 22), 0, "%s", err);

    said[0] = '\0';
    config_with(&c, "SW_REPORTER_FILE_PATH", path, err, sizeof err);
    cr_expect_eq(sw_init(&c), SW_ECONFIG, "%s as SW_REPORTER_FILE_PATH", what);
    cr_expect(!sw_enabled());
    cr_expect_not_null(strstr(said, "SW_REPORTER_FILE_PATH: "), "%s", said);
}

Test(hostile, fifo_socket_and_directory_are_refused_without_blocking)
{
    char fifo[128], sock[96];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    expect_kind_refused(fifo, "a FIFO without a writer or reader");
    int reader = open(fifo, O_RDONLY | O_NONBLOCK); /* now a writer's open succeeds */
    cr_assert_geq(reader, 0);
    expect_kind_refused(fifo, "a FIFO with a reader");
    cr_expect_not_null(strstr(said, "is a FIFO"), "%s", said);
    close(reader);

    snprintf(sock, sizeof sock, "%s/sock", dir);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
    cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(s, 1), 0);
    expect_kind_refused(sock, "a socket");
    close(s);

    expect_kind_refused(dir, "a directory");
}

Test(hostile, dev_null_and_regular_files_work)
{
    setenv("SW_AGENT_CONFIG", "/dev/null", 1);
    sw_config_t c;
    sw_config_init(&c);
    char err[512] = "";
    cr_expect_eq(sw_config_load(&c, err, sizeof err), 0, "%s", err);
    const char *conf = file_write("ok.conf", "SW_AGENT_NAME=from-file\n", 24);
    setenv("SW_AGENT_CONFIG", conf, 1);
    cr_expect_eq(sw_config_load(&c, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(c.service_name, "from-file");
    unsetenv("SW_AGENT_CONFIG");

    const char *ca = file_write("ca.pem", cert_pem, sizeof cert_pem - 1);
    cr_expect_eq(config_with(&c, "SW_AGENT_SSL_CA_FILE", ca, err, sizeof err), 0, "%s", err);

    config_with(&c, NULL, NULL, NULL, 0); /* the file reporter to /dev/null */
    cr_assert_eq(sw_init(&c), 0);
    sw_local_span_begin("to /dev/null");
    sw_span_end();
    cr_assert_eq(sw_shutdown(), 0);
    sw_stats_t st;
    sw_stats(&st);
    cr_expect_eq(st.segments_reported, 1);
}

Test(hostile, ca_file_must_hold_a_certificate)
{
    char bad_body[sizeof cert_pem + 8];
    snprintf(bad_body, sizeof bad_body, "%s", cert_pem);
    bad_body[80] = '!';
    char no_end[sizeof cert_pem];
    snprintf(no_end, sizeof no_end, "%.*s", (int)(sizeof cert_pem - 27), cert_pem);
    const char *not_der = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    struct {
        const char *text, *needle;
    } bad[] = {
        {"garbage, not PEM at all\n", "holds no PEM certificate"},
        {"", "holds no PEM certificate"},
        {"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
         "holds no PEM certificate"},
        {bad_body, "malformed"},
        {no_end, "malformed"},
        {not_der, "malformed"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *path = file_write("bad.pem", bad[i].text, strlen(bad[i].text));
        sw_config_t c;
        char err[512] = "";
        cr_expect_eq(config_with(&c, "SW_AGENT_SSL_CA_FILE", path, err, sizeof err), SW_ECONFIG,
                     "case %zu accepted", i);
        cr_expect_eq(strncmp(err, "SW_AGENT_SSL_CA_FILE: ", 22), 0, "%s", err);
        cr_expect_not_null(strstr(err, bad[i].needle), "case %zu: %s", i, err);
    }
    char two[2 * sizeof cert_pem + 32];
    snprintf(two, sizeof two, "# bundle\n%s\n%s", cert_pem, cert_pem);
    cr_expect_eq(sw__pem_certificates_count(two, strlen(two)), 2);
}

Test(hostile, kafka_topics_are_checked_as_kafka_does_whatever_the_reporter)
{
    const char *bad[] = {"bad topic", "a/b", "..", ".", "t\xc3\xa9", "a:b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_refused("SW_KAFKA_TOPIC_SEGMENT", bad[i], "SW_KAFKA_TOPIC_SEGMENT");
        expect_refused("SW_KAFKA_TOPIC_MANAGEMENT", bad[i], "SW_KAFKA_TOPIC_MANAGEMENT");
        expect_refused("SW_KAFKA_NAMESPACE", bad[i], "SW_KAFKA_NAMESPACE");
    }
    char longname[251];
    memset(longname, 't', 250);
    longname[250] = '\0';
    expect_refused("SW_KAFKA_TOPIC_SEGMENT", longname, "SW_KAFKA_TOPIC_SEGMENT");
    longname[245] = 0; /* valid alone, too long behind the namespace "prod-eu-" */
    sw_config_t c;
    char err[512] = "";
    sw_config_init(&c);
    snprintf(c.kafka_namespace, sizeof c.kafka_namespace, "prod-eu");
    snprintf(c.kafka_topic_segment, sizeof c.kafka_topic_segment, "%s", longname);
    cr_expect_eq(sw__config_finalize(&c, err, sizeof err), SW_ECONFIG);
    cr_expect_not_null(strstr(err, "SW_KAFKA_NAMESPACE + SW_KAFKA_TOPIC_SEGMENT"), "%s", err);
    cr_expect_eq(config_with(&c, "SW_KAFKA_TOPIC_SEGMENT", "My.topic_1-x", err, sizeof err), 0,
                 "%s", err);
    cr_expect_str_eq(c.reporter, "file", "checked although the file reporter is selected");
}

Test(hostile, bad_bootstrap_servers_name_the_setting)
{
    const char *bad[] = {"localhost",  ":9092",   "host:",   "host:0", "host:65536", "host:port",
                         "a:1,,b:2",   "a:1 b:2", "a:1;b:2", " ",      "h:99999999", "[::1]",
                         "a:1,",       ",a:1",    "h\x01:1", "h:1:",   "h :1",       "h:+1",
                         "h:-1",       "h:1x",    "h/x:1",   "h:1/2",  "h:0x10",     "@:1",
                         "h:01234567", "a:1,b",   "a:1, :2", "h#:1",   "h:1\t,x",    ","};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sw_config_t c;
        char err[512] = "";
        int rc = config_with(&c, "SW_KAFKA_BOOTSTRAP_SERVERS", bad[i], err, sizeof err);
        if (rc == 0) {
            snprintf(c.reporter, sizeof c.reporter, "file");
            rc = sw__config_finalize(&c, err, sizeof err);
        }
        cr_expect_eq(rc, SW_ECONFIG, "'%s' accepted", bad[i]);
        cr_expect_eq(strncmp(err, "SW_KAFKA_BOOTSTRAP_SERVERS", 26), 0, "'%s': %s", bad[i], err);
        cr_expect_null(strstr(err, "bootstrap.servers"), "'%s': %s", bad[i], err);
    }
    expect_refused("SW_AGENT_COLLECTOR_BACKEND_SERVICES", "oap:11800,,oap2:11800",
                   "SW_AGENT_COLLECTOR_BACKEND_SERVICES");
}

Test(hostile, producer_properties_are_checked_whatever_the_reporter)
{
    struct {
        const char *value, *prefix;
    } bad[] = {
        {"linger.ms=abc", "SW_KAFKA_PRODUCER_CONFIG: linger.ms"},
        {"acks=2", "SW_KAFKA_PRODUCER_CONFIG: acks"},
        {"no.such.property=1", "SW_KAFKA_PRODUCER_CONFIG: unknown property 'no.such.property'"},
        {"bootstrap.servers=nohost", "SW_KAFKA_PRODUCER_CONFIG: bootstrap.servers"},
        {"enable.idempotence=true,acks=1", "SW_KAFKA_PRODUCER_CONFIG: enable.idempotence"},
        {"acks", "SW_KAFKA_PRODUCER_CONFIG: item 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_refused("SW_KAFKA_PRODUCER_CONFIG", bad[i].value, bad[i].prefix);
    }
    sw_config_t c;
    char err[512] = "";
    cr_expect_eq(config_with(&c, "SW_KAFKA_PRODUCER_CONFIG",
                             "acks=1,linger.ms=20,bootstrap.servers=a:1,b:2", err, sizeof err),
                 0, "%s", err);
}

Test(hostile, names_with_control_characters_are_refused)
{
    expect_refused("SW_AGENT_NAME", "orders\nFAKE LOG LINE", "SW_AGENT_NAME contains a control");
    expect_refused("SW_AGENT_INSTANCE_NAME", "i\t1", "SW_AGENT_INSTANCE_NAME contains a control");
    expect_refused("SW_REPORTER_FILE_PATH", "/tmp/x\x1b[2J", "SW_REPORTER_FILE_PATH contains");
    sw_config_t c;
    char err[512] = "";
    config_with(&c, NULL, NULL, NULL, 0);
    snprintf(c.instance_name, sizeof c.instance_name, "a\rb");
    cr_expect_eq(sw__config_finalize(&c, err, sizeof err), SW_ECONFIG, "programmatic names too");
    cr_expect_not_null(strstr(err, "SW_AGENT_INSTANCE_NAME"), "%s", err);
}
