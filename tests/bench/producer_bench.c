/*
 * producer_bench.c - kproducer vs librdkafka against the same real broker in the same run.
 *
 * Payloads: real encoded SkyWalking SegmentObjects of varied content (bench_segments.h), keyed
 * by traceSegmentId as the agent's Kafka reporter sends them; ~1 KiB and ~100 B classes.
 *
 * Settings compared (see README "Benchmarks"):
 *   default  each client at its own defaults. Ours: the Java client's (batch.size 16384,
 *            linger.ms 5, buffer.memory 32 MiB, acks=all, idempotence on). librdkafka 2.0.2:
 *            its defaults (batch.size 1000000 bytes per MessageSet, which is one partition's
 *            whole ProduceRequest there; queue 1 GiB) with acks=all, enable.idempotence=true
 *            and linger.ms=5 set to match ours.
 *   tuned    the same bytes per request for both: 256 KiB. librdkafka batch.size=262144 (one
 *            partition per request); ours batch.size=262144 and max.request.size=262144 (a
 *            request then carries one batch), both with a 32 MiB buffer.
 *   sasl_ssl default settings over the broker's sasl_ssl listener (TLS with the test CA and
 *            host name verification, SASL PLAIN) for both clients.
 * Workloads: default_1k, default_100b, default_1k_gzip, default_1k_lz4, default_1k_zstd,
 * tuned_1k, sasl_ssl_1k (400k records of ~1 KiB, 2M of ~100 B; --smoke: 3k and 10k). Each is run
 * --reps times (default 3) per client, interleaved and alternating the order (ours first, then
 * librdkafka first,
 * ...); ratios are taken per repetition and the median with min-max is printed.
 *
 * Before the measured repetitions, every workload runs once per client at a tenth of the
 * records, unmeasured, so that the broker JVM's warm-up is charged to neither client.
 * Each client runs in a forked child; wait4() gives the CPU time of all its threads. The
 * broker's CPU time (utime+stime of the broker JVM from /proc/<pid>/stat, pid from the broker
 * directory) is read before and after each run. A run counts only when every record was
 * acknowledged without error; otherwise the bench says which run failed and exits non-zero.
 * Under ASan/TSan the librdkafka baseline is skipped (see TEST_SANITIZED).
 *
 * Usage: producer_bench [--smoke] [--reps N] [--bootstrap host:port] [--topic name]
 *                       [--only workload]
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

#include "bench_segments.h"
#include "kafka_test_env.h"
#include "kproducer.h"
#include "test_util.h"

#define N_PAYLOADS 512
#define MAX_REPS   15

enum { OURS = 0, RDK = 1 };
static const char *const who_name[2] = {"kproducer", "librdkafka"};

struct workload {
    const char *name;
    bench_segment_class_t cls;
    long n;
    const char *codec;
    int tuned;
    int sasl_ssl; /* over the broker's sasl_ssl listener (see `secure`) */
};

/* The SASL_SSL workload: both clients reach the broker's sasl_ssl listener (broker.sh
 * --security) with the same TLS settings (the test CA, host name verification on) and SASL
 * PLAIN: the Debian 12 librdkafka fails SCRAM against this broker, and the mechanism only
 * costs the handshake. Empty bootstrap: the broker has no such listener, workload skipped. */
static struct {
    char bootstrap[64];
    char ca[600];
    char user[64];
    char password[128];
} secure;

/* Reads DIR/<rel>'s first line into out; -1 when missing. */
static int dir_line(const char *dir, const char *rel, char *out, size_t len)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    FILE *f = fopen(path, "r");
    if (!f) {
        return -1;
    }
    int ok = fgets(out, (int)len, f) != NULL;
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return ok ? 0 : -1;
}

static void secure_find(const char *dir)
{
    char port[16];
    secure.bootstrap[0] = '\0';
    if (!dir[0] || dir_line(dir, "node1/sasl_ssl_port", port, sizeof(port)) != 0 ||
        dir_line(dir, "tls/sasl_user", secure.user, sizeof(secure.user)) != 0 ||
        dir_line(dir, "tls/sasl_password", secure.password, sizeof(secure.password)) != 0) {
        return;
    }
    snprintf(secure.ca, sizeof(secure.ca), "%s/tls/ca.pem", dir);
    snprintf(secure.bootstrap, sizeof(secure.bootstrap), "127.0.0.1:%s", port);
}

