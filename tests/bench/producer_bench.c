/*
 * producer_bench.c - kproducer vs librdkafka against the same real broker in the same run.
 *
 * Equal settings for both: acks=all, idempotence on, linger 5 ms, batch 16 KiB, 32 MiB buffer,
 * compression none or gzip. Workloads: 1M x 100 B and 200k x 1 KiB, each uncompressed and gzip
 * (--smoke: 20k and 5k). Each producer runs in a forked child, so getrusage(RUSAGE_SELF) around
 * the run gives its own CPU time and ru_maxrss its own peak memory.
 *
 * Usage: producer_bench [--smoke] [--bootstrap host:port] [--topic name]
 * Without --bootstrap: the ctest fixture's broker (SW_TEST_KAFKA_DIR), else a private broker
 * started through tests/support/kafka/broker.sh. Last line: name=value pairs.
 */
#include <librdkafka/rdkafka.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kafka_test_env.h"
#include "kproducer.h"

struct result {
    double wall_s;
    double cpu_s;
    long max_rss_kb;
    long delivered;
    long failed;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Text-like filler that compresses roughly like log/trace data (not all one byte). */
static void fill_value(char *buf, size_t n)
{
    static const char words[] = "segment span trace service instance endpoint http db cache "
                                "operation peer component layer tag log error status ";
    unsigned x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (x >> 16) % 7 == 0 ? (char)('0' + (x >> 8) % 10) : words[i % (sizeof(words) - 1)];
    }
}

static atomic_long ok_count, fail_count;

static void kp_cb(void *opaque, int error, int32_t partition, int64_t offset)
{
    (void)opaque;
    (void)partition;
    (void)offset;
    atomic_fetch_add_explicit(error ? &fail_count : &ok_count, 1, memory_order_relaxed);
}

static int run_ours(const char *bootstrap, const char *topic, long n, size_t size,
                    const char *codec)
{
    char err[256];
    kp_conf_t *c = kp_conf_new();
    kp_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof(err));
    kp_conf_set(c, "acks", "all", err, sizeof(err));
    kp_conf_set(c, "enable.idempotence", "true", err, sizeof(err));
    kp_conf_set(c, "linger.ms", "5", err, sizeof(err));
    kp_conf_set(c, "batch.size", "16384", err, sizeof(err));
    kp_conf_set(c, "buffer.memory", "33554432", err, sizeof(err));
    kp_conf_set(c, "compression.type", codec, err, sizeof(err));
    kp_producer_t *p = kp_producer_new(c, err, sizeof(err));
    kp_conf_destroy(c);
    if (!p) {
        fprintf(stderr, "kp_producer_new: %s\n", err);
        return -1;
    }
    char *v = malloc(size);
    fill_value(v, size);
    for (long i = 0; i < n; i++) {
        int rc = kp_send(p, topic, -1, NULL, 0, v, size, NULL, 0, 0, kp_cb, NULL);
        if (rc != 0) {
            fprintf(stderr, "kp_send: %s\n", kp_strerror(rc));
            break;
        }
    }
    kp_flush(p, 120000);
    kp_close(p, 10000);
    free(v);
    return 0;
}

static void rdk_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    atomic_fetch_add_explicit(m->err ? &fail_count : &ok_count, 1, memory_order_relaxed);
}

static int run_rdkafka(const char *bootstrap, const char *topic, long n, size_t size,
                       const char *codec)
{
    char err[512];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    const char *kv[][2] = {
        {"bootstrap.servers", bootstrap}, {"acks", "all"},
        {"enable.idempotence", "true"},   {"linger.ms", "5"},
        {"batch.size", "16384"},          {"queue.buffering.max.kbytes", "32768"},
        {"compression.type", codec}};
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
        if (rd_kafka_conf_set(c, kv[i][0], kv[i][1], err, sizeof(err)) != RD_KAFKA_CONF_OK) {
            fprintf(stderr, "rdkafka conf %s: %s\n", kv[i][0], err);
            return -1;
        }
    rd_kafka_conf_set_dr_msg_cb(c, rdk_dr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
    if (!rk) {
        fprintf(stderr, "rd_kafka_new: %s\n", err);
        return -1;
    }
    char *v = malloc(size);
    fill_value(v, size);
    for (long i = 0; i < n; i++) {
        for (;;) {
            rd_kafka_resp_err_t e =
                rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE(v, size),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                break;
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                fprintf(stderr, "producev: %s\n", rd_kafka_err2str(e));
                i = n;
                break;
            }
            rd_kafka_poll(rk, 1); /* blocks like kp_send does on a full buffer */
        }
        if ((i & 1023) == 0)
            rd_kafka_poll(rk, 0);
    }
    rd_kafka_flush(rk, 120000);
    rd_kafka_destroy(rk);
    free(v);
    return 0;
}

