/*
 * plugins_bench - what the database and cache plugins of libskywalking-preload.so cost per
 * traced call, against the same calls without the preload, in the same run.
 *
 *   pq:    PQexec("SELECT 1") over a unix socket to a real PostgreSQL
 *   redis: redisCommand("GET k") over loopback TCP to a real Redis
 *   kafka: rd_kafka_producev of a 100-byte record to a real Kafka broker, flushed (sent and
 *          acknowledged) every 100 calls, librdkafka's sending threads included (see "kafka")
 *   grpc:  a unary gs.Echo/Unary call (gRPC's C API, registered method, one batch, plucked) over
 *          loopback TCP to tests/integration/grpc_spans/gs_sync_server (a libgrpc++
 *          synchronous server, untraced; plain builds only: in sanitizer builds the grpc_
 *          figures are left out). Its server pid is the server's main thread: pinning it does
 *          not pin the library's threads that serve the calls.
 *
 * A round runs two clients side by side, each a child process (this program in "client" mode,
 * linking libpq and hiredis dynamically) with a connection of its own: plain, and traced (the
 * preload, 100% sampling, file reporter; every call is its own segment). Each connects, makes 200
 * warm-up calls (agent start, first segment blocks), waits until its agent has written everything
 * (the segment file holds a segment per traced call; the agent's consumer naps up to 500 ms) and
 * answers "ready" with the pid of its server (its PostgreSQL backend; the Redis server, asked with
 * INFO). The parent then puts the client's main thread and that server on one CPU (the first this
 * program may use; the agent's consumer thread, started during the warm-up, stays free), and gives
 * the server its affinity back after the round. Without that, a client whose server ran on the
 * other vCPU of a 2-vCPU VM paid 3 to 5 times as much CPU per call (wake-ups across CPUs), and the
 * scheduler kept whichever placement a process started with, so the two sides of a round could
 * differ by a factor of two, interleaved or not.
 *
 * The parent drives the clients in turns through their stdin: "run K" (K = 2000 calls, tens of
 * milliseconds of either client) to one, wait for its "done", the same to the other, with the side
 * that goes first swapping at every pair of chunks (ABBA...; the first side of a round alternates
 * between rounds), until each has made N = 20000 measured calls. Only one client calls at a time,
 * and a client waiting for its next command is blocked on a pipe, using no CPU: what the machine's
 * state does to the cost of a call (other load, the host, caches, clock rate) changes little within
 * a few chunks, so it hits both sides alike instead of whichever client ran alone during it. Then
 * "finish" to both: each waits, as after the warm-up, until its agent has written every segment and
 * answers the CPU time it used from just before its first measured chunk to the end of its last
 * one, plus what its agent consumer used after that until every segment was written, from
 * CLOCK_PROCESS_CPUTIME_ID and the consumer thread's schedstat: every thread of the process, the
 * traced side's agent consumer (encoding, writing) included, but not the main thread's polling
 * of the file while it waits (the benchmark's, not the agent's); per call = that / N.
 *
 * delta = traced - plain per round; the figures are medians over the rounds, with the spread
 * (min..max) of the deltas. A first round of N/4 calls is discarded: the first clients after the
 * servers start run far slower (servers' caches, page faults of fresh mappings). After each round
 * the segment file must hold exactly one segment per traced call: a dropped segment fails the
 * benchmark (never measure while dropping). Every wait for a client is bounded (60 s): a client
 * that fails, dies or hangs fails the benchmark with a message and is killed.
 *
 * Servers: those of the ctest fixture db when SW_TEST_DB_STATE names its directory, otherwise
 * tests/support/db/servers.sh is started for the run and stopped at the end.
 *
 * Usage: plugins_bench [--smoke] [--rounds R]   (default 7 rounds of N=20000 calls per side in
 *        chunks of K=2000; --smoke: 1 round of N=300 in chunks of K=100)
 * pq_consumer_ns_per_call (redis_...) is the part of the traced side's CPU per call that its
 * agent consumer thread used (encoded segments to the file: framing, write(2)), read from the
 * thread's /proc/self/task/<tid>/schedstat over the same span of time, median over the rounds
 * ("na" when it could not be read); the rest of the delta is the calling thread's.
 *
 * Last line: [grpc_cpu_ns_per_call_plain= grpc_cpu_ns_per_call_traced= grpc_cpu_ns_per_call_delta=
 *            grpc_delta_min= grpc_delta_max=] pq_cpu_ns_per_call_plain= pq_cpu_ns_per_call_traced=
 *            pq_cpu_ns_per_call_delta= pq_delta_min= pq_delta_max= pq_consumer_ns_per_call=
 *            redis_cpu_ns_per_call_plain= ... redis_delta_max= redis_consumer_ns_per_call=
 *            kafka_cpu_ns_per_call_plain= ... kafka_consumer_ns_per_call= rounds=
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#ifdef PL_GRPC_SERVER
#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#endif
#include <hiredis.h>
#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kafka_test_env.h"
#include "test_util.h"
#include "thread_stat.h"

#define ROUNDS_MAX         31
#define WARMUP_CALLS       200
#define REPLY_TIMEOUT_MS   60000  /* the parent waiting for a client's answer */
#define COMMAND_TIMEOUT_MS 300000 /* a client waiting for the parent's next command */