/* The security settings of w for either client (the same names exist in both). */
static int security_settings(const struct workload *w, const char *kv[][2])
{
    if (!w->sasl_ssl) {
        return 0;
    }
    const char *v[][2] = {{"security.protocol", "SASL_SSL"},
                          {"ssl.ca.location", secure.ca},
                          {"sasl.mechanisms", "PLAIN"},
                          {"sasl.username", secure.user},
                          {"sasl.password", secure.password}};
    memcpy(kv, v, sizeof(v));
    return 5;
}

struct result {
    double wall_s;   /* first send until every record is acknowledged */
    double cpu_s;    /* all threads of the child, whole life */
    double broker_s; /* broker JVM CPU during the child's life; < 0 when unknown */
    long max_rss_kb;
    long delivered;
    long failed;
};

static bench_payloads_t payloads[2]; /* by bench_segment_class_t; made before any fork */
static atomic_long ok_count, fail_count;

static void kp_cb(void *opaque, int error, int32_t partition, int64_t offset)
{
    (void)opaque;
    (void)partition;
    (void)offset;
    atomic_fetch_add_explicit(error ? &fail_count : &ok_count, 1, memory_order_relaxed);
}

static int set_ours(kp_conf_t *c, const char *k, const char *v)
{
    char err[256];
    if (kp_conf_set(c, k, v, err, sizeof(err)) == 0) {
        return 0;
    }
    fprintf(stderr, "kp_conf_set %s=%s: %s\n", k, v, err);
    return -1;
}

static int run_ours(const char *bootstrap, const char *topic, const struct workload *w,
                    double *wall)
{
    char err[256];
    kp_conf_t *c = kp_conf_new();
    int bad = set_ours(c, "bootstrap.servers", w->sasl_ssl ? secure.bootstrap : bootstrap) |
              set_ours(c, "compression.type", w->codec);
    if (w->tuned) {
        bad |= set_ours(c, "batch.size", "262144") | set_ours(c, "max.request.size", "262144");
    }
    const char *sec[5][2];
    for (int i = 0, n = security_settings(w, sec); i < n; i++) {
        bad |= set_ours(c, sec[i][0], sec[i][1]);
    }
    kp_producer_t *p = NULL;
    if (!bad && kp_producer_new(c, &p, err, sizeof(err)) != KP_OK) {
        p = NULL;
    }
    kp_conf_destroy(c);
    if (!p) {
        if (!bad) {
            fprintf(stderr, "kp_producer_new: %s\n", err);
        }
        return -1;
    }
    const bench_payloads_t *pl = &payloads[w->cls];
    double t0 = now_s();
    int rc = 0;
    for (long i = 0; i < w->n && rc == 0; i++) {
        const bench_payload_t *r = &pl->v[(size_t)i % pl->n];
        rc = kp_send(p, topic, -1, r->key, r->key_len, r->value, r->value_len, NULL, 0, 0, kp_cb,
                     NULL);
        if (rc != 0) {
            fprintf(stderr, "kp_send: %s\n", kp_strerror(rc));
        }
    }
    if (rc == 0 && (rc = kp_flush(p, 120000)) != 0) {
        fprintf(stderr, "kp_flush: %s\n", kp_strerror(rc));
    }
    *wall = now_s() - t0;
    kp_close(p, 10000);
    return rc == 0 ? 0 : -1;
}

static void rdk_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    atomic_fetch_add_explicit(m->err ? &fail_count : &ok_count, 1, memory_order_relaxed);
}

