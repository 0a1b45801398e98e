/*
 * test_producer_limits.c - a hostile broker cannot exhaust the host (kproducer.h, "Limits on
 * what a broker may answer"). The scripted broker test double (tests/support/scripted_broker.h)
 * gives the answers no real broker can be made to give: millions of brokers or partitions in a
 * Metadata answer, an ApiVersions answer announcing tens of MiB, a thousand brokers each
 * leading a partition. Each test checks that the producer refuses with KP_ELIMIT and a reason
 * in kp_last_error within a time bound, that the process's peak RSS grows by less than a
 * bound, and that the producer works again once the broker answers sanely.
 *
 * The bounds are wide (seconds where the producer needs milliseconds, 64 MiB where it needs a
 * few): they must hold on a loaded machine, and without the limits the same answers cost
 * hundreds of MiB to GiB and minutes. Outside sanitizer builds the address space is capped
 * (address_space_limit.h) so that a producer without the limits fails instead of swapping
 * the machine.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "address_space_limit.h"
#include "core/metadata.h"
#include "kproducer.h"
#include "producer_test_util.h"
#include "scripted_broker.h"
#include "test_util.h"

#define TOPIC    "limits-topic"
#define RSS_KB   (64 * 1024) /* peak RSS growth allowed, in kB */
#define REFUSE_S 20.0        /* time to refuse a hostile answer, in s */

static atomic_int delivered_ok;

static int send_one(kp_producer_t *p, int32_t partition)
{
    return kp_send(p, TOPIC, partition, "k", 1, "v", 1, NULL, 0, 0, producer_test_count_ok,
                   &delivered_ok);
}

/* Starts the broker, lets `setup` make it hostile, and caps the address space. Returns the
 * process's RSS (kB) before the producer exists. */
static long hostile_start(sb_broker_t **sb, void (*setup)(sb_broker_t *))
{
    *sb = sb_start(TOPIC, 1, NULL, NULL);
    sb_lock(*sb);
    setup(*sb);
    sb_unlock(*sb);
    if (address_space_limit_usable()) {
        address_space_limit((size_t)768 << 20);
    }
    return proc_status_kb("VmRSS");
}

/* kp_send of a record for a topic the producer does not know yet: KP_ELIMIT within
 * REFUSE_S, kp_last_error says KP_ELIMIT with a reason that mentions `mention`, and the peak
 * RSS stayed within RSS_KB of rss_before. */
static void expect_refused(kp_producer_t *p, long rss_before, const char *mention)
{
    double t0 = now_s();
    int rc = send_one(p, -1);
    double took = now_s() - t0;
    long grown = proc_status_kb("VmHWM") - rss_before;
    cr_assert_lt(grown, RSS_KB, "peak RSS grew by %ld kB against a hostile broker", grown);
    cr_assert_eq(rc, KP_ELIMIT, "kp_send against a hostile broker returned %s, not KP_ELIMIT",
                 kp_err_name(rc));
    cr_assert_lt(took, REFUSE_S, "refusing the hostile answer took %.1f s", took);
    char why[512] = "";
    int code = kp_last_error(p, why, sizeof why);
    cr_assert_eq(code, KP_ELIMIT, "kp_last_error: %s (%s)", kp_err_name(code), why);
    cr_assert_not_null(strstr(why, mention), "the reason '%s' does not mention '%s'", why, mention);
}

/* The broker answers sanely again: the producer delivers a record (bounded waits). */
static void expect_usable(sb_broker_t *sb, kp_producer_t *p)
{
    sb_lock(sb);
    sb->md_brokers = 0;
    sb->md_partitions = 0;
    sb->api_versions_claim = 0;
    sb_unlock(sb);
    double end = now_s() + 30.0;
    int rc;
    /* KP_ELIMIT at once until the next Metadata answer is accepted (reconnect backoff). */
    while ((rc = send_one(p, -1)) == KP_ELIMIT && now_s() < end) {
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL); /* polling interval of a bounded wait, not synchronization */
    }
    cr_assert_eq(rc, KP_OK, "kp_send once the broker is sane: %s", kp_err_name(rc));
    cr_assert_eq(kp_flush(p, 30000), KP_OK, "the record was not delivered within 30 s");
    cr_assert_eq(atomic_load_explicit(&delivered_ok, memory_order_relaxed), 1);
    cr_assert_eq(kp_last_error(p, NULL, 0), 0, "kp_last_error still set after a sane answer");
}

/* One hostile answer (setup makes the broker give it): refused (expect_refused, with a
 * reason that mentions `mention`), then the producer works again (expect_usable). */
static void hostile_case(void (*setup)(sb_broker_t *), const char *mention)
{
    static const char *const kv[] = {"max.block.ms", "40000", "reconnect.backoff.max.ms", "200",
                                     NULL};
    sb_broker_t *sb;
    long rss = hostile_start(&sb, setup);
    kp_producer_t *p = producer_test_new(sb->bootstrap, kv);
    expect_refused(p, rss, mention);
    expect_usable(sb, p);
    kp_close(p, 5000);
    sb_stop(sb);
}