/* A client as the parent sees it. */
typedef struct client {
    const char *what; /* "pq", "redis" or "kafka" */
    bool traced;
    pid_t pid;          /* > 0 from its start until it has been reaped */
    int cmd;            /* write end of the client's stdin */
    int reply;          /* read end of the client's stdout */
    pid_t server;       /* its server: its PostgreSQL backend, or the Redis server */
    bool server_pinned; /* the server is on pin_cpu; server_mask holds its affinity before */
    cpu_set_t server_mask;
} client_t;

static char state_dir[512];
static bool own_servers;
static client_t clients[2]; /* the round's clients (plain, traced); the parent's only thread */
static int pin_cpu;         /* where each client's calling thread and its server run */

static void servers_close(void);
static void clients_end(void);

/* Fails the benchmark; clients still running are killed, servers pinned given their affinity
   back and servers it started itself are stopped first. */
static void die(const char *what)
{
    fprintf(stderr, "plugins_bench: %s\n", what);
    clients_end();
    servers_close();
    exit(1);
}

/* ---- pipes between the parent and its clients ---------------------------------------------- */

enum { LINE_OK = 0, LINE_TIMEOUT = -1, LINE_EOF = -2 };

/* Reads one line from fd into buf, without its '\n', waiting at most timeout_ms for it. Each
   side writes one line and then waits for the other's, so nothing follows the line. Returns
   LINE_OK, LINE_TIMEOUT, or LINE_EOF (end of file, a read error, or a line too long). */
static int line_read(int fd, char *buf, size_t cap, int timeout_ms)
{
    double deadline = now_s() + timeout_ms / 1000.0;
    size_t len = 0;
    while (len == 0 || buf[len - 1] != '\n') {
        int64_t left = (int64_t)((deadline - now_s()) * 1000.0);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ready = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (ready < 0 && errno == EINTR) {
            continue;
        }
        if (ready == 0) {
            return LINE_TIMEOUT;
        }
        ssize_t got = ready > 0 && len + 1 < cap ? read(fd, buf + len, cap - 1 - len) : -1;
        if (got <= 0) {
            return LINE_EOF;
        }
        len += (size_t)got;
    }
    buf[len - 1] = '\0';
    return LINE_OK;
}

/* Writes one line (shorter than PIPE_BUF: in one piece). Returns 0, or -1 when the reader has
   gone (SIGPIPE is ignored by the parent) or on another error. */
static int line_write(int fd, const char *line)
{
    size_t len = strlen(line);
    return write(fd, line, len) == (ssize_t)len ? 0 : -1;
}

/* ---- client mode --------------------------------------------------------------------------- */

typedef bool (*call_fn)(void *conn);

static int64_t cpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* every thread of the process */
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CPU time (ns) of the agent's segment consumer thread (named "sw-segment-c0" by the
   DataCarrier: "<carrier name, 10 chars>-c<index>"); -1 when there is none (the plain client) or
   it cannot be read. */
static int64_t consumer_cpu_ns(void)
{
    double ns;
    return thread_stat_read("sw-segment-c0", &ns, NULL) ? (int64_t)ns : -1;
}

/* Whole segments in a file reporter's output (length-delimited records; a record the file does
   not hold all of yet is not counted). -1: corrupt. */
