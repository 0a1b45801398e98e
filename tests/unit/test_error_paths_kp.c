/*
 * test_error_paths_kp.c - every error kproducer.h documents for a return value, called for
 * real: each KP_E* a function's comment lists is returned by that function here. What needs a
 * broker runs against the scripted broker test double (tests/support/scripted_broker.h): an
 * unknown topic, a partition out of range, responses held back so that buffer memory stays
 * taken and records stay pending. The out-of-memory path of kp_producer_new runs under a real
 * address-space limit (tests/support/address_space_limit.h; skipped in sanitizer builds).
 * Also: kp_send from a delivery callback does not wait (kproducer.h, kp_delivery_cb_t).
 * The codes a delivery report carries for broker errors are tested in test_producer_sender.c.
 */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "address_space_limit.h"
#include "kproducer.h"
#include "scripted_broker.h"
#include "test_util.h"
#include "test_wait.h"

#define TOPIC "errors-topic"

static char err[512];

/* A producer for `bootstrap` with the settings of kv (key, value, ..., NULL; may be NULL). */
static kp_producer_t *producer(const char *bootstrap, const char *const *kv)
{
    kp_conf_t *c = kp_conf_new();
    cr_assert_not_null(c);
    cr_assert_eq(kp_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof err), KP_OK, "%s", err);
    for (; kv && kv[0]; kv += 2) {
        cr_assert_eq(kp_conf_set(c, kv[0], kv[1], err, sizeof err), KP_OK, "%s", err);
    }
    kp_producer_t *p = NULL;
    int rc = kp_producer_new(c, &p, err, sizeof err);
    kp_conf_destroy(c);
    cr_assert_eq(rc, KP_OK, "kp_producer_new: %s: %s", kp_err_name(rc), err);
    return p;
}

/* "127.0.0.1:<port>" of a loopback port nothing listens on (bound, then closed). */
static const char *closed_port(void)
{
    static char addr[64];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(sa.sin_port));
    close(fd);
    return addr;
}

typedef struct report {
    atomic_int calls;
    atomic_int error;
} report_t;

static void on_delivery(void *opaque, int error, int32_t partition, int64_t offset)
{
    (void)partition;
    (void)offset;
    report_t *r = opaque;
    atomic_store(&r->error, error);
    atomic_fetch_add(&r->calls, 1);
}

static int send_value(kp_producer_t *p, const char *topic, int32_t partition, size_t len,
                      report_t *r)
{
    static char value[4096];
    memset(value, 'v', sizeof value);
    cr_assert_leq(len, sizeof value);
    return kp_send(p, topic, partition, NULL, 0, value, len, NULL, 0, 0, on_delivery, r);
}

Test(error_paths_kp, conf_set_einval_econfig)
{
    kp_conf_t *c = kp_conf_new();
    cr_assert_eq(kp_conf_set(NULL, "acks", "1", err, sizeof err), KP_EINVAL);
    cr_assert_eq(kp_conf_set(c, NULL, "1", err, sizeof err), KP_EINVAL);
    cr_assert_eq(kp_conf_set(c, "acks", NULL, err, sizeof err), KP_EINVAL);
    cr_assert_eq(kp_conf_set(c, "no.such.property", "1", err, sizeof err), KP_ECONF);
    cr_assert(strstr(err, "no.such.property") != NULL, "errbuf '%s' names it", err);
    cr_assert_eq(kp_conf_set(c, "acks", "7", err, sizeof err), KP_ECONF);
    cr_assert(strstr(err, "acks") != NULL, "errbuf '%s' names it", err);
    cr_assert_eq(kp_conf_set(c, "batch.size", "0", err, sizeof err), KP_ECONF, "out of range");
    char *lng = malloc(70000);
    memset(lng, 'h', 69999);
    lng[69999] = '\0';
    cr_assert_eq(kp_conf_set(c, "client.id", lng, err, sizeof err), KP_ECONF, "too long");
    free(lng);
    kp_conf_destroy(c);
    kp_conf_destroy(NULL); /* cannot fail */
}

