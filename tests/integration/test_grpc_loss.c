/*
 * test_grpc_loss.c - a collector that fails collect calls is made visible to the operator
 * (agent/src/grpc/grpc_loss.h): the first failed call is warned about at once with the
 * segments lost, further losses within the interval are counted but not logged, and once the
 * interval has passed the next loss is warned about again with everything lost since the last
 * warning. Not one line per status for the life of the process.
 *
 * The collector is tests/support/grpc_collector.py run as the test double
 * --test-double-reject-collect: a real gRPC server that reads each collect stream and then
 * fails it with INVALID_ARGUMENT, as the OAP does for a message it cannot decode (a real OAP
 * cannot be made to do that with a valid message). Warnings are counted through the agent's
 * log handler (sw_set_log_handler).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_collector_proc.h"
#include "log/log.h"
#include "grpc/grpc_loss.h"
#include "skywalking.h"

#define MAX_WARNINGS 16

static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;
static char warnings[MAX_WARNINGS][SW__LOG_LINE_MAX + 1];
static size_t warning_count;

static void log_capture(sw_log_level_t level, const char *message, void *opaque)
{
    (void)opaque;
    if (level != SW_LOG_WARN || strstr(message, "segments lost in") == NULL) {
        return;
    }
    pthread_mutex_lock(&warn_lock);
    if (warning_count < MAX_WARNINGS) {
        snprintf(warnings[warning_count], sizeof warnings[0], "%s", message);
    }
    warning_count++;
    pthread_mutex_unlock(&warn_lock);
    fprintf(stderr, "agent warning: %s\n", message);
}

static size_t warnings_now(char *last, size_t len)
{
    pthread_mutex_lock(&warn_lock);
    size_t n = warning_count;
    if (last != NULL) {
        snprintf(last, len, "%s", n > 0 && n <= MAX_WARNINGS ? warnings[n - 1] : "");
    }
    pthread_mutex_unlock(&warn_lock);
    return n;
}

static void agent_start(int port)
{
    sw_config_t cfg;
    sw_config_init(&cfg);
    char err[256] = "", backend[64];
    snprintf(backend, sizeof backend, "127.0.0.1:%d", port);
    cr_assert_eq(sw_config_set(&cfg, "SW_REPORTER", "grpc", err, sizeof err), 0, "%s", err);
    cr_assert_eq(
        sw_config_set(&cfg, "SW_AGENT_COLLECTOR_BACKEND_SERVICES", backend, err, sizeof err), 0,
        "%s", err);
    snprintf(cfg.service_name, sizeof cfg.service_name, "grpc-loss-service");
    snprintf(cfg.instance_name, sizeof cfg.instance_name, "grpc-loss-1");
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
}

/* One segment, then a bounded wait until it is counted as failed (its own collect call):
   segments_failed reaches `failed`. */
static void segment_lost(uint64_t failed)
{
    sw_entry_span_begin("/lost", NULL);
    sw_span_end();
    uint64_t deadline = now_ms() + WAIT_MS;
    sw_stats_t st;
    for (;;) {
        sw_stats(&st);
        if (st.segments_failed >= failed) {
            break;
        }
        cr_assert_lt(now_ms(), deadline,
                     "segment %llu not counted as failed within %d ms (reported %llu)",
                     (unsigned long long)failed, WAIT_MS, (unsigned long long)st.segments_reported);
        poll_pause();
    }
    cr_assert_eq(st.segments_failed, failed, "one segment per collect call");
    cr_assert_eq(st.segments_reported, 0, "the test double rejects every call");
}

TestSuite(grpc_loss, .fini = collector_fini, .timeout = 240);

Test(grpc_loss, rejected_batches_are_warned_with_the_segments_lost_rate_limited)
{
    collector_t *c = &the_collector;
    collector_reject_collect = true;
    collector_start(c, 0, NULL, NULL);
    sw__log_reset(0);
    sw_set_log_handler(log_capture, NULL);
    sw__grpc_loss_interval_set(3600 * 1000); /* no second warning by the clock in this phase */
    agent_start(c->port);

    char last[SW__LOG_LINE_MAX + 1];
    segment_lost(1);
    cr_assert_eq(warnings_now(last, sizeof last), 1, "the first loss is warned about at once");
    cr_expect(strstr(last, "1 segments lost in 1 failed collect calls") != NULL, "%s", last);
    cr_expect(strstr(last, "INVALID_ARGUMENT") != NULL, "the status is named: %s", last);
    cr_expect(strstr(last, "1 lost since start") != NULL, "%s", last);

    /* More losses within the interval: counted, not logged. */
    for (uint64_t i = 2; i <= 6; i++) {
        segment_lost(i);
    }
    cr_assert_eq(warnings_now(NULL, 0), 1, "losses within the interval add no line");

    /* The interval has passed and losses continue: one warning with all of them since. */
    sw__grpc_loss_interval_set(1);
    struct timespec pause = {0, 20 * 1000 * 1000}; /* > the 1 ms interval: time must pass */
    nanosleep(&pause, NULL);
    segment_lost(7);
    cr_assert_eq(warnings_now(last, sizeof last), 2, "losses that continue are warned again");
    cr_expect(strstr(last, "6 segments lost in 6 failed collect calls") != NULL,
              "the second warning carries the 5 silent losses and this one: %s", last);
    cr_expect(strstr(last, "7 lost since start") != NULL, "%s", last);

    sw_shutdown();
    sw_set_log_handler(NULL, NULL);
    sw__grpc_loss_interval_set(0);
    collector_stop(c);
    collector_reject_collect = false;
}