static long segments_count(const char *path)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (f == NULL || fstat(fileno(f), &st) != 0) {
        if (f != NULL) {
            fclose(f);
        }
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
        if (ch == EOF || ftell(f) + (off_t)len > st.st_size) {
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

/* Waits (at most 30 s, polling every 10 ms) until the agent has written one segment per call
   made, `calls` in all; the parent checks the file's count after the round. Without the preload
   there is nothing to wait for. The wait's own CPU is not part of the figures (client_finish). */
static void drain_wait(long calls)
{
    const char *path = getenv("SW_REPORTER_FILE_PATH");
    for (int waited = 0; path != NULL && waited < 30000; waited += 10) {
        if (segments_count(path) >= calls) {
            return;
        }
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL); /* polling a file another thread writes: nothing to wait on */
    }
}

static bool calls_make(call_fn call, void *conn, long n)
{
    for (long i = 0; i < n; i++) {
        if (!call(conn)) {
            return false;
        }
    }
    return true;
}

/* Runs "finish": waits for the agent's writes, then answers "cpu <ns> <calls> <consumer ns>"
   (the consumer's part of <ns>; -1 without one). <ns> is the process's CPU up to the end of the
   last chunk plus what the consumer used after it (writing the last segments): the main thread
   polling the file meanwhile is the benchmark's, not the agent's (each of its timed sleeps is
   charged to the process's CPU time too, as rate_bench shows for the consumer's). */
static int client_finish(int64_t cpu0, int64_t consumer0, long calls, long total_calls)
{
    int64_t cpu_end = cpu_now_ns(), consumer_end = consumer_cpu_ns();
    drain_wait(total_calls);
    int64_t consumer1 = consumer_cpu_ns();
    long long consumer = consumer0 >= 0 && consumer1 >= consumer0 ? consumer1 - consumer0 : -1;
    int64_t after = consumer_end >= 0 && consumer1 >= consumer_end ? consumer1 - consumer_end : 0;
    char answer[96];
    snprintf(answer, sizeof answer, "cpu %lld %ld %lld\n", (long long)(cpu_end - cpu0 + after),
             calls, consumer);
    return line_write(1, answer) == 0 ? 0 : 1;
}

/* Makes the warm-up calls, answers "ready <server pid>", then serves the parent's commands from
   stdin until "finish" (see the top of the file). `setup_calls`: traced calls the client made
   before (each a segment too). Returns the exit status: 0 once it answered "finish". */
static int client_serve(call_fn call, void *conn, int server_pid, long setup_calls)
{
    if (!calls_make(call, conn, WARMUP_CALLS)) {
        return 1;
    }
    drain_wait(setup_calls + WARMUP_CALLS);
    char ready[32];
    snprintf(ready, sizeof ready, "ready %d\n", server_pid);
    if (line_write(1, ready) != 0) {
        return 1;
    }
    int64_t cpu0 = -1, consumer0 = -1;
    long calls = 0;
    char cmd[64];
    while (line_read(0, cmd, sizeof cmd, COMMAND_TIMEOUT_MS) == LINE_OK) {
        long k = strncmp(cmd, "run ", 4) == 0 ? atol(cmd + 4) : 0;
        if (k > 0) {
            if (cpu0 < 0) { /* just before the first measured chunk */
                consumer0 = consumer_cpu_ns();
                cpu0 = cpu_now_ns();
            }
            if (!calls_make(call, conn, k) || line_write(1, "done\n") != 0) {
                return 1;
            }
            calls += k;
        } else if (strcmp(cmd, "finish") == 0 && cpu0 >= 0) {
            return client_finish(cpu0, consumer0, calls, setup_calls + WARMUP_CALLS + calls);
        } else {
            break;
        }
    }
    fprintf(stderr, "plugins_bench client: no valid command from the parent\n");
    return 1;
}

static bool pq_call(void *conn)
{
    PGresult *r = PQexec(conn, "SELECT 1");
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok) {
        fprintf(stderr, "plugins_bench client: %s", PQresultErrorMessage(r));
    }
    PQclear(r);
    return ok;
}

static int client_pq(void)
{
    char info[1024];
    snprintf(info, sizeof info, "host=%s port=%s dbname=swtest user=postgres",
             getenv("SW_TEST_PG_SOCKDIR"), getenv("SW_TEST_PG_PORT"));
    PGconn *c = PQconnectdb(info);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "plugins_bench client: %s", PQerrorMessage(c));
        return 1;
    }
    int rc = client_serve(pq_call, c, PQbackendPID(c), 0);
    PQfinish(c);
    return rc;
}

static bool redis_call(void *conn)
{
    redisReply *r = redisCommand(conn, "GET k");
    bool ok = r != NULL && r->type == REDIS_REPLY_STRING;
    if (!ok) {
        fprintf(stderr, "plugins_bench client: GET failed\n");
    }
    if (r != NULL) {
        freeReplyObject(r);
    }
    return ok;
}