Test(error_paths_kp, conf_validate_einval_econfig)
{
    cr_assert_eq(kp_conf_validate(NULL, err, sizeof err), KP_EINVAL);
    kp_conf_t *c = kp_conf_new();
    cr_assert_eq(kp_conf_validate(c, err, sizeof err), KP_ECONF);
    cr_assert(strstr(err, "bootstrap.servers") != NULL, "errbuf '%s' names it", err);
    cr_assert_eq(kp_conf_set(c, "bootstrap.servers", "127.0.0.1:9", err, sizeof err), KP_OK);
    cr_assert_eq(kp_conf_set(c, "acks", "1", err, sizeof err), KP_OK);
    cr_assert_eq(kp_conf_set(c, "enable.idempotence", "true", err, sizeof err), KP_OK);
    cr_assert_eq(kp_conf_validate(c, err, sizeof err), KP_ECONF);
    cr_assert(strstr(err, "acks") != NULL, "errbuf '%s' names it", err);
    kp_conf_destroy(c);
}

Test(error_paths_kp, producer_new_einval_econfig)
{
    kp_conf_t *c = kp_conf_new();
    kp_producer_t *p = NULL;
    cr_assert_eq(kp_producer_new(NULL, &p, err, sizeof err), KP_EINVAL);
    cr_assert_eq(kp_producer_new(c, NULL, err, sizeof err), KP_EINVAL);
    static char not_a_producer;
    p = (kp_producer_t *)(void *)&not_a_producer;
    cr_assert_eq(kp_producer_new(c, &p, err, sizeof err), KP_ECONF, "no bootstrap.servers");
    cr_assert_null(p, "a failed kp_producer_new leaves *out NULL");
    cr_assert_eq(kp_conf_set(c, "bootstrap.servers", "no-port-here", err, sizeof err), KP_OK);
    cr_assert_eq(kp_producer_new(c, &p, err, sizeof err), KP_ECONF);
    cr_assert(strstr(err, "host:port") != NULL, "errbuf '%s' says host:port", err);
    cr_assert_eq(kp_producer_new(c, &p, NULL, 0), KP_ECONF, "no errbuf: still the code");
    kp_conf_destroy(c);
}

Test(error_paths_kp, producer_new_enomem_when_no_thread_can_start)
{
    if (!address_space_limit_usable()) {
        cr_skip_test("RLIMIT_AS and sanitizer runtimes do not mix");
    }
    kp_conf_t *c = kp_conf_new();
    cr_assert_eq(kp_conf_set(c, "bootstrap.servers", closed_port(), err, sizeof err), KP_OK);
    kp_producer_t *p = NULL;
    /* Room for the producer's state, not for the sender's stack (8 MiB by default). */
    address_space_limit(2u << 20);
    cr_assert_eq(kp_producer_new(c, &p, err, sizeof err), KP_ENOMEM);
    cr_assert_null(p);
    kp_conf_destroy(c);
}

Test(error_paths_kp, send_einval_for_each_bad_argument)
{
    kp_producer_t *p = producer(closed_port(), NULL);
    report_t r = {0};
    const char v[] = "v";
    kp_header_t bad_header = {NULL, "x", 1};
    kp_header_t many[4097];
    for (size_t i = 0; i < 4097; i++) {
        many[i] = (kp_header_t){"k", NULL, 0};
    }
    cr_expect_eq(kp_send(NULL, TOPIC, -1, NULL, 0, v, 1, NULL, 0, 0, on_delivery, &r), KP_EINVAL);
    cr_expect_eq(kp_send(p, NULL, -1, NULL, 0, v, 1, NULL, 0, 0, on_delivery, &r), KP_EINVAL);
    cr_expect_eq(kp_send(p, "", -1, NULL, 0, v, 1, NULL, 0, 0, on_delivery, &r), KP_EINVAL);
    cr_expect_eq(kp_send(p, TOPIC, -2, NULL, 0, v, 1, NULL, 0, 0, on_delivery, &r), KP_EINVAL);
    cr_expect_eq(kp_send(p, TOPIC, -1, NULL, 3, v, 1, NULL, 0, 0, on_delivery, &r), KP_EINVAL);
    cr_expect_eq(kp_send(p, TOPIC, -1, NULL, 0, NULL, 1, NULL, 0, 0, on_delivery, &r), KP_EINVAL);
    cr_expect_eq(kp_send(p, TOPIC, -1, NULL, 0, v, 1, NULL, 2, 0, on_delivery, &r), KP_EINVAL);
    cr_expect_eq(kp_send(p, TOPIC, -1, NULL, 0, v, 1, &bad_header, 1, 0, on_delivery, &r),
                 KP_EINVAL, "a header without a key");
    cr_expect_eq(kp_send(p, TOPIC, -1, NULL, 0, v, 1, many, 4097, 0, on_delivery, &r), KP_EINVAL,
                 "more than 4096 headers");
    cr_expect_eq(atomic_load(&r.calls), 0, "cb never runs for a refused record");
    cr_assert_eq(kp_close(p, 0), KP_OK, "nothing was accepted");
}

