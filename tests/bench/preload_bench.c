/*
 * preload_bench - what automatic instrumentation costs.
 *
 *   1. Requests per second of the libmicrohttpd test server (pl_server, GET /leaf) under a
 *      loopback load from wrk, without and with libskywalking-preload.so (100% sampling, file
 *      reporter), in the same run: both servers start once and are warmed up for a second
 *      (agent start, first segment blocks, TCP); then the rounds load them in turn, alternating
 *      the order (off, on), (on, off), ... so a drift in the machine's load hits both sides
 *      alike. The figures are medians over the rounds (45 of 1 s each; --smoke: 1 round): short
 *      rounds, closely alternated, leave a drift of the machine little time to favour one side.
 *      overhead_pct is the median of the rounds' 100 * (off - on) / off. wrk, the server and the
 * agent's consumer thread share the machine's cores: the overhead includes the consumer's CPU time.
 *   2. The cost of one -finstrument-functions call (enter + exit) that the filters reject,
 *      against a call that is traced (a span opened and removed by the minimum duration).
 *
 * Usage: preload_bench [--smoke]. Last line: rps_off= rps_on= overhead_pct= cpu_us_per_req_off=
 * cpu_us_per_req_on= cpu_us_per_req_delta= cpu_overhead_pct= consumer_us_per_req=
 * cyg_filtered_ns= cyg_traced_ns= ratio_traced_to_filtered=
 *
 * cpu_us_per_req_delta is the median over the rounds of each back-to-back pair's traced minus
 * untraced server CPU per request (target <= 0.5 us); cpu_overhead_pct is it relative to the
 * untraced median. consumer_us_per_req is the median of the part of the traced server's CPU per
 * request that its agent consumer thread used (its /proc schedstat; < 0 when it was not found):
 * writing the segments to the file; the rest of the delta is the server's own threads'.
 *
 * cpu_us_per_req_* is the server's own CPU time (all its threads, the agent's consumer included)
 * per request served, from the process's CPU-time clock (clock_getcpuclockid, ns resolution):
 * unlike requests/s it barely depends on how much of the machine other processes take, so it
 * shows the agent's cost when the machine is shared. The consumer's work for a round's last
 * requests can fall after the round (it writes when a channel is half full, 150 segments, or
 * after its nap): at most 150 segments per server thread, under 1% of a round's.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "skywalking.h"
#include "test_util.h"
#include "thread_stat.h"

void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);

extern char **environ;

typedef struct server {
    pid_t pid;
    int stdin_w;
    unsigned port;
} server_t;

/* Starts pl_server, preloaded when `traced`; returns pid 0 on failure. */
static server_t server_start(bool traced, const char *dir)
{
    server_t s = {0, -1, 0};
    char portfile[512], segfile[512];
    snprintf(portfile, sizeof portfile, "%s/port%d", dir, traced);
    snprintf(segfile, sizeof segfile, "%s/seg.bin", dir);
    unlink(portfile);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        return s;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[0], 0);
        close(fds[1]);
        if (traced) {
            setenv("LD_PRELOAD", PL_PRELOAD_LIB, 1);
            setenv("SW_REPORTER_FILE_PATH", segfile, 1);
            setenv("SW_AGENT_SAMPLE", "-1", 1);
        }
        execl(PL_SERVER, PL_SERVER, "serve", portfile, (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    s.pid = pid;
    s.stdin_w = fds[1];
    for (int i = 0; i < 20000; i++) { /* bounded: 20 s */
        FILE *f = fopen(portfile, "r");
        if (f != NULL) {
            if (fscanf(f, "%u", &s.port) != 1) {
                s.port = 0;
            }
            fclose(f);
            if (s.port != 0) {
                return s;
            }
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    fprintf(stderr, "preload_bench: pl_server wrote no port\n");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    s.pid = 0;
    return s;
}

static void server_stop(server_t *s)
{
    close(s->stdin_w);
    waitpid(s->pid, NULL, 0);
}

/* Requests/s that wrk measures against the server for `seconds`; < 0 on failure. */
static double load_run(unsigned port, int seconds)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "wrk -t1 -c4 -d%ds http://127.0.0.1:%u/leaf 2>&1", seconds, port);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        return -1;
    }
    char line[512];
    double rps = -1;
    while (fgets(line, sizeof line, p) != NULL) {
        if (strncmp(line, "Requests/sec:", 13) == 0) {
            rps = atof(line + 13);
        }
    }
    pclose(p);
    return rps;
}