static int client_redis(void)
{
    redisContext *c = redisConnect("127.0.0.1", atoi(getenv("SW_TEST_REDIS_PORT")));
    if (c == NULL || c->err) {
        fprintf(stderr, "plugins_bench client: redisConnect failed\n");
        return 1;
    }
    freeReplyObject(redisCommand(c, "SET k v"));
    redisReply *info = redisCommand(c, "INFO server");
    const char *at =
        info != NULL && info->type == REDIS_REPLY_STRING ? strstr(info->str, "process_id:") : NULL;
    int server_pid = at != NULL ? atoi(at + strlen("process_id:")) : 0;
    if (info != NULL) {
        freeReplyObject(info);
    }
    int rc = client_serve(redis_call, c, server_pid, 2); /* SET, INFO */
    redisFree(c);
    return rc;
}

/* ---- kafka: rd_kafka_producev of a 100-byte record to the broker ----------------------------

   The produce call only queues the record; librdkafka's own threads batch and send it. So that
   their work is part of the figures, the client flushes (waits for the broker's acks) after
   every KAFKA_FLUSH_EVERY calls: every chunk ends with all its records sent and acknowledged,
   and the process's CPU time covers the call, the sending threads and, traced, the span and the
   sw8 headers (about 450 more bytes per record to copy and send). The broker is the Kafka
   fixture's (SW_TEST_KAFKA_DIR) or a private node this program starts; the client's "server"
   for pinning is itself (the broker's JVM is left where it is). */
#define KAFKA_TOPIC       "sw-test-1p"
#define KAFKA_FLUSH_EVERY 100 /* divides WARMUP_CALLS and every chunk size */

typedef struct kafka_conn {
    rd_kafka_t *rk;
    long calls;
} kafka_conn_t;

static bool kafka_call(void *conn)
{
    kafka_conn_t *k = conn;
    static char value[100];
    rd_kafka_resp_err_t e = rd_kafka_producev(
        k->rk, RD_KAFKA_V_TOPIC(KAFKA_TOPIC), RD_KAFKA_V_VALUE(value, sizeof value),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR && ++k->calls % KAFKA_FLUSH_EVERY == 0) {
        e = rd_kafka_flush(k->rk, 30000);
    }
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "plugins_bench client: produce: %s\n", rd_kafka_err2str(e));
        return false;
    }
    return true;
}

static int client_kafka(void)
{
    char err[256];
    const char *bootstrap = getenv("SW_BENCH_KAFKA_BOOTSTRAP");
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (bootstrap == NULL ||
        rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err, sizeof err) != 0) {
        fprintf(stderr, "plugins_bench client: no broker (%s)\n", bootstrap ? err : "unset");
        return 1;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (rk == NULL) {
        fprintf(stderr, "plugins_bench client: rd_kafka_new: %s\n", err);
        return 1;
    }
    kafka_conn_t k = {rk, 0};
    int rc = client_serve(kafka_call, &k, (int)getpid(), 0);
    (void)rd_kafka_flush(rk, 30000); /* a round's last records, after the figures */
    rd_kafka_destroy(rk);
    return rc;
}

/* The broker for the kafka clients: the fixture's, or a private node (stopped by kafka_close). */
static sw_test_kafka_t kafka_broker;

static void kafka_open(void)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/sw-plugins-bench-kafka.%d", (int)getpid());
    if (sw_test_kafka_bootstrap_or_start(&kafka_broker, NULL, dir, KAFKA_TOPIC ":1") != 0) {
        die("no Kafka broker (see above)");
    }
    setenv("SW_BENCH_KAFKA_BOOTSTRAP", kafka_broker.bootstrap, 1);
}

