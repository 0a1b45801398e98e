/* Tests of the test harness itself (tests/support/kafka_test_env.h, broker.sh) against real
 * brokers: the ctest fixture's node answers and keeps what kcat writes; a private 3-node
 * cluster survives a killed node, and the node comes back on its old port. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kafka_test_env.h"

/* Produces `lines` ("key:value" per line) to topic/partition with kcat -P; returns its status. */
static int kcat_produce(const char *bootstrap, const char *topic, int partition, const char *lines)
{
    char path[] = "/tmp/sw-kafka-fixture-XXXXXX", part[16];
    int fd = mkstemp(path), rc;
    size_t n = strlen(lines);

    cr_assert(fd >= 0, "mkstemp failed");
    cr_assert(write(fd, lines, n) == (ssize_t)n, "writing %s failed", path);
    close(fd);
    snprintf(part, sizeof part, "%d", partition);
    char *argv[] = {"timeout", "60",          "kcat", "-P", "-b", (char *)bootstrap,
                    "-t",      (char *)topic, "-p",   part, "-K", ":",
                    "-l",      path,          NULL};
    rc = sw_test_kafka_exec(argv, NULL, NULL);
    unlink(path);
    return rc;
}

/* A unique-enough marker so that a re-run on the same fixture finds its own records. */
static void make_marker(char *buf, size_t len)
{
    snprintf(buf, len, "m%ld-%d", (long)time(NULL), (int)getpid());
}

Test(kafka_fixture, fixture_broker_round_trip)
{
    sw_test_kafka_t k;
    char marker[64], lines[256];
    size_t len = 0;

    cr_assert_eq(sw_test_kafka_fixture(&k), 0, "the fixture broker is not available");
    cr_assert(strncmp(k.bootstrap, "127.0.0.1:", 10) == 0, "bootstrap '%s' is not loopback",
              k.bootstrap);
    cr_assert_eq(k.owned, 0);

    make_marker(marker, sizeof marker);
    snprintf(lines, sizeof lines, "k1:%s-a\nk2:%s-b\n", marker, marker);
    cr_assert_eq(kcat_produce(k.bootstrap, "sw-test-1p", 0, lines), 0, "kcat -P failed");

    char *out = sw_test_kafka_consume(k.bootstrap, "sw-test-1p", 0, -1, 0, "%k=%s\n", &len);
    cr_assert_not_null(out, "kcat -C failed");
    char want_a[128], want_b[128];
    snprintf(want_a, sizeof want_a, "k1=%s-a\n", marker);
    snprintf(want_b, sizeof want_b, "k2=%s-b\n", marker);
    char *a = strstr(out, want_a), *b = strstr(out, want_b);
    cr_assert(a != NULL && b != NULL && a < b, "records not read back in order; got:\n%s", out);
    free(out);
    cr_assert_eq(sw_test_kafka_stop(&k), 0, "stop must be a no-op for the fixture");
}

Test(kafka_fixture, unknown_topic_fails_cleanly)
{
    sw_test_kafka_t k;
    cr_assert_eq(sw_test_kafka_fixture(&k), 0);
    /* auto.create.topics.enable=false: reading a topic that does not exist fails, no crash. */
    char *out =
        sw_test_kafka_consume(k.bootstrap, "sw-test-does-not-exist", 0, -1, 1, "%s\n", NULL);
    cr_assert_null(out, "kcat read from a topic that should not exist: %s", out ? out : "");
}

Test(kafka_fixture, create_topic_on_the_fixture)
{
    sw_test_kafka_t k;
    size_t len = 1;

    cr_assert_eq(sw_test_kafka_fixture(&k), 0);
    cr_assert_eq(sw_test_kafka_create_topic(&k, "sw-selftest-2p", 2), 0, "create-topic failed");
    /* Creating it again is not an error (tests may run twice on one fixture). */
    cr_assert_eq(sw_test_kafka_create_topic(&k, "sw-selftest-2p", 2), 0);
    /* Partition 1 exists: an empty read succeeds. */
    char *out = sw_test_kafka_consume(k.bootstrap, "sw-selftest-2p", 1, -1, 0, "%s\n", &len);
    cr_assert_not_null(out, "partition 1 of the new topic is not readable");
    free(out);
    /* A bad spec is refused with a message, not passed to Kafka. */
    cr_assert_neq(sw_test_kafka_create_topic(&k, "bad topic name", 2), 0);
}

Test(kafka_fixture, three_nodes_kill_and_restart, .timeout = 400)
{
    sw_test_kafka_t k;
    char lines[128];
    size_t len = 0;
    int commas = 0;

    cr_assert_eq(sw_test_kafka_start(&k, "kafka-selftest-3n", 3, "sw-3n:3"), 0,
                 "3-node cluster did not start (logs in kafka-selftest-3n/)");
    for (const char *p = k.bootstrap; *p; p++) {
        commas += *p == ',';
    }
    cr_assert_eq(commas, 2, "bootstrap '%s' should list 3 nodes", k.bootstrap);
    char old_bootstrap[sizeof k.bootstrap];
    memcpy(old_bootstrap, k.bootstrap, sizeof old_bootstrap);

    /* Node 1 crashes: the other two keep the topic writable (replication 3, min ISR 1). */
    cr_assert_eq(sw_test_kafka_kill_node(&k, 1, 0), 0, "kill-node 1 failed");
    cr_assert_eq(kcat_produce(k.bootstrap, "sw-3n", 0, "a:while-down\n"), 0,
                 "produce with node 1 down failed");

    /* It comes back on the same port with the same data and rejoins every ISR. */
    cr_assert_eq(sw_test_kafka_start_node(&k, 1), 0, "start-node 1 failed");
    cr_assert_eq(sw_test_kafka_read_bootstrap(&k), 0);
    cr_assert_str_eq(k.bootstrap, old_bootstrap, "ports changed across the restart");
    snprintf(lines, sizeof lines, "b:after-restart\n");
    cr_assert_eq(kcat_produce(k.bootstrap, "sw-3n", 0, lines), 0, "produce after restart failed");

    char *out = sw_test_kafka_consume(k.bootstrap, "sw-3n", 0, -1, 0, "%k=%s\n", &len);
    cr_assert_not_null(out);
    cr_assert_str_eq(out, "a=while-down\nb=after-restart\n", "read back: %s", out);
    free(out);

    /* A graceful stop of one node, then the whole cluster. */
    cr_assert_eq(sw_test_kafka_kill_node(&k, 3, 1), 0, "graceful kill-node 3 failed");
    cr_assert_eq(sw_test_kafka_stop(&k), 0, "stop failed");
    cr_assert_eq(k.owned, 0);
}