/* CPU seconds (user + system, every thread, exited ones included) the process `pid` has used
   so far, in nanoseconds' resolution from its CPU-time clock; < 0 when unreadable. */
static double process_cpu_s(pid_t pid)
{
    clockid_t clock;
    struct timespec ts;
    if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &ts) != 0) {
        return -1;
    }
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct round_result {
    double rps;
    double cpu_us_per_req;      /* server CPU time per request: insensitive to the machine's load */
    double consumer_us_per_req; /* the part of it the agent's consumer thread used; < 0: none */
} round_result_t;

/* CPU ns the agent's consumer thread of process `pid` has used so far; < 0 when it has none. */
static double consumer_cpu_ns(pid_t pid)
{
    char proc[32];
    snprintf(proc, sizeof proc, "%d", (int)pid);
    double ns;
    return thread_stat_read_of(proc, "sw-segment-c0", &ns, NULL) ? ns : -1;
}

/* One measured load against a running server: requests/s, its CPU per request and its
   consumer thread's part. */
static round_result_t http_measure(const server_t *s, int seconds)
{
    round_result_t res = {-1, -1, -1};
    double cpu0 = process_cpu_s(s->pid), cons0 = consumer_cpu_ns(s->pid);
    res.rps = load_run(s->port, seconds);
    double cpu1 = process_cpu_s(s->pid), cons1 = consumer_cpu_ns(s->pid);
    if (cpu0 >= 0 && cpu1 >= 0 && res.rps > 0) {
        res.cpu_us_per_req = (cpu1 - cpu0) * 1e6 / (res.rps * seconds);
    }
    if (cons0 >= 0 && cons1 >= 0 && res.rps > 0) {
        res.consumer_us_per_req = (cons1 - cons0) / 1e3 / (res.rps * seconds);
    }
    return res;
}

static int double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, double_cmp);
    return v[n / 2];
}

__attribute__((noinline)) void bench_rejected(void);
__attribute__((noinline)) void bench_rejected(void)
{
    __asm__ volatile("");
}

__attribute__((noinline)) void bench_traced(void);
__attribute__((noinline)) void bench_traced(void)
{
    __asm__ volatile("");
}

/* ns per enter+exit pair of the hooks for fn. */
static double cyg_cost(void (*fn)(void), long n)
{
    void *f;
    memcpy(&f, &fn, sizeof f);
    __cyg_profile_func_enter(f, NULL); /* warm the caches and name tables */
    __cyg_profile_func_exit(f, NULL);
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        __cyg_profile_func_enter(f, NULL);
        __cyg_profile_func_exit(f, NULL);
    }
    return (now_s() - t0) * 1e9 / (double)n;
}