static void two_million_brokers(sb_broker_t *sb)
{
    sb->md_brokers = 2000000; /* 42 MB of answer */
}

Test(producer_limits, metadata_with_millions_of_brokers, .timeout = 120)
{
    hostile_case(two_million_brokers, "announced an answer of");
}

static void brokers_over_cap(sb_broker_t *sb)
{
    sb->md_brokers = KP_METADATA_MAX_BROKERS * 5; /* a small answer: 105 kB */
}

Test(producer_limits, metadata_with_more_brokers_than_the_cap, .timeout = 120)
{
    char mention[64];
    snprintf(mention, sizeof mention, "%d brokers, more than the %d", KP_METADATA_MAX_BROKERS * 5,
             KP_METADATA_MAX_BROKERS);
    hostile_case(brokers_over_cap, mention);
}

static void two_million_partitions(sb_broker_t *sb)
{
    sb->md_partitions = 2000000; /* 52 MB of answer */
}

Test(producer_limits, metadata_with_millions_of_partitions, .timeout = 120)
{
    hostile_case(two_million_partitions, "announced an answer of");
}

static void partitions_over_cap(sb_broker_t *sb)
{
    sb->md_partitions = 100000; /* 2.6 MB of answer, within the frame limit */
}

Test(producer_limits, metadata_with_more_partitions_than_the_cap, .timeout = 120)
{
    char mention[64];
    snprintf(mention, sizeof mention, "100000 partitions of a topic, more than the %d",
             KP_METADATA_MAX_PARTITIONS);
    hostile_case(partitions_over_cap, mention);
}

static void huge_api_versions(sb_broker_t *sb)
{
    sb->api_versions_claim = 48u << 20;
}

Test(producer_limits, api_versions_answer_over_the_frame_limit, .timeout = 120)
{
    char mention[64];
    snprintf(mention, sizeof mention, "announced an answer of %u bytes", 48u << 20);
    hostile_case(huge_api_versions, mention);
}

static void thousand_leaders(sb_broker_t *sb)
{
    sb->md_brokers = 1000;
    sb->md_partitions = 1000; /* partition k led by broker k */
}

/* A thousand brokers, each the leader of one partition, all at the broker's address: every
 * record is delivered, with never more than KP_MAX_CONNECTIONS connections open at once. */
Test(producer_limits, connections_are_capped, .timeout = 180)
{
    sb_broker_t *sb;
    hostile_start(&sb, thousand_leaders);
    static const char *const kv[] = {"enable.idempotence", "false", "acks", "1",
                                     "linger.ms",          "0",     NULL};
    kp_producer_t *p = producer_test_new(sb->bootstrap, kv);
    for (int32_t k = 0; k < 1000; k++) {
        int rc = send_one(p, k);
        cr_assert_eq(rc, KP_OK, "kp_send to partition %d: %s", k, kp_err_name(rc));
    }
    int flushed = kp_flush(p, 120000);
    sb_lock(sb);
    int max_open = sb->max_open;
    sb_unlock(sb);
    /* +2: the double may accept a new connection before it reads the end of one the producer
       closed just before (without the cap: 256, the double's own maximum). */
    cr_assert_leq(max_open, KP_MAX_CONNECTIONS + 2,
                  "%d connections were open at once (KP_MAX_CONNECTIONS is %d)", max_open,
                  KP_MAX_CONNECTIONS);
    cr_assert_eq(flushed, KP_OK, "not every record delivered within 120 s");
    int ok = atomic_load_explicit(&delivered_ok, memory_order_relaxed);
    cr_assert_eq(ok, 1000, "%d of 1000 records delivered", ok);
    kp_close(p, 5000);
    sb_stop(sb);
}

static void no_wake(void *arg)
{
    (void)arg;
}

/* A producer registers at most KP_METADATA_MAX_TOPICS topics (a Metadata answer with more is
 * refused, so one more topic could never become known). */
Test(producer_limits, topics_are_capped)
{
    kp__metadata_t md;
    cr_assert_eq(kp__metadata_init(&md, 100, 300000), 0);
    kp__topic_md_t *t = NULL;
    int32_t n = 0;
    char name[32];
    for (int i = 0; i < KP_METADATA_MAX_TOPICS; i++) {
        snprintf(name, sizeof name, "topic-%d", i);
        int rc = kp__metadata_wait_topic(&md, name, 0, no_wake, NULL, &t, &n);
        cr_assert_eq(rc, KP_EMETADATA_TIMEOUT, "topic %d: %s", i, kp_err_name(rc));
    }
    int rc = kp__metadata_wait_topic(&md, "one-more", 0, no_wake, NULL, &t, &n);
    cr_assert_eq(rc, KP_ELIMIT, "topic %d: %s", KP_METADATA_MAX_TOPICS + 1, kp_err_name(rc));
    rc = kp__metadata_wait_topic(&md, "topic-7", 0, no_wake, NULL, &t, &n);
    cr_assert_eq(rc, KP_EMETADATA_TIMEOUT, "a known topic: %s", kp_err_name(rc));
    kp__metadata_destroy(&md);
}
