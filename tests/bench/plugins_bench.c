/*
 * plugins_bench - what the database and cache plugins of libskywalking-preload.so cost per
 * traced call, against the same calls without the preload, in the same run.
 *
 *   pq:    PQexec("SELECT 1") over a unix socket to a real PostgreSQL
 *   redis: redisCommand("GET k") over loopback TCP to a real Redis
 *
 * Each measurement is a child process (this program in "client" mode, linking libpq and
 * hiredis dynamically) that connects, makes 200 warm-up calls (agent start, first segment
 * blocks), waits until the agent has written everything, then makes N measured calls and
 * waits again until the agent has written their segments (the file has not grown for 200 ms;
 * the plain side idles the same time). It reports the CPU time of that stretch from
 * CLOCK_PROCESS_CPUTIME_ID: every thread of the process, the agent's consumer (encoding,
 * writing) included; per call = that / N. A round measures plain and traced
 * (the preload, 100% sampling, file reporter; every call is its own segment) with the order
 * alternating between rounds so that drift hits both sides; delta = traced - plain per round,
 * and the figures are medians over the rounds, with the spread (min..max) of the deltas. After
 * each traced run the segment file must hold exactly one segment per call: a dropped segment
 * fails the benchmark (never measure while dropping).
 *
 * Servers: those of the ctest fixture db when SW_TEST_DB_STATE names its directory, otherwise
 * tests/support/db/servers.sh is started for the run and stopped at the end.
 *
 * Usage: plugins_bench [--smoke] [--rounds R]   (default 7 rounds of N=10000 calls per side;
 *        --smoke: 1 round of N=300)
 * Last line: pq_cpu_ns_per_call_plain= pq_cpu_ns_per_call_traced= pq_cpu_ns_per_call_delta=
 *            pq_delta_min= pq_delta_max= redis_cpu_ns_per_call_plain= ... redis_delta_max=
 */
#include <hiredis.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS_MAX 31

extern char **environ;

static char state_dir[512];
static bool own_servers;

static void servers_close(void);

/* Fails the benchmark; servers it started itself are stopped first. */
static void die(const char *what)
{
    fprintf(stderr, "plugins_bench: %s\n", what);
    servers_close();
    exit(1);
}

/* ---- client mode --------------------------------------------------------------------------- */

#define WARMUP_CALLS 200

static int64_t cpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* every thread of the process */
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Waits until the agent has written what it holds: the segment file (when tracing) has not
   grown for 200 ms (10 consumer cycles), at most 30 s. Without the preload it only sleeps the
   same 200 ms, so that both sides idle alike. */
static void drain_wait(void)
{
    const char *path = getenv("SW_REPORTER_FILE_PATH");
    off_t last = -1;
    int stable_ms = 0;
    for (int waited = 0; waited < 30000 && stable_ms < 200; waited += 10) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL); /* polling a file another thread writes: nothing to wait on */
        struct stat st;
        off_t size = path != NULL && stat(path, &st) == 0 ? st.st_size : 0;
        stable_ms = size == last ? stable_ms + 10 : 0;
        last = size;
    }
}

/* Prints the CPU time of the n measured calls, drain included, for the parent. */
static void client_report(int64_t cpu0)
{
    drain_wait();
    printf("%lld\n", (long long)(cpu_now_ns() - cpu0));
}

static int client_pq(long n)
{
    char info[1024];
    snprintf(info, sizeof info, "host=%s port=%s dbname=swtest user=postgres",
             getenv("SW_TEST_PG_SOCKDIR"), getenv("SW_TEST_PG_PORT"));
    PGconn *c = PQconnectdb(info);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "plugins_bench client: %s", PQerrorMessage(c));
        return 1;
    }
    int64_t cpu0 = 0;
    for (long i = 0; i < n + WARMUP_CALLS; i++) {
        if (i == WARMUP_CALLS) {
            drain_wait();
            cpu0 = cpu_now_ns();
        }
        PGresult *r = PQexec(c, "SELECT 1");
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            fprintf(stderr, "plugins_bench client: %s", PQresultErrorMessage(r));
            return 1;
        }
        PQclear(r);
    }
    client_report(cpu0);
    PQfinish(c);
    return 0;
}