static void kafka_close(void)
{
    if (kafka_broker.owned) {
        sw_test_kafka_stop(&kafka_broker);
    }
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

#ifdef PL_GRPC_SERVER
/* ---- gRPC unary: gs.Echo/Unary of tests/integration/grpc_spans/gs_sync_server -------------- */

typedef struct grpc_bench {
    grpc_channel *channel;
    grpc_completion_queue *cq;
    void *method; /* registered /gs.Echo/Unary */
} grpc_bench_t;

/* One unary call through gRPC's C API, as libgrpc++ makes it: one batch, plucked. */
static bool grpc_unary_call(void *conn)
{
    grpc_bench_t *b = conn;
    gpr_timespec deadline =
        gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_seconds(30, GPR_TIMESPAN));
    grpc_call *call = grpc_channel_create_registered_call(b->channel, NULL, GRPC_PROPAGATE_DEFAULTS,
                                                          b->cq, b->method, deadline, NULL);
    static const char msg[] = {0x0a, 0x01, 'x'}; /* gs.Msg{text: "x"} */
    grpc_slice s = grpc_slice_from_static_buffer(msg, sizeof msg);
    grpc_byte_buffer *req = grpc_raw_byte_buffer_create(&s, 1), *resp = NULL;
    grpc_metadata_array initial, trailing;
    grpc_metadata_array_init(&initial);
    grpc_metadata_array_init(&trailing);
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    grpc_op ops[6] = {
        {.op = GRPC_OP_SEND_INITIAL_METADATA},  {.op = GRPC_OP_SEND_MESSAGE},
        {.op = GRPC_OP_SEND_CLOSE_FROM_CLIENT}, {.op = GRPC_OP_RECV_INITIAL_METADATA},
        {.op = GRPC_OP_RECV_MESSAGE},           {.op = GRPC_OP_RECV_STATUS_ON_CLIENT}};
    ops[1].data.send_message.send_message = req;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial;
    ops[4].data.recv_message.recv_message = &resp;
    ops[5].data.recv_status_on_client.trailing_metadata = &trailing;
    ops[5].data.recv_status_on_client.status = &status;
    ops[5].data.recv_status_on_client.status_details = &details;
    bool ok =
        call != NULL && grpc_call_start_batch(call, ops, 6, (void *)1, NULL) == GRPC_CALL_OK &&
        grpc_completion_queue_pluck(b->cq, (void *)1, gpr_inf_future(GPR_CLOCK_REALTIME), NULL)
            .success &&
        status == GRPC_STATUS_OK && resp != NULL;
    if (!ok) {
        fprintf(stderr, "plugins_bench client: gRPC unary call failed (status %d)\n", (int)status);
    }
    grpc_byte_buffer_destroy(req);
    if (resp != NULL) {
        grpc_byte_buffer_destroy(resp);
    }
    grpc_metadata_array_destroy(&initial);
    grpc_metadata_array_destroy(&trailing);
    grpc_slice_unref(details);
    if (call != NULL) {
        grpc_call_unref(call);
    }
    return ok;
}

