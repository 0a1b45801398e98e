/*
 * test_producer_conf.c - kp_conf_t: defaults, every property's bad values, the combination
 * checks, and that a failed set changes nothing.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "core/conf.h"
#include "kproducer.h"
#include "producer_test_util.h"

static char err[256];

Test(producer_conf, defaults_are_the_java_clients)
{
    kp_conf_t *c = kp_conf_new();
    cr_assert_eq(c->acks, -1);
    cr_assert(c->idempotence);
    cr_assert_eq(c->batch_size, 16384);
    cr_assert_eq(c->linger_ms, 5);
    cr_assert_eq(c->buffer_memory, 33554432);
    cr_assert_eq(c->max_block_ms, 60000);
    cr_assert_eq(c->max_in_flight, 5);
    cr_assert_eq(c->max_request_size, 1048576);
    cr_assert_eq(c->retries, INT32_MAX);
    cr_assert_eq(c->retry_backoff_ms, 100);
    cr_assert_eq(c->retry_backoff_max_ms, 1000);
    cr_assert_eq(c->delivery_timeout_ms, 120000);
    cr_assert_eq(c->request_timeout_ms, 30000);
    cr_assert_eq(c->compression, KP__COMPRESSION_NONE);
    cr_assert_eq(c->metadata_max_age_ms, 300000);
    cr_assert_eq(c->connections_max_idle_ms, 540000);
    cr_assert_eq(c->reconnect_backoff_ms, 50);
    cr_assert_eq(c->reconnect_backoff_max_ms, 1000);
    kp_conf_destroy(c);
}

Test(producer_conf, good_values_are_stored)
{
    kp_conf_t *c = kp_conf_new();
    cr_assert_eq(kp_conf_set(c, "bootstrap.servers", "127.0.0.1:9092,h:1", err, sizeof(err)), 0);
    cr_assert_str_eq(c->bootstrap_servers, "127.0.0.1:9092,h:1");
    cr_assert_eq(kp_conf_set(c, "acks", "1", err, sizeof(err)), 0);
    cr_assert_eq(c->acks, 1);
    cr_assert_eq(kp_conf_set(c, "acks", "all", err, sizeof(err)), 0);
    cr_assert_eq(c->acks, -1);
    cr_assert_eq(kp_conf_set(c, "acks", "0", err, sizeof(err)), 0);
    cr_assert_eq(c->acks, 0);
    cr_assert_eq(kp_conf_set(c, "compression.type", "gzip", err, sizeof(err)), 0);
    cr_assert_eq(c->compression, KP__COMPRESSION_GZIP);
    cr_assert_eq(c->batch_max_size, 262144, "batch.max.size default");
    cr_assert_eq(kp_conf_set(c, "batch.max.size", "0", err, sizeof(err)), 0);
    cr_assert_eq(c->batch_max_size, 0);
    cr_assert_eq(kp_conf_set(c, "compression.type", "lz4", err, sizeof(err)), 0);
    cr_assert_eq(c->compression, KP__COMPRESSION_LZ4);
    cr_assert_eq(kp_conf_set(c, "compression.type", "zstd", err, sizeof(err)), 0);
    cr_assert_eq(c->compression, KP__COMPRESSION_ZSTD);
    cr_assert_eq(kp_conf_set(c, "buffer.memory", "1099511627776", err, sizeof(err)), 0);
    cr_assert_eq(c->buffer_memory, INT64_C(1) << 40);
    cr_assert_eq(kp_conf_set(c, "linger.ms", "0", err, sizeof(err)), 0);
    cr_assert_eq(c->linger_ms, 0);
    cr_assert_eq(kp_conf_set(c, "enable.idempotence", "false", err, sizeof(err)), 0);
    cr_assert(!c->idempotence);
    kp_conf_destroy(c);
}

Test(producer_conf, unknown_property_is_named)
{
    conf_expect_bad("batch.sise", "1", "batch.sise");
    conf_expect_bad("compression.type", "snappy", "none, gzip, lz4 or zstd");
    conf_expect_bad("batch.max.size", "-1", "batch.max.size");
    conf_expect_bad("", "1", "unknown property");
}

Test(producer_conf, every_bad_value_is_named)
{
    static const char *numeric[] = {"batch.size",
                                    "linger.ms",
                                    "buffer.memory",
                                    "max.block.ms",
                                    "max.in.flight.requests.per.connection",
                                    "max.request.size",
                                    "retries",
                                    "retry.backoff.ms",
                                    "retry.backoff.max.ms",
                                    "delivery.timeout.ms",
                                    "request.timeout.ms",
                                    "metadata.max.age.ms",
                                    "connections.max.idle.ms",
                                    "reconnect.backoff.ms",
                                    "reconnect.backoff.max.ms"};
    for (size_t i = 0; i < sizeof(numeric) / sizeof(numeric[0]); i++) {
        conf_expect_bad(numeric[i], "abc", numeric[i]);
        conf_expect_bad(numeric[i], "", numeric[i]);
        conf_expect_bad(numeric[i], "12x", numeric[i]);
        conf_expect_bad(numeric[i], "-5", "out of range");
        conf_expect_bad(numeric[i], "99999999999999999999", numeric[i]);
        conf_expect_bad(numeric[i], "9223372036854775807", "out of range");
    }
    conf_expect_bad("batch.size", "0", "batch.size");
    conf_expect_bad("max.in.flight.requests.per.connection", "0", "max.in.flight");
    conf_expect_bad("acks", "2", "acks");
    conf_expect_bad("acks", "ALL", "acks");
    conf_expect_bad("enable.idempotence", "yes", "enable.idempotence");
    conf_expect_bad("compression.type", "snappy", "compression.type");
    char longv[2000];
    memset(longv, 'h', sizeof(longv) - 1);
    longv[sizeof(longv) - 1] = '\0';
    conf_expect_bad("bootstrap.servers", longv, "bootstrap.servers");
}

Test(producer_conf, null_arguments_are_rejected)
{
    cr_assert_eq(kp_conf_set(NULL, "acks", "1", err, sizeof(err)), KP_EINVAL);
    kp_conf_t *c = kp_conf_new();
    cr_assert_eq(kp_conf_set(c, NULL, "1", NULL, 0), KP_EINVAL);
    cr_assert_eq(kp_conf_set(c, "acks", NULL, err, sizeof(err)), KP_EINVAL);
    kp_conf_destroy(c);
}

static int validate_with(const char *const *kv, size_t n)
{
    kp_conf_t *c = kp_conf_new();
    cr_assert_eq(kp_conf_set(c, "bootstrap.servers", "localhost:9092", err, sizeof(err)), 0);
    for (size_t i = 0; i + 1 < n; i += 2) {
        cr_assert_eq(kp_conf_set(c, kv[i], kv[i + 1], err, sizeof(err)), 0, "%s", err);
    }
    err[0] = '\0';
    int rc = kp_conf_validate(c, err, sizeof(err));
    kp_conf_destroy(c);
    return rc;
}

Test(producer_conf, inconsistent_combinations_are_named)
{
    const char *a[] = {"enable.idempotence", "true", "acks", "1"};
    cr_assert_eq(validate_with(a, 4), KP_ECONF);
    cr_assert_not_null(strstr(err, "acks"), "%s", err);
    const char *b[] = {"enable.idempotence", "true", "max.in.flight.requests.per.connection", "6"};
    cr_assert_eq(validate_with(b, 4), KP_ECONF);
    cr_assert_not_null(strstr(err, "max.in.flight"), "%s", err);
    const char *c[] = {"enable.idempotence", "true", "retries", "0"};
    cr_assert_eq(validate_with(c, 4), KP_ECONF);
    cr_assert_not_null(strstr(err, "retries"), "%s", err);
    const char *d[] = {"delivery.timeout.ms", "1000", "request.timeout.ms", "30000"};
    cr_assert_eq(validate_with(d, 4), KP_ECONF);
    cr_assert_not_null(strstr(err, "delivery.timeout.ms"), "%s", err);
    const char *e[] = {"reconnect.backoff.ms", "500", "reconnect.backoff.max.ms", "100"};
    cr_assert_eq(validate_with(e, 4), KP_ECONF);
    cr_assert_not_null(strstr(err, "reconnect.backoff"), "%s", err);
    const char *f[] = {"retry.backoff.ms", "500", "retry.backoff.max.ms", "100"};
    cr_assert_eq(validate_with(f, 4), KP_ECONF);
    cr_assert_not_null(strstr(err, "retry.backoff"), "%s", err);
    kp_conf_t *g = kp_conf_new();
    cr_assert_eq(kp_conf_validate(g, err, sizeof(err)), KP_ECONF);
    cr_assert_not_null(strstr(err, "bootstrap.servers"), "%s", err);
    kp_conf_destroy(g);
}

Test(producer_conf, default_idempotence_yields_to_explicit_acks)
{
    const char *a[] = {"acks", "1"};
    cr_assert_eq(validate_with(a, 2), 0, "%s", err);
    kp_conf_t *c = kp_conf_new();
    cr_assert(kp__conf_idempotent(c));
    cr_assert_eq(kp_conf_set(c, "acks", "1", err, sizeof(err)), 0);
    cr_assert(!kp__conf_idempotent(c));
    kp_conf_destroy(c);
}