Test(error_paths_kp, send_emsg_size_too_large_at_once)
{
    const char *kv[] = {"max.request.size", "1024", "max.block.ms", "60000", NULL};
    kp_producer_t *p = producer(closed_port(), kv);
    report_t r = {0};
    double t0 = now_s();
    cr_expect_eq(send_value(p, TOPIC, -1, 2000, &r), KP_EMSG_SIZE_TOO_LARGE);
    cr_expect_lt(now_s() - t0, 30.0, "at once, not after max.block.ms");
    cr_assert_eq(kp_close(p, 0), KP_OK);
}

Test(error_paths_kp, send_emetadata_timeout_without_a_broker)
{
    const char *kv[] = {"max.block.ms", "200", NULL};
    kp_producer_t *p = producer(closed_port(), kv);
    report_t r = {0};
    cr_expect_eq(send_value(p, TOPIC, -1, 10, &r), KP_EMETADATA_TIMEOUT);
    cr_assert_eq(kp_close(p, 0), KP_OK);
}

Test(error_paths_kp, send_eunknown_topic_and_eunknown_partition)
{
    sb_broker_t *sb = sb_start(TOPIC, 2, NULL, NULL);
    const char *kv[] = {"max.block.ms", "500", "linger.ms", "0", NULL};
    kp_producer_t *p = producer(sb->bootstrap, kv);
    report_t r = {0};
    cr_expect_eq(send_value(p, "not-" TOPIC, -1, 10, &r), KP_EUNKNOWN_TOPIC);
    cr_expect_eq(send_value(p, TOPIC, 2, 10, &r), KP_EUNKNOWN_PARTITION, "partitions 0 and 1");
    cr_expect_eq(atomic_load(&r.calls), 0);
    cr_assert_eq(kp_close(p, 5000), KP_OK);
    sb_stop(sb);
}

static void hold_everything(void *arg, sb_broker_t *sb, sb_request_t *req)
{
    (void)arg;
    (void)sb;
    req->action = SB_HOLD;
}

static bool broker_got_a_request(void *arg)
{
    sb_broker_t *sb = arg;
    sb_lock(sb);
    bool got = sb->n_requests > 0;
    sb_unlock(sb);
    return got;
}

/* With every response held, the first record's batch keeps all of buffer.memory. */
Test(error_paths_kp, send_ebuffer_timeout_flush_and_close_etimed_out)
{
    sb_broker_t *sb = sb_start(TOPIC, 1, hold_everything, NULL);
    const char *kv[] = {"batch.size", "1024", "buffer.memory",      "1024",
                        "linger.ms",  "0",    "max.block.ms",       "300",
                        "acks",       "1",    "enable.idempotence", "false",
                        NULL};
    kp_producer_t *p = producer(sb->bootstrap, kv);
    report_t first = {0}, second = {0};
    cr_assert_eq(send_value(p, TOPIC, 0, 600, &first), KP_OK);
    wait_until(broker_got_a_request, sb, "the first batch reached the broker");
    cr_expect_eq(send_value(p, TOPIC, 0, 600, &second), KP_EBUFFER_TIMEOUT);
    cr_expect_eq(atomic_load(&second.calls), 0);
    cr_expect_eq(kp_flush(NULL, 0), KP_EINVAL);
    cr_expect_eq(kp_flush(p, 100), KP_ETIMED_OUT, "the response is held");
    cr_expect_eq(kp_close(NULL, 0), KP_EINVAL);
    cr_expect_eq(kp_close(p, 100), KP_ETIMED_OUT);
    cr_expect_eq(atomic_load(&first.calls), 1, "its callback ran before kp_close returned");
    cr_expect_eq(atomic_load(&first.error), KP_ECLOSED, "%s", kp_err_name(first.error));
    sb_stop(sb);
}