/* Runs one producer in a child process and returns its figures. */
static int run_child(int ours, const char *bootstrap, const char *topic, long n, size_t size,
                     const char *codec, struct result *out)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        double c0 = cpu_s(), t0 = now_s();
        int rc = ours ? run_ours(bootstrap, topic, n, size, codec)
                      : run_rdkafka(bootstrap, topic, n, size, codec);
        struct result r = {now_s() - t0, cpu_s() - c0, 0, atomic_load(&ok_count),
                           atomic_load(&fail_count)};
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        r.max_rss_kb = ru.ru_maxrss;
        if (write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
            _exit(3);
        _exit(rc == 0 ? 0 : 2);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], out, sizeof(*out));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return (got == (ssize_t)sizeof(*out) && WIFEXITED(status) && WEXITSTATUS(status) == 0) ? 0 : -1;
}

int main(int argc, char **argv)
{
    int smoke = 0;
    const char *bootstrap = NULL, *topic = "sw-test-6p";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0)
            smoke = 1;
        else if (strcmp(argv[i], "--bootstrap") == 0 && i + 1 < argc)
            bootstrap = argv[++i];
        else if (strcmp(argv[i], "--topic") == 0 && i + 1 < argc)
            topic = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--smoke] [--bootstrap host:port] [--topic name]\n",
                    argv[0]);
            return 2;
        }
    }
    sw_test_kafka_t k;
    if (bootstrap || !getenv("SW_TEST_KAFKA_DIR")) {
        char dir[64];
        snprintf(dir, sizeof(dir), "/tmp/kp-bench-broker-%d", (int)getpid());
        if (sw_test_kafka_bootstrap_or_start(&k, bootstrap, dir, "sw-test-6p:6") != 0)
            return 1;
    } else if (sw_test_kafka_fixture(&k) != 0) {
        return 1;
    }
    struct {
        const char *name;
        long n;
        size_t size;
        const char *codec;
    } work[] = {{"100b", smoke ? 20000 : 1000000, 100, "none"},
                {"1k", smoke ? 5000 : 200000, 1024, "none"},
                {"100b_gzip", smoke ? 20000 : 1000000, 100, "gzip"},
                {"1k_gzip", smoke ? 5000 : 200000, 1024, "gzip"}};
    double ratio[4] = {0}, cpu_ratio[4] = {0}, kp_msgs[4] = {0}, rdk_msgs[4] = {0};
    long kp_rss = 0;
    int failed = 0;
    printf("%-10s %-10s %12s %10s %14s %10s\n", "workload", "producer", "msgs/s", "MB/s",
           "cpu_s/M_msgs", "maxrss_MB");
    for (int w = 0; w < 4; w++) {
        struct result r[2];
        for (int ours = 1; ours >= 0; ours--) {
            if (run_child(ours, k.bootstrap, topic, work[w].n, work[w].size, work[w].codec,
                          &r[ours]) != 0 ||
                r[ours].delivered != work[w].n) {
                fprintf(stderr, "%s run of %s failed (delivered %ld of %ld)\n",
                        ours ? "kproducer" : "librdkafka", work[w].name, r[ours].delivered,
                        work[w].n);
                failed = 1;
            }
            double msgs = (double)work[w].n / r[ours].wall_s;
            printf("%-10s %-10s %12.0f %10.1f %14.3f %10.1f\n", work[w].name,
                   ours ? "kproducer" : "librdkafka", msgs, msgs * (double)work[w].size / 1e6,
                   r[ours].cpu_s * 1e6 / (double)work[w].n, (double)r[ours].max_rss_kb / 1024.0);
            (ours ? kp_msgs : rdk_msgs)[w] = msgs;
        }
        if (r[1].max_rss_kb > kp_rss)
            kp_rss = r[1].max_rss_kb;
        ratio[w] = kp_msgs[w] / rdk_msgs[w];
        cpu_ratio[w] = r[0].cpu_s > 0 ? r[1].cpu_s / r[0].cpu_s : 0;
        printf("%-10s ratio(kp/rdk) throughput=%.2f cpu=%.2f\n", work[w].name, ratio[w],
               cpu_ratio[w]);
    }
    sw_test_kafka_stop(&k);
    printf("kp_1k_msgs=%.0f rdk_1k_msgs=%.0f ratio_1k=%.2f cpu_ratio_1k=%.2f ratio_100b=%.2f "
           "cpu_ratio_100b=%.2f ratio_1k_gzip=%.2f ratio_100b_gzip=%.2f kp_maxrss_mb=%.1f\n",
           kp_msgs[1], rdk_msgs[1], ratio[1], cpu_ratio[1], ratio[0], cpu_ratio[0], ratio[3],
           ratio[2], (double)kp_rss / 1024.0);
    return failed;
}