int main(int argc, char **argv)
{
    bool smoke = argc > 1 && strcmp(argv[1], "--smoke") == 0;
    enum { MAX_ROUNDS = 45 };
    int seconds = 1, rounds = smoke ? 1 : MAX_ROUNDS;
    char dir[] = "/tmp/sw-preload-bench-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    double offs[MAX_ROUNDS], ons[MAX_ROUNDS], pcts[MAX_ROUNDS], cpu_offs[MAX_ROUNDS],
        cpu_ons[MAX_ROUNDS], cpu_deltas[MAX_ROUNDS], consumers[MAX_ROUNDS];
    /* Both servers run for the whole measurement, so the rounds can alternate closely. */
    server_t plain = server_start(false, dir), preloaded = server_start(true, dir);
    if (plain.pid == 0 || preloaded.pid == 0 || load_run(plain.port, 1) < 0 ||
        load_run(preloaded.port, 1) < 0) { /* warm-up: agent start, segment blocks, TCP */
        fprintf(stderr, "preload_bench: a server did not start or serve (is wrk installed?)\n");
        return 1;
    }
    for (int r = 0; r < rounds; r++) {
        round_result_t ra, rb;
        if (r % 2 == 0) {
            ra = http_measure(&plain, seconds);
            rb = http_measure(&preloaded, seconds);
        } else {
            rb = http_measure(&preloaded, seconds);
            ra = http_measure(&plain, seconds);
        }
        double a = ra.rps, b = rb.rps;
        if (a <= 0 || b <= 0) {
            fprintf(stderr, "preload_bench: a load round failed (is wrk installed?)\n");
            return 1;
        }
        pcts[r] = 100.0 * (a - b) / a;
        cpu_offs[r] = ra.cpu_us_per_req;
        cpu_ons[r] = rb.cpu_us_per_req;
        cpu_deltas[r] = cpu_ons[r] - cpu_offs[r];
        consumers[r] = rb.consumer_us_per_req;
        printf("round %d: rps_off=%.0f rps_on=%.0f overhead_pct=%.2f server_cpu_us_per_req "
               "off=%.2f on=%.2f delta=%.2f (agent consumer thread %.2f)\n",
               r, a, b, pcts[r], cpu_offs[r], cpu_ons[r], cpu_deltas[r], consumers[r]);
        fflush(stdout);
        offs[r] = a;
        ons[r] = b;
    }
    server_stop(&plain);
    server_stop(&preloaded);
    /* The overhead is the median of the rounds' own overheads: each compares two runs made
       back to back, which cancels most of a drift in the machine's load. */
    double off = median(offs, rounds), on = median(ons, rounds), pct = median(pcts, rounds);
    double cpu_off = median(cpu_offs, rounds), cpu_on = median(cpu_ons, rounds);
    double cpu_delta = median(cpu_deltas, rounds), consumer = median(consumers, rounds);
    printf("server CPU per request: off %.2f us, on %.2f us, traced minus untraced %.2f us "
           "(median of %d back-to-back pairs, %.2f..%.2f)\n",
           cpu_off, cpu_on, cpu_delta, rounds, cpu_deltas[0], cpu_deltas[rounds - 1]);
    char segfile[512];
    snprintf(segfile, sizeof segfile, "%s/seg.bin", dir);
    struct stat st;
    if (stat(segfile, &st) == 0) {
        printf("traced server wrote %lld bytes of segments\n", (long long)st.st_size);
    }
    unlink(segfile);

    /* The hooks: a rejected function, and a traced one whose span the minimum duration drops
       again (so that the segment stays small however long the loop runs). */
    char cygfile[512];
    snprintf(cygfile, sizeof cygfile, "%s/cyg.bin", dir);
    setenv("SW_REPORTER_FILE_PATH", cygfile, 1);
    setenv("SW_CYG_EXCLUDE", "bench_rejected", 1);
    setenv("SW_CYG_MIN_DURATION_US", "1000000", 1);
    if (sw_init(NULL) != 0) {
        return 1;
    }
    long n = smoke ? 1000000 : 20000000;
    double filtered = cyg_cost(bench_rejected, n);
    double traced = cyg_cost(bench_traced, n / 10);
    sw_shutdown();
    unlink(cygfile);
    for (int i = 0; i < 2; i++) {
        char pf[512];
        snprintf(pf, sizeof pf, "%s/port%d", dir, i);
        unlink(pf);
    }
    rmdir(dir);
    printf("rps_off=%.0f rps_on=%.0f overhead_pct=%.2f cpu_us_per_req_off=%.2f "
           "cpu_us_per_req_on=%.2f cpu_us_per_req_delta=%.2f cpu_overhead_pct=%.2f "
           "consumer_us_per_req=%.2f cyg_filtered_ns=%.2f cyg_traced_ns=%.1f "
           "ratio_traced_to_filtered=%.1f\n",
           off, on, pct, cpu_off, cpu_on, cpu_delta, 100.0 * cpu_delta / cpu_off, consumer,
           filtered, traced, traced / filtered);
    return 0;
}