static int run_rdkafka(const char *bootstrap, const char *topic, const struct workload *w,
                       double *wall)
{
    char err[512];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    const char *kv[][2] = {{"bootstrap.servers", w->sasl_ssl ? secure.bootstrap : bootstrap},
                           {"acks", "all"},
                           {"enable.idempotence", "true"},
                           {"linger.ms", "5"},
                           {"compression.type", w->codec},
                           {w->tuned ? "batch.size" : NULL, "262144"},
                           {w->tuned ? "queue.buffering.max.kbytes" : NULL, "32768"}};
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
        if (kv[i][0] && rd_kafka_conf_set(c, kv[i][0], kv[i][1], err, sizeof(err))) {
            fprintf(stderr, "rdkafka conf %s: %s\n", kv[i][0], err);
            rd_kafka_conf_destroy(c);
            return -1;
        }
    }
    const char *sec[5][2];
    for (int i = 0, n = security_settings(w, sec); i < n; i++) {
        if (rd_kafka_conf_set(c, sec[i][0], sec[i][1], err, sizeof(err))) {
            fprintf(stderr, "rdkafka conf %s: %s\n", sec[i][0], err);
            rd_kafka_conf_destroy(c);
            return -1;
        }
    }
    rd_kafka_conf_set_dr_msg_cb(c, rdk_dr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
    if (!rk) {
        fprintf(stderr, "rd_kafka_new: %s\n", err);
        return -1;
    }
    const bench_payloads_t *pl = &payloads[w->cls];
    double t0 = now_s();
    int rc = 0;
    for (long i = 0; i < w->n && rc == 0; i++) {
        const bench_payload_t *r = &pl->v[(size_t)i % pl->n];
        for (;;) {
            rd_kafka_resp_err_t e =
                rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(r->key, r->key_len),
                                  RD_KAFKA_V_VALUE(r->value, r->value_len),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
                break;
            }
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                fprintf(stderr, "producev: %s\n", rd_kafka_err2str(e));
                rc = -1;
                break;
            }
            rd_kafka_poll(rk, 1); /* blocks like kp_send does on a full buffer */
        }
        if ((i & 1023) == 0) {
            rd_kafka_poll(rk, 0);
        }
    }
    if (rc == 0 && rd_kafka_flush(rk, 120000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "rd_kafka_flush: timed out\n");
        rc = -1;
    }
    *wall = now_s() - t0;
    rd_kafka_destroy(rk);
    return rc;
}

/* CPU seconds (utime + stime) of a process from /proc/<pid>/stat; < 0 when unreadable. */
static double proc_cpu_s(long pid)
{
    if (pid <= 0) {
        return -1;
    }
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        return -1;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Fields after the ")" that ends comm: state is field 3, utime 14, stime 15. */
    const char *p = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    if (!p ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2) {
        return -1;
    }
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long broker_pid(const sw_test_kafka_t *k)
{
    if (!k->dir[0]) {
        return -1;
    }
    char path[600];
    snprintf(path, sizeof(path), "%s/node1/pid", k->dir);
    FILE *f = fopen(path, "r");
    long pid = -1;
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1) {
            pid = -1;
        }
        fclose(f);
    }
    return pid;
}

/* Runs one client in a child process and fills *out. Returns 0 when the child ran to the end
 * and every record was acknowledged; otherwise -1 with the reason in why. */
static int run_child(int who, const char *bootstrap, const char *topic, const struct workload *w,
                     long bpid, struct result *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof(*out));
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(why, why_len, "pipe() failed");
        return -1;
    }
    fflush(NULL);
    double b0 = proc_cpu_s(bpid);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        snprintf(why, why_len, "fork() failed");
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        struct result r = {0};
        int rc = who == OURS ? run_ours(bootstrap, topic, w, &r.wall_s)
                             : run_rdkafka(bootstrap, topic, w, &r.wall_s);
        r.delivered = atomic_load(&ok_count);
        r.failed = atomic_load(&fail_count);
        if (write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r)) {
            _exit(3);
        }
        _exit(rc == 0 ? 0 : 2);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], out, sizeof(*out));
    close(fds[0]);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    wait4(pid, &status, 0, &ru);
    double b1 = proc_cpu_s(bpid);
    out->broker_s = b0 >= 0 && b1 >= 0 ? b1 - b0 : -1;
    out->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    out->max_rss_kb = ru.ru_maxrss;
    if (WIFSIGNALED(status)) {
        snprintf(why, why_len, "child killed by signal %d", WTERMSIG(status));
    } else if (got != (ssize_t)sizeof(*out)) {
        snprintf(why, why_len, "child exited with status %d before reporting", WEXITSTATUS(status));
    } else if (WEXITSTATUS(status) != 0) {
        snprintf(why, why_len, "child exited with status %d (error above); %ld of %ld acked",
                 WEXITSTATUS(status), out->delivered, w->n);
    } else if (out->delivered != w->n || out->failed != 0) {
        snprintf(why, why_len, "acknowledged %ld of %ld, %ld failed", out->delivered, w->n,
                 out->failed);
    } else if (!(out->wall_s > 0)) {
        snprintf(why, why_len, "no time measured");
    } else {
        return 0;
    }
    return -1;
}