static int client_grpc(void)
{
    grpc_init();
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    grpc_bench_t b = {.channel = grpc_channel_create(getenv("PL_GRPC_TARGET"), creds, NULL),
                      .cq = grpc_completion_queue_create_for_pluck(NULL)};
    grpc_channel_credentials_release(creds);
    b.method = grpc_channel_register_call(b.channel, "/gs.Echo/Unary", NULL, NULL);
    int rc = client_serve(grpc_unary_call, &b, atoi(getenv("PL_GRPC_SERVER_PID")), 0);
    grpc_channel_destroy(b.channel);
    grpc_completion_queue_shutdown(b.cq);
    while (grpc_completion_queue_pluck(b.cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(b.cq);
    grpc_shutdown();
    return rc;
}

/* The gRPC server of the benchmark's gRPC rounds: gs_sync_server, untraced, until its stdin
   closes (gs_server_stop). */
static pid_t grpc_server_pid;
static int grpc_server_stdin = -1;

static void gs_server_start(void)
{
    char dir[] = "/tmp/sw-plugins-bench-grpc.XXXXXX", port_file[64];
    if (mkdtemp(dir) == NULL) {
        die("mkdtemp failed");
    }
    snprintf(port_file, sizeof port_file, "%s/port", dir);
    int in[2];
    if (pipe2(in, O_CLOEXEC) != 0) {
        die("pipe failed");
    }
    grpc_server_pid = fork();
    if (grpc_server_pid == 0) {
        dup2(in[0], 0);
        execl(PL_GRPC_SERVER, PL_GRPC_SERVER, port_file, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    grpc_server_stdin = in[1];
    int port = 0;
    for (int i = 0; i < 6000 && port == 0; i++) { /* 60 s */
        FILE *f = fopen(port_file, "r");
        if (f != NULL && fscanf(f, "%d", &port) != 1) {
            port = 0;
        }
        if (f != NULL) {
            fclose(f);
        }
        if (port == 0) {
            usleep(10000);
        }
    }
    unlink(port_file);
    rmdir(dir);
    if (port == 0) {
        die("gs_sync_server did not start within 60 s");
    }
    char target[64], pid[32];
    snprintf(target, sizeof target, "127.0.0.1:%d", port);
    snprintf(pid, sizeof pid, "%d", (int)grpc_server_pid);
    setenv("PL_GRPC_TARGET", target, 1);
    setenv("PL_GRPC_SERVER_PID", pid, 1);
}

static void gs_server_stop(void)
{
    if (grpc_server_stdin >= 0) {
        close(grpc_server_stdin);
        grpc_server_stdin = -1;
        waitpid(grpc_server_pid, NULL, 0);
    }
}
#endif

/* ---- measuring ----------------------------------------------------------------------------- */

static void client_fail(const client_t *c, const char *why)
{
    fprintf(stderr, "plugins_bench: %s %s client: %s\n", c->what, c->traced ? "traced" : "plain",
            why);
    die("a client failed");
}

/* In the child: becomes the client, preloaded with the agent writing to segfile when traced. */
static void client_exec(const char *self, const client_t *c, const char *segfile)
{
    signal(SIGPIPE, SIG_DFL);
    if (c->traced) {
        setenv("LD_PRELOAD", PL_PRELOAD_LIB, 1);
        setenv("SW_REPORTER_FILE_PATH", segfile, 1);
        setenv("SW_AGENT_NAME", "plugins-bench", 1);
        /* Room for a whole round in the DataCarrier (5 x 4096 slots), so that a consumer
           starved by a loaded machine delays the writes instead of dropping segments; small
           blocks (one span each here) keep that bounded (~ 20 k x 6 KiB). */
        setenv("SW_BUFFER_BUFFER_SIZE", "4096", 1);
        setenv("SW_AGENT_SPAN_LIMIT", "16", 1);
        setenv("SW_AGENT_SEGMENT_ARENA_BYTES", "4096", 1);
    }
    execl(self, self, "client", c->what, (char *)NULL);
    _exit(127);
}

/* Starts c with a pipe to its stdin and one from its stdout. The pipes are close-on-exec, so
   that the other client does not hold them: a client's exit is seen as the end of its stdout. */
static void client_start(client_t *c, const char *self, const char *segfile)
{
    int cmd[2], reply[2];
    if (pipe2(cmd, O_CLOEXEC) != 0 || pipe2(reply, O_CLOEXEC) != 0) {
        die("pipe failed");
    }
    c->pid = fork();
    if (c->pid < 0) {
        die("fork failed");
    }
    if (c->pid == 0) {
        if (dup2(cmd[0], 0) < 0 || dup2(reply[1], 1) < 0) {
            _exit(127);
        }
        client_exec(self, c, segfile);
    }
    close(cmd[0]);
    close(reply[1]);
    c->cmd = cmd[1];
    c->reply = reply[0];
}

static void client_send(const client_t *c, const char *cmd)
{
    if (line_write(c->cmd, cmd) != 0) {
        client_fail(c, "cannot send it a command: it has exited");
    }
}

/* Waits (at most 60 s) for c's next answer. */
static void client_answer(const client_t *c, char *answer, size_t cap)
{
    int rc = line_read(c->reply, answer, cap, REPLY_TIMEOUT_MS);
    if (rc == LINE_TIMEOUT) {
        client_fail(c, "no answer within 60 s (hung?)");
    } else if (rc != LINE_OK) {
        client_fail(c, "exited or failed before answering (see its message above)");
    }
}

static void client_expect(const client_t *c, const char *want)
{
    char answer[64];
    client_answer(c, answer, sizeof answer);
    if (strcmp(answer, want) != 0) {
        client_fail(c, "unexpected answer");
    }
}

/* Has c make k calls and waits until it has. */
static void client_chunk(const client_t *c, long k)
{
    char cmd[32];
    snprintf(cmd, sizeof cmd, "run %ld\n", k);
    client_send(c, cmd);
    client_expect(c, "done");
}

/* Reads the answer to "finish": c's CPU time in ns for its n measured calls, and in
 *consumer its agent consumer's part of it (-1: none). */
static double client_cpu(const client_t *c, long n, double *consumer)
{
    char answer[96];
    client_answer(c, answer, sizeof answer);
    long long ns = -1, cons = -1;
    long calls = -1;
    if (sscanf(answer, "cpu %lld %ld %lld", &ns, &calls, &cons) != 3 || ns < 0 || calls != n) {
        client_fail(c, "unexpected answer to finish");
    }
    *consumer = (double)cons;
    return (double)ns;
}

/* Waits (at most 60 s) for c to exit once it has answered "finish"; fails unless it exits 0. */
static void client_reap(client_t *c)
{
    char rest[64];
    close(c->cmd);
    int rc = line_read(c->reply, rest, sizeof rest, REPLY_TIMEOUT_MS);
    if (rc != LINE_EOF) {
        client_fail(c, rc == LINE_TIMEOUT ? "did not exit within 60 s" : "wrote more than asked");
    }
    close(c->reply);
    int st;
    if (waitpid(c->pid, &st, 0) != c->pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        client_fail(c, "exited with an error");
    }
    c->pid = 0;
}

/* Reads c's "ready <server pid>", then puts c's calling thread (the thread whose id is its pid:
   the agent's consumer, started during the warm-up, keeps its affinity) and c's server on
   pin_cpu, saving the server's affinity for clients_end. Not being able to pin only warns. */
static void client_ready_pin(client_t *c)
{
    char answer[64];
    client_answer(c, answer, sizeof answer);
    if (sscanf(answer, "ready %d", &c->server) != 1 || c->server <= 0) {
        client_fail(c, "unexpected answer instead of ready");
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(pin_cpu, &one);
    c->server_pinned = sched_getaffinity(c->server, sizeof c->server_mask, &c->server_mask) == 0 &&
                       sched_setaffinity(c->server, sizeof one, &one) == 0;
    if (!c->server_pinned || sched_setaffinity(c->pid, sizeof one, &one) != 0) {
        fprintf(stderr,
                "plugins_bench: %s: cannot put a client and its server (pid %d) on CPU %d (%s): "
                "the figures will be noisier\n",
                c->what, (int)c->server, pin_cpu, strerror(errno));
    }
}

/* Kills the clients still running, then gives the servers they pinned their affinity back, in
   the reverse order of pinning (both clients of redis pin the same server: the plain one, first,
   saved its affinity before either). A PostgreSQL backend has gone with its client. */
static void clients_end(void)
{
    for (int i = 0; i < 2; i++) {
        if (clients[i].pid > 0) {
            kill(clients[i].pid, SIGKILL);
            waitpid(clients[i].pid, NULL, 0);
            clients[i].pid = 0;
        }
    }
    for (int i = 1; i >= 0; i--) {
        if (clients[i].server_pinned) {
            sched_setaffinity(clients[i].server, sizeof clients[i].server_mask,
                              &clients[i].server_mask);
            clients[i].server_pinned = false;
        }
    }
}

/* The segment file of a round must hold one segment per call of the traced client. */
static void segments_check(const char *what, const char *segfile, long n)
{
    /* warm-up calls, measured calls, and the redis client's SET and INFO */
    long want = n + WARMUP_CALLS + 2 * (strcmp(what, "redis") == 0);
    long got = segments_count(segfile);
    if (got != want) {
        fprintf(stderr, "plugins_bench: %s: %ld segments for %ld calls\n", what, got, want);
        die("segments were dropped or lost: the figures would be wrong");
    }
    unlink(segfile);
}

/* One round (see the top of the file): plain and traced clients each make n measured calls in
   alternating chunks of k, the traced one first in the first pair when traced_first. Writes
   each side's CPU per call, in ns, to ns[0] (plain) and ns[1] (traced), and the traced side's
   agent consumer thread's part of ns[1] to ns[2] (-1 when it could not be read). */
static void round_run(const char *self, const char *what, long n, long k, bool traced_first,
                      double ns[3])
{
    char segfile[700];
    snprintf(segfile, sizeof segfile, "%s/bench-%d.bin", getenv("SW_TEST_DB_TMP"), (int)getpid());
    unlink(segfile);
    client_t *c = clients;
    c[0] = (client_t){.what = what, .traced = false};
    c[1] = (client_t){.what = what, .traced = true};
    for (int i = 0; i < 2; i++) {
        client_start(&c[i], self, segfile);
    }
    for (int i = 0; i < 2; i++) {
        client_ready_pin(&c[i]);
    }
    for (long done = 0, pair = 0; done < n; done += k, pair++) {
        long m = n - done < k ? n - done : k;
        int first = (int)(pair % 2) ^ (int)traced_first; /* ABBA... */
        client_chunk(&c[first], m);
        client_chunk(&c[!first], m);
    }
    for (int i = 0; i < 2; i++) {
        client_send(&c[i], "finish\n"); /* both drain at once */
    }
    double consumer[2];
    for (int i = 0; i < 2; i++) {
        ns[i] = client_cpu(&c[i], n, &consumer[i]) / (double)n;
    }
    ns[2] = consumer[1] >= 0 ? consumer[1] / (double)n : -1;
    for (int i = 0; i < 2; i++) {
        client_reap(&c[i]);
    }
    clients_end();
    segments_check(what, segfile, n);
}

/* The lowest-numbered CPU this process may run on. */
static int cpu_first(void)
{
    cpu_set_t mine;
    int cpu = 0;
    if (sched_getaffinity(0, sizeof mine, &mine) == 0) {
        while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &mine)) {
            cpu++;
        }
    }
    return cpu;
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
    double consumer; /* the traced side's consumer thread, median; < 0: not read */
} figures_t;

static figures_t measure(const char *self, const char *what, int rounds, long n, long k)
{
    double plain[ROUNDS_MAX], traced[ROUNDS_MAX], delta[ROUNDS_MAX], consumer[ROUNDS_MAX], ns[3];
    /* A discarded round first: the first clients after the servers start run far slower
       (servers' caches, page faults of fresh mappings), which is not what is measured. */
    round_run(self, what, n / 4 + 1, k, false, ns);
    for (int r = 0; r < rounds; r++) {
        round_run(self, what, n, k, r % 2 == 1, ns);
        plain[r] = ns[0];
        traced[r] = ns[1];
        delta[r] = traced[r] - plain[r];
        consumer[r] = ns[2];
        fprintf(stderr,
                "plugins_bench: %s round %d: plain %.0f ns, traced %.0f ns (its consumer thread "
                "%.0f), delta %.0f\n",
                what, r + 1, plain[r], traced[r], consumer[r], delta[r]);
    }
    figures_t f = {
        median(plain, rounds),   median(traced, rounds), median(delta, rounds), delta[0], delta[0],
        median(consumer, rounds)};
    for (int r = 1; r < rounds; r++) {
        f.dmin = delta[r] < f.dmin ? delta[r] : f.dmin;
        f.dmax = delta[r] > f.dmax ? delta[r] : f.dmax;
    }
    return f;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "client") == 0) {
        if (strcmp(argv[2], "kafka") == 0) {
            return client_kafka();
        }
#ifdef PL_GRPC_SERVER
        if (strcmp(argv[2], "grpc") == 0) {
            return client_grpc();
        }
#endif
        return strcmp(argv[2], "pq") == 0 ? client_pq() : client_redis();
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
    long n = 20000, k = 2000;
    if (smoke) {
        rounds = 1;
        n = 300;
        k = 100;
    }
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        die("cannot find my own executable");
    }
    self[len] = '\0';
    signal(SIGPIPE, SIG_IGN); /* a client gone: line_write fails instead */
    pin_cpu = cpu_first();
    servers_open();
    figures_t pq = measure(self, "pq", rounds, n, k);
    figures_t rd = measure(self, "redis", rounds, n, k);
    kafka_open();
    figures_t kf = measure(self, "kafka", rounds, n, k);
    kafka_close();
#ifdef PL_GRPC_SERVER
    gs_server_start(); /* before servers_close: the segment files go to the servers' dir */
    figures_t gr = measure(self, "grpc", rounds, n, k);
    gs_server_stop();
#endif
    servers_close();
#ifdef PL_GRPC_SERVER
    /* first on the last line: the figures of the gRPC rounds (plain builds only) */
    printf("grpc_cpu_ns_per_call_plain=%.0f grpc_cpu_ns_per_call_traced=%.0f "
           "grpc_cpu_ns_per_call_delta=%.0f grpc_delta_min=%.0f grpc_delta_max=%.0f ",
           gr.plain, gr.traced, gr.delta, gr.dmin, gr.dmax);
#endif
    char pq_cons[32] = "na", rd_cons[32] = "na"; /* "na": the consumer's CPU could not be read */
    if (pq.consumer >= 0) {
        snprintf(pq_cons, sizeof pq_cons, "%.0f", pq.consumer);
    }
    if (rd.consumer >= 0) {
        snprintf(rd_cons, sizeof rd_cons, "%.0f", rd.consumer);
    }
    char kf_cons[32] = "na";
    if (kf.consumer >= 0) {
        snprintf(kf_cons, sizeof kf_cons, "%.0f", kf.consumer);
    }
    printf(
        "pq_cpu_ns_per_call_plain=%.0f pq_cpu_ns_per_call_traced=%.0f "
        "pq_cpu_ns_per_call_delta=%.0f pq_delta_min=%.0f pq_delta_max=%.0f "
        "pq_consumer_ns_per_call=%s redis_cpu_ns_per_call_plain=%.0f "
        "redis_cpu_ns_per_call_traced=%.0f redis_cpu_ns_per_call_delta=%.0f redis_delta_min=%.0f "
        "redis_delta_max=%.0f redis_consumer_ns_per_call=%s kafka_cpu_ns_per_call_plain=%.0f "
        "kafka_cpu_ns_per_call_traced=%.0f kafka_cpu_ns_per_call_delta=%.0f kafka_delta_min=%.0f "
        "kafka_delta_max=%.0f kafka_consumer_ns_per_call=%s rounds=%d\n",
        pq.plain, pq.traced, pq.delta, pq.dmin, pq.dmax, pq_cons, rd.plain, rd.traced, rd.delta,
        rd.dmin, rd.dmax, rd_cons, kf.plain, kf.traced, kf.delta, kf.dmin, kf.dmax, kf_cons,
        rounds);
    return 0;
}