static int client_redis(long n)
{
    redisContext *c = redisConnect("127.0.0.1", atoi(getenv("SW_TEST_REDIS_PORT")));
    if (c == NULL || c->err) {
        fprintf(stderr, "plugins_bench client: redisConnect failed\n");
        return 1;
    }
    freeReplyObject(redisCommand(c, "SET k v"));
    int64_t cpu0 = 0;
    for (long i = 0; i < n + WARMUP_CALLS; i++) {
        if (i == WARMUP_CALLS) {
            drain_wait();
            cpu0 = cpu_now_ns();
        }
        redisReply *r = redisCommand(c, "GET k");
        if (r == NULL || r->type != REDIS_REPLY_STRING) {
            fprintf(stderr, "plugins_bench client: GET failed\n");
            return 1;
        }
        freeReplyObject(r);
    }
    client_report(cpu0);
    redisFree(c);
    return 0;
}

/* ---- servers ------------------------------------------------------------------------------- */

static void servers_env(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/env", state_dir);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        die("no server env file: the db servers did not start");
    }
    char line[1024];
    while (fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char *eq = strchr(line, '=');
        if (eq != NULL) {
            *eq = '\0';
            setenv(line, eq + 1, 1);
        }
    }
    fclose(f);
}

static void servers_script(const char *cmd)
{
    char line[1200];
    snprintf(line, sizeof line, "%s %s --dir %s --lifetime 1800 >&2", PL_DB_SERVERS_SH, cmd,
             state_dir);
    if (system(line) != 0 && strcmp(cmd, "start") == 0) {
        die("tests/support/db/servers.sh start failed");
    }
}

static void servers_open(void)
{
    const char *fixture = getenv("SW_TEST_DB_STATE");
    if (fixture != NULL && fixture[0] != '\0') {
        snprintf(state_dir, sizeof state_dir, "%s", fixture);
    } else {
        snprintf(state_dir, sizeof state_dir, "/tmp/sw-plugins-bench.%d", (int)getpid());
        own_servers = true;
        servers_script("start");
    }
    servers_env();
}

static void servers_close(void)
{
    if (own_servers) {
        own_servers = false; /* once, also when stopping fails and dies */
        servers_script("stop");
        rmdir(state_dir);
    }
}

/* ---- measuring ----------------------------------------------------------------------------- */

/* Segments in a file reporter's output (length-delimited records). -1: corrupt. */
static long segments_count(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return 0;
    }
    long n = 0;
    for (;;) {
        uint64_t len = 0;
        int shift = 0, ch = 0;
        while ((ch = fgetc(f)) != EOF && shift < 64) {
            len |= (uint64_t)(ch & 0x7f) << shift;
            shift += 7;
            if ((ch & 0x80) == 0) {
                break;
            }
        }
        if (ch == EOF) {
            break;
        }
        if (fseek(f, (long)len, SEEK_CUR) != 0) {
            n = -1;
            break;
        }
        n++;
    }
    fclose(f);
    return n;
}

/* Runs the client for `what` with n measured calls, preloaded when `traced`; returns the CPU
   time the client measured for them (all its threads, the agent's drain included), in ns. */