/* Per workload: each repetition's figures per client. */
struct figures {
    int reps; /* repetitions with both clients measured */
    double msgs[2][MAX_REPS], cpu_m[2][MAX_REPS], broker_m[2][MAX_REPS];
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median, min and max of v[0..n); all 0 when n == 0. */
static void stats(const double *v, int n, double *med, double *lo, double *hi)
{
    double s[MAX_REPS];
    *med = *lo = *hi = 0;
    if (n <= 0) {
        return;
    }
    memcpy(s, v, (size_t)n * sizeof(*s));
    qsort(s, (size_t)n, sizeof(*s), cmp_double);
    *med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    *lo = s[0];
    *hi = s[n - 1];
}

/* ratio[r] = a[r] / b[r] for every repetition. */
static void ratios(const double *a, const double *b, int n, double *out)
{
    for (int r = 0; r < n; r++) {
        out[r] = b[r] > 0 ? a[r] / b[r] : 0;
    }
}

static void measure_rep(const struct workload *w, int rep, const char *bootstrap, const char *topic,
                        int with_baseline, long bpid, struct figures *f, int *failed)
{
    double msgs[2] = {0}, cpu_m[2] = {0}, broker_m[2] = {0};
    for (int k = 0; k < 2; k++) {
        int who = (rep % 2 == 0) == (k == 0) ? OURS : RDK; /* alternate the order */
        if (who == RDK && !with_baseline) {
            continue;
        }
        struct result r;
        char why[200];
        if (run_child(who, bootstrap, topic, w, bpid, &r, why, sizeof(why)) != 0) {
            fprintf(stderr, "producer_bench: FAILED: %s run %d of %s (%ld records, %s): %s\n",
                    who_name[who], rep + 1, w->name, w->n, w->codec, why);
            *failed = 1;
            return;
        }
        msgs[who] = (double)w->n / r.wall_s;
        cpu_m[who] = r.cpu_s * 1e6 / (double)w->n;
        broker_m[who] = r.broker_s >= 0 ? r.broker_s * 1e6 / (double)w->n : 0;
        printf("%-16s %d %-10s %10.0f %9.1f %12.2f %12.2f %9.1f\n", w->name, rep + 1, who_name[who],
               msgs[who],
               msgs[who] * (double)payloads[w->cls].value_bytes / (double)payloads[w->cls].n / 1e6,
               cpu_m[who], broker_m[who], (double)r.max_rss_kb / 1024.0);
    }
    int i = f->reps++;
    for (int who = 0; who < 2; who++) {
        f->msgs[who][i] = msgs[who];
        f->cpu_m[who][i] = cpu_m[who];
        f->broker_m[who][i] = broker_m[who];
    }
}

/* Appends "name=median name_min=lo name_max=hi" of a/b over the repetitions to line. */
static void put_ratio(char *line, size_t cap, const char *name, const double *a, const double *b,
                      int n, int minmax)
{
    double r[MAX_REPS], med, lo, hi;
    ratios(a, b, n, r);
    stats(r, n, &med, &lo, &hi);
    size_t len = strlen(line);
    if (!(med > 0)) {
        snprintf(line + len, cap - len, "%s=na ", name);
    } else if (minmax) {
        snprintf(line + len, cap - len, "%s=%.2f %s_min=%.2f %s_max=%.2f ", name, med, name, lo,
                 name, hi);
    } else {
        snprintf(line + len, cap - len, "%s=%.2f ", name, med);
    }
}

static void print_summary(const struct workload *w, const struct figures *f)
{
    double m[2], c[2], b[2], lo, hi, r[MAX_REPS];
    for (int who = 0; who < 2; who++) {
        stats(f->msgs[who], f->reps, &m[who], &lo, &hi);
        stats(f->cpu_m[who], f->reps, &c[who], &lo, &hi);
        stats(f->broker_m[who], f->reps, &b[who], &lo, &hi);
    }
    if (!(m[RDK] > 0)) {
        printf("%-16s median of %d: kp %.0f msgs/s (cpu %.2f s/M, broker %.2f s/M); librdkafka "
               "skipped\n",
               w->name, f->reps, m[OURS], c[OURS], b[OURS]);
        return;
    }
    ratios(f->msgs[OURS], f->msgs[RDK], f->reps, r);
    double rm, rlo, rhi;
    stats(r, f->reps, &rm, &rlo, &rhi);
    printf("%-16s median of %d: kp %.0f msgs/s (cpu %.2f s/M, broker %.2f s/M), rdk %.0f msgs/s "
           "(cpu %.2f s/M, broker %.2f s/M); throughput ratio %.2f [%.2f-%.2f]\n",
           w->name, f->reps, m[OURS], c[OURS], b[OURS], m[RDK], c[RDK], b[RDK], rm, rlo, rhi);
}

int main(int argc, char **argv)
{
    int smoke = 0, reps = 3;
    const char *bootstrap = NULL, *topic = "sw-test-6p", *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            smoke = 1;
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--bootstrap") == 0 && i + 1 < argc) {
            bootstrap = argv[++i];
        } else if (strcmp(argv[i], "--topic") == 0 && i + 1 < argc) {
            topic = argv[++i];
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else {
            fprintf(stderr,
                    "usage: %s [--smoke] [--reps N] [--bootstrap host:port] [--topic name] "
                    "[--only workload]\n",
                    argv[0]);
            return 2;
        }
    }
    if (smoke) {
        reps = 1;
    }
    if (reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "producer_bench: --reps must be 1..%d\n", MAX_REPS);
        return 2;
    }
    if (bench_payloads_make(&payloads[BENCH_SEGMENT_SMALL], BENCH_SEGMENT_SMALL, N_PAYLOADS, 7) ||
        bench_payloads_make(&payloads[BENCH_SEGMENT_LARGE], BENCH_SEGMENT_LARGE, N_PAYLOADS, 11)) {
        fprintf(stderr, "producer_bench: out of memory for payloads\n");
        return 1;
    }
    sw_test_kafka_t k;
    memset(&k, 0, sizeof(k));
    if (bootstrap || !getenv("SW_TEST_KAFKA_DIR")) {
        char dir[64];
        snprintf(dir, sizeof(dir), "/tmp/kp-bench-broker-%d", (int)getpid());
        if (sw_test_kafka_bootstrap_or_start(&k, bootstrap, dir, "sw-test-6p:6") != 0) {
            return 1;
        }
    } else if (sw_test_kafka_fixture(&k) != 0) {
        return 1;
    }
    long bpid = bootstrap ? -1 : broker_pid(&k);
    /* Under a sanitizer, librdkafka (not instrumented) in an instrumented process is neither
     * meaningful as a baseline nor reliable (TSan reports its own threads' races and may kill
     * the child), so the baseline is skipped and only our producer is measured. */
    int with_baseline = !TEST_SANITIZED;
    if (!with_baseline) {
        printf("sanitizer build: librdkafka baseline skipped; measuring kproducer only\n");
    }
    const long n1k = smoke ? 3000 : 400000, n100 = smoke ? 10000 : 2000000;
    const struct workload work[] = {
        {"default_1k", BENCH_SEGMENT_LARGE, n1k, "none", 0, 0},
        {"default_100b", BENCH_SEGMENT_SMALL, n100, "none", 0, 0},
        {"default_1k_gzip", BENCH_SEGMENT_LARGE, n1k, "gzip", 0, 0},
        {"default_1k_lz4", BENCH_SEGMENT_LARGE, n1k, "lz4", 0, 0},
        {"default_1k_zstd", BENCH_SEGMENT_LARGE, n1k, "zstd", 0, 0},
        {"tuned_1k", BENCH_SEGMENT_LARGE, n1k, "none", 1, 0},
        {"sasl_ssl_1k", BENCH_SEGMENT_LARGE, n1k, "none", 0, 1},
    };
    enum { N_WORK = sizeof(work) / sizeof(work[0]) };
    secure_find(k.dir);
    if (!secure.bootstrap[0]) {
        printf("no sasl_ssl listener (broker.sh --security): sasl_ssl_1k skipped\n");
    }
    int skip[N_WORK];
    for (int w = 0; w < N_WORK; w++) {
        skip[w] =
            (work[w].sasl_ssl && !secure.bootstrap[0]) || (only && strcmp(only, work[w].name) != 0);
    }
    for (int c = 0; c < 2; c++) {
        printf("payload class %s: %zu SegmentObjects, mean %zu B, key %zu B\n",
               c == BENCH_SEGMENT_SMALL ? "100b" : "1k", payloads[c].n,
               payloads[c].value_bytes / payloads[c].n, payloads[c].v[0].key_len);
    }
    printf("broker pid %ld (%s)\n", bpid, bpid > 0 ? "CPU measured" : "CPU not measured");
    printf("%-16s %s %-10s %10s %9s %12s %12s %9s\n", "workload", "r", "producer", "msgs/s", "MB/s",
           "cpu_s/M", "broker_s/M", "maxrss_MB");
    static struct figures f[N_WORK];
    int failed = 0;
    /* A fresh broker JVM compiles its produce path (and each codec's) during its first runs,
     * which would charge whichever client goes first: one unmeasured run of every workload
     * and client at a tenth of the records first (it must succeed like any other). */
    for (int w = 0; w < N_WORK && !smoke && !failed; w++) {
        if (skip[w]) {
            continue;
        }
        struct workload warm = work[w];
        warm.n /= 10;
        for (int who = 0; who < 2 && !failed; who++) {
            struct result r;
            char why[200];
            if ((who == RDK && !with_baseline) ||
                run_child(who, k.bootstrap, topic, &warm, bpid, &r, why, sizeof(why)) == 0) {
                continue;
            }
            fprintf(stderr, "producer_bench: FAILED: %s warm-up of %s: %s\n", who_name[who],
                    warm.name, why);
            failed = 1;
        }
    }
    if (!smoke && !failed) {
        printf("warm-up done (one unmeasured run of each workload and client, n/10)\n");
    }
    for (int rep = 0; rep < reps && !failed; rep++) {
        for (int w = 0; w < N_WORK && !failed; w++) {
            if (skip[w]) {
                continue;
            }
            measure_rep(&work[w], rep, k.bootstrap, topic, with_baseline, bpid, &f[w], &failed);
        }
    }
    sw_test_kafka_stop(&k);
    if (failed) {
        printf("failed=1\n");
        return 1;
    }
    for (int w = 0; w < N_WORK; w++) {
        if (f[w].reps > 0) {
            print_summary(&work[w], &f[w]);
        }
    }
    char line[2048] = "";
    const char *keys[N_WORK] = {"ratio_default_1k",      "ratio_default_100b",
                                "ratio_default_1k_gzip", "ratio_default_1k_lz4",
                                "ratio_default_1k_zstd", "ratio_tuned_1k",
                                "ratio_sasl_ssl_1k"};
    for (int w = 0; w < N_WORK; w++) {
        put_ratio(line, sizeof(line), keys[w], f[w].msgs[OURS], f[w].msgs[RDK], f[w].reps, 1);
    }
    /* CPU ratios: ours over librdkafka's (<= 1 means we cost less). */
    put_ratio(line, sizeof(line), "cpu_ratio_default_1k", f[0].cpu_m[OURS], f[0].cpu_m[RDK],
              f[0].reps, 1);
    put_ratio(line, sizeof(line), "broker_cpu_ratio_default_1k", f[0].broker_m[OURS],
              f[0].broker_m[RDK], f[0].reps, 1);
    put_ratio(line, sizeof(line), "cpu_ratio_tuned_1k", f[5].cpu_m[OURS], f[5].cpu_m[RDK],
              f[5].reps, 0);
    put_ratio(line, sizeof(line), "broker_cpu_ratio_tuned_1k", f[5].broker_m[OURS],
              f[5].broker_m[RDK], f[5].reps, 0);
    put_ratio(line, sizeof(line), "cpu_ratio_default_100b", f[1].cpu_m[OURS], f[1].cpu_m[RDK],
              f[1].reps, 0);
    put_ratio(line, sizeof(line), "cpu_ratio_sasl_ssl_1k", f[6].cpu_m[OURS], f[6].cpu_m[RDK],
              f[6].reps, 1);
    double kp_cpu, rdk_cpu, kp_b, rdk_b, lo, hi;
    stats(f[0].cpu_m[OURS], f[0].reps, &kp_cpu, &lo, &hi);
    stats(f[0].cpu_m[RDK], f[0].reps, &rdk_cpu, &lo, &hi);
    stats(f[0].broker_m[OURS], f[0].reps, &kp_b, &lo, &hi);
    stats(f[0].broker_m[RDK], f[0].reps, &rdk_b, &lo, &hi);
    printf("%skp_cpu_s_per_m_default_1k=%.2f rdk_cpu_s_per_m_default_1k=%.2f "
           "broker_cpu_s_per_m_kp_default_1k=%.2f broker_cpu_s_per_m_rdk_default_1k=%.2f reps=%d "
           "baseline=%s failed=0\n",
           line, kp_cpu, rdk_cpu, kp_b, rdk_b, reps,
           with_baseline ? "librdkafka" : "skipped_sanitizer");
    return 0;
}
