/*
 * producer_bench.c - kproducer vs librdkafka against the same real broker in the same run.
 *
 * Equal settings for both: acks=all, idempotence on, linger 5 ms, batch 16 KiB, 32 MiB buffer,
 * compression none or gzip. Workloads: 1M x 100 B and 200k x 1 KiB, each uncompressed and gzip
 * (--smoke: 20k and 5k). Under ASan/TSan the librdkafka baseline is skipped (see TEST_SANITIZED).
 * Each producer runs in a forked child, so getrusage(RUSAGE_SELF) around
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
#include "test_util.h"

struct result {
    double wall_s;
    double cpu_s;
    long max_rss_kb;
    long delivered;
    long failed;
};

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

/* Runs one producer in a child process and fills *out. Returns 0 when the child ran to the
 * end and every record was delivered; otherwise -1 with the reason in why. */
static int run_child(int ours, const char *bootstrap, const char *topic, long n, size_t size,
                     const char *codec, struct result *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof(*out));
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(why, why_len, "pipe() failed");
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        snprintf(why, why_len, "fork() failed");
        return -1;
    }
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
    if (WIFSIGNALED(status))
        snprintf(why, why_len, "child killed by signal %d", WTERMSIG(status));
    else if (got != (ssize_t)sizeof(*out))
        snprintf(why, why_len, "child exited with status %d before reporting", WEXITSTATUS(status));
    else if (WEXITSTATUS(status) != 0)
        snprintf(why, why_len, "child exited with status %d (setup error, see above)",
                 WEXITSTATUS(status));
    else if (out->delivered != n)
        snprintf(why, why_len, "delivered %ld of %ld, %ld failed", out->delivered, n, out->failed);
    else if (!(out->wall_s > 0))
        snprintf(why, why_len, "no time measured");
    else
        return 0;
    return -1;
}

struct workload {
    const char *name;
    long n;
    size_t size;
    const char *codec;
};

/* Figures of one workload: msgs/s of each producer (0 = run failed or skipped). */
struct figures {
    double msgs[2];
    double cpu_s[2];
    double ratio;     /* 0 when either side has no figure */
    double cpu_ratio; /* 0 when either side has no figure */
};

static void measure(const struct workload *w, const char *bootstrap, const char *topic,
                    int with_baseline, struct figures *f, long *kp_rss, int *failed)
{
    memset(f, 0, sizeof(*f));
    for (int ours = 1; ours >= 0; ours--) {
        const char *who = ours ? "kproducer" : "librdkafka";
        if (!ours && !with_baseline) {
            printf("%-10s %-10s %12s\n", w->name, who, "skipped");
            continue;
        }
        struct result r;
        char why[160];
        if (run_child(ours, bootstrap, topic, w->n, w->size, w->codec, &r, why, sizeof(why))) {
            fprintf(stderr, "producer_bench: %s run of workload %s (%ld x %zu B, %s) failed: %s\n",
                    who, w->name, w->n, w->size, w->codec, why);
            printf("%-10s %-10s %12s  (%s)\n", w->name, who, "FAILED", why);
            *failed = 1;
            continue;
        }
        double msgs = (double)w->n / r.wall_s;
        printf("%-10s %-10s %12.0f %10.1f %14.3f %10.1f\n", w->name, who, msgs,
               msgs * (double)w->size / 1e6, r.cpu_s * 1e6 / (double)w->n,
               (double)r.max_rss_kb / 1024.0);
        f->msgs[ours] = msgs;
        f->cpu_s[ours] = r.cpu_s;
        if (ours && r.max_rss_kb > *kp_rss)
            *kp_rss = r.max_rss_kb;
    }
    if (f->msgs[0] > 0 && f->msgs[1] > 0) {
        f->ratio = f->msgs[1] / f->msgs[0];
        f->cpu_ratio = f->cpu_s[0] > 0 ? f->cpu_s[1] / f->cpu_s[0] : 0;
        printf("%-10s ratio(kp/rdk) throughput=%.2f cpu=%.2f\n", w->name, f->ratio, f->cpu_ratio);
    }
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
    /* Under a sanitizer, librdkafka (not instrumented) in an instrumented process is neither
     * meaningful as a baseline nor reliable (TSan reports its own threads' races and may kill
     * the child), so the baseline is skipped and only our producer is measured. */
    int with_baseline = !TEST_SANITIZED;
    if (!with_baseline)
        printf("sanitizer build: librdkafka baseline skipped (an uninstrumented librdkafka in a "
               "sanitized process is not a meaningful or reliable comparison); measuring "
               "kproducer only\n");
    const struct workload work[] = {{"100b", smoke ? 20000 : 1000000, 100, "none"},
                                    {"1k", smoke ? 5000 : 200000, 1024, "none"},
                                    {"100b_gzip", smoke ? 20000 : 1000000, 100, "gzip"},
                                    {"1k_gzip", smoke ? 5000 : 200000, 1024, "gzip"}};
    struct figures f[4];
    long kp_rss = 0;
    int failed = 0;
    printf("%-10s %-10s %12s %10s %14s %10s\n", "workload", "producer", "msgs/s", "MB/s",
           "cpu_s/M_msgs", "maxrss_MB");
    for (int w = 0; w < 4; w++)
        measure(&work[w], k.bootstrap, topic, with_baseline, &f[w], &kp_rss, &failed);
    sw_test_kafka_stop(&k);
    /* A figure that could not be measured is printed as "na", never as inf or garbage. */
    char ratios[4][2][16];
    for (int w = 0; w < 4; w++) {
        if (f[w].ratio > 0)
            snprintf(ratios[w][0], sizeof(ratios[w][0]), "%.2f", f[w].ratio);
        else
            snprintf(ratios[w][0], sizeof(ratios[w][0]), "na");
        if (f[w].cpu_ratio > 0)
            snprintf(ratios[w][1], sizeof(ratios[w][1]), "%.2f", f[w].cpu_ratio);
        else
            snprintf(ratios[w][1], sizeof(ratios[w][1]), "na");
    }
    printf("kp_1k_msgs=%.0f rdk_1k_msgs=%.0f ratio_1k=%s cpu_ratio_1k=%s ratio_100b=%s "
           "cpu_ratio_100b=%s ratio_1k_gzip=%s ratio_100b_gzip=%s kp_maxrss_mb=%.1f baseline=%s "
           "failed=%d\n",
           f[1].msgs[1], f[1].msgs[0], ratios[1][0], ratios[1][1], ratios[0][0], ratios[0][1],
           ratios[3][0], ratios[2][0], (double)kp_rss / 1024.0,
           with_baseline ? "librdkafka" : "skipped_sanitizer", failed);
    return failed;
}