static double client_cpu_ns(const char *self, const char *what, long n, bool traced)
{
    char segfile[700], count[32];
    snprintf(segfile, sizeof segfile, "%s/bench-%d.bin", getenv("SW_TEST_DB_TMP"), (int)getpid());
    unlink(segfile);
    snprintf(count, sizeof count, "%ld", n);
    int fds[2];
    if (pipe(fds) != 0) {
        die("pipe failed");
    }
    pid_t pid = fork();
    if (pid < 0) {
        die("fork failed");
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        if (traced) {
            setenv("LD_PRELOAD", PL_PRELOAD_LIB, 1);
            setenv("SW_REPORTER_FILE_PATH", segfile, 1);
            setenv("SW_AGENT_NAME", "plugins-bench", 1);
            /* Room for a whole run in the DataCarrier (5 x 4096 slots), so that a consumer
               starved by a loaded machine delays the writes instead of dropping segments;
               small blocks (one span each here) keep that bounded (~ 20 k x 6 KiB). */
            setenv("SW_BUFFER_BUFFER_SIZE", "4096", 1);
            setenv("SW_AGENT_SPAN_LIMIT", "16", 1);
            setenv("SW_AGENT_SEGMENT_ARENA_BYTES", "4096", 1);
        }
        execl(self, self, "client", what, count, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char out[64] = "";
    ssize_t got_bytes = read(fds[0], out, sizeof out - 1); /* blocks until the client reports */
    close(fds[0]);
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || got_bytes <= 0) {
        die("the client failed");
    }
    if (traced) {
        /* warm-up calls, measured calls, and the redis client's SET */
        long want = n + WARMUP_CALLS + (strcmp(what, "redis") == 0);
        long got = segments_count(segfile);
        if (got != want) {
            fprintf(stderr, "plugins_bench: %s: %ld segments for %ld calls\n", what, got, want);
            die("segments were dropped or lost: the figures would be wrong");
        }
        unlink(segfile);
    }
    return atof(out);
}

static double per_call(const char *self, const char *what, long n, bool traced)
{
    return client_cpu_ns(self, what, n, traced) / (double)n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    double tmp[ROUNDS_MAX];
    memcpy(tmp, v, (size_t)n * sizeof *v);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

typedef struct figures {
    double plain, traced, delta, dmin, dmax;
} figures_t;

static figures_t measure(const char *self, const char *what, int rounds, long n)
{
    double plain[ROUNDS_MAX], traced[ROUNDS_MAX], delta[ROUNDS_MAX];
    /* A discarded round first: the first clients after the servers start run far slower
       (servers' caches, page faults of fresh mappings), which is not what is measured. */
    (void)per_call(self, what, n / 4 + 1, false);
    (void)per_call(self, what, n / 4 + 1, true);
    for (int r = 0; r < rounds; r++) {
        if (r % 2 == 0) {
            plain[r] = per_call(self, what, n, false);
            traced[r] = per_call(self, what, n, true);
        } else {
            traced[r] = per_call(self, what, n, true);
            plain[r] = per_call(self, what, n, false);
        }
        delta[r] = traced[r] - plain[r];
        fprintf(stderr, "plugins_bench: %s round %d: plain %.0f ns, traced %.0f ns, delta %.0f\n",
                what, r + 1, plain[r], traced[r], delta[r]);
    }
    figures_t f = {median(plain, rounds), median(traced, rounds), median(delta, rounds), delta[0],
                   delta[0]};
    for (int r = 1; r < rounds; r++) {
        f.dmin = delta[r] < f.dmin ? delta[r] : f.dmin;
        f.dmax = delta[r] > f.dmax ? delta[r] : f.dmax;
    }
    return f;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "client") == 0) {
        long n = atol(argv[3]);
        return strcmp(argv[2], "pq") == 0 ? client_pq(n) : client_redis(n);
    }
    bool smoke = false;
    int rounds = 7;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            smoke = true;
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else {
            die("usage: plugins_bench [--smoke] [--rounds R]");
        }
    }
    if (rounds < 1 || rounds > ROUNDS_MAX) {
        die("--rounds must be 1..31");
    }
    long n = 10000;
    if (smoke) {
        rounds = 1;
        n = 300;
    }
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        die("cannot find my own executable");
    }
    self[len] = '\0';
    servers_open();
    figures_t pq = measure(self, "pq", rounds, n);
    figures_t rd = measure(self, "redis", rounds, n);
    servers_close();
    printf("pq_cpu_ns_per_call_plain=%.0f pq_cpu_ns_per_call_traced=%.0f "
           "pq_cpu_ns_per_call_delta=%.0f pq_delta_min=%.0f pq_delta_max=%.0f "
           "redis_cpu_ns_per_call_plain=%.0f redis_cpu_ns_per_call_traced=%.0f "
           "redis_cpu_ns_per_call_delta=%.0f redis_delta_min=%.0f redis_delta_max=%.0f rounds=%d\n",
           pq.plain, pq.traced, pq.delta, pq.dmin, pq.dmax, rd.plain, rd.traced, rd.delta, rd.dmin,
           rd.dmax, rounds);
    return 0;
}