Test(error_paths_kp, send_eclosed_after_stop_accepting)
{
    kp_producer_t *p = producer(closed_port(), NULL);
    report_t r = {0};
    kp_stop_accepting(p);
    kp_stop_accepting(p); /* again: changes nothing */
    kp_stop_accepting(NULL);
    cr_expect_eq(send_value(p, TOPIC, -1, 10, &r), KP_ECLOSED);
    kp_stats_t st;
    kp_stats(p, &st);
    kp_stats(p, NULL); /* cannot fail */
    kp_stats(NULL, &st);
    cr_expect_eq(st.records_sent, 0);
    cr_assert_eq(kp_close(p, 0), KP_OK);
}

/* A delivery callback that sends twice more: to a topic without metadata (must fail at once,
 * not after max.block.ms) and to the topic it was called for (accepted). */
typedef struct resend {
    kp_producer_t *p;
    atomic_int unknown_rc;
    atomic_int known_rc;
    _Atomic double unknown_s;
    report_t known;
    atomic_int error; /* the callback's own report */
    atomic_int calls;
} resend_t;

static void resend_from_callback(void *opaque, int error, int32_t partition, int64_t offset)
{
    (void)partition;
    (void)offset;
    resend_t *s = opaque;
    atomic_store(&s->error, error);
    report_t ignored = {0};
    double t0 = now_s();
    atomic_store(&s->unknown_rc, send_value(s->p, "not-" TOPIC, -1, 10, &ignored));
    atomic_store(&s->unknown_s, now_s() - t0);
    atomic_store(&s->known_rc, send_value(s->p, TOPIC, -1, 10, &s->known));
    atomic_fetch_add(&s->calls, 1);
}

static bool resent_delivered(void *arg)
{
    resend_t *s = arg;
    return atomic_load(&s->calls) == 1 && atomic_load(&s->known.calls) == 1;
}

Test(error_paths_kp, send_from_a_delivery_callback_never_waits)
{
    sb_broker_t *sb = sb_start(TOPIC, 1, NULL, NULL);
    const char *kv[] = {"max.block.ms", "20000", "linger.ms", "0", NULL};
    kp_producer_t *p = producer(sb->bootstrap, kv);
    resend_t s = {.p = p};
    static char value[] = "first";
    cr_assert_eq(kp_send(p, TOPIC, -1, NULL, 0, value, 5, NULL, 0, 0, resend_from_callback, &s),
                 KP_OK);
    wait_until_within(60.0, resent_delivered, &s, "the callback's own record was delivered");
    cr_expect_eq(atomic_load(&s.error), KP_OK);
    int rc = atomic_load(&s.unknown_rc);
    cr_expect(rc == KP_EMETADATA_TIMEOUT || rc == KP_EUNKNOWN_TOPIC,
              "a topic without metadata fails at once on the sender thread: %s", kp_err_name(rc));
    cr_expect_lt(atomic_load(&s.unknown_s), 10.0,
                 "took %.3f s: the callback waited for metadata (max.block.ms is 20 s)",
                 atomic_load(&s.unknown_s));
    cr_expect_eq(atomic_load(&s.known_rc), KP_OK, "%s", kp_err_name(atomic_load(&s.known_rc)));
    cr_expect_eq(atomic_load(&s.known.error), KP_OK);
    cr_assert_eq(kp_close(p, 5000), KP_OK);
    sb_stop(sb);
}
