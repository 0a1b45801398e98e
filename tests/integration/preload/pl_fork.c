/*
 * pl_fork - forks while another thread is inside a plugin's critical section, for the preload
 * fork test (test_preload_db.c). It knows nothing of skywalking; the test preloads
 * libskywalking-preload.so into it. Servers: the environment of tests/support/db/servers.sh.
 *
 *   pl_fork
 *
 * For each of the hiredis, libpq, libmariadb and libcurl plugins in turn: thread A makes the
 * first call on a fresh handle that makes the plugin remember the handle (a node allocated with
 * calloc under the plugin's lock). This program's calloc holds A there, with the plugin's lock
 * held, while the main thread forks. A lets go when the fork has happened in the parent (a
 * plugin lock that is not fork-safe: the child inherits it held) or when the main thread waits
 * on a futex in the preload library's data (the plugin's fork handler waiting for A to leave).
 * The child then closes every handle it inherited and makes traced calls of every plugin
 * (hiredis pipeline, PQsendQuery, mysql_send_query, its own libmicrohttpd server, curl easy and
 * multi) and exits 0. The parent waits for the child at most WAIT_MS: a child that does not
 * finish is killed and named (a plugin lock inherited held). Exit code 0 when every child
 * finished with 0; every failure prints why on stderr.
 *
 * The calloc here is a test double in the sense of STYLE: no real server can hold a thread
 * inside the plugin's lock. It forwards to glibc's __libc_calloc.
 */
#include <curl/curl.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <hiredis.h>
#include <libpq-fe.h>
#include <microhttpd.h>
#include <mysql.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pl_db_conn.h"

#define WAIT_MS 60000

extern void *__libc_calloc(size_t n, size_t size);

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Polling step of the bounded waits below: the states they wait for (another thread's system
   call, a flag set in an atfork handler) offer nothing to block on. */
static void pause_1ms(void)
{
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

/* ---- the trap: calloc holds thread A inside the plugin's critical section ------------------ */

static _Thread_local bool trap_armed;
static _Atomic bool trap_inside, forking, forked;
static pid_t main_tid;

/* Whether addr lies in the preload library (its code or its data). */
static bool in_preload(const void *addr)
{
    Dl_info info;
    return dladdr(addr, &info) != 0 && info.dli_fname != NULL &&
           strstr(info.dli_fname, "libskywalking-preload") != NULL;
}

/* Whether the main thread waits on a futex in the preload library's data (a plugin lock). Reads
   /proc with open/read only: this runs inside calloc. */
static bool main_waits_in_preload(void)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)main_tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) {
        return false;
    }
    buf[n] = '\0';
    char *end;
    long nr = strtol(buf, &end, 10);
    if (nr != SYS_futex) {
        return false;
    }
    uintptr_t uaddr = (uintptr_t)strtoull(end, NULL, 16);
    return in_preload((const void *)uaddr);
}

/* Holds the calling thread (inside the plugin's section) until the main thread forked or waits
   for the plugin's lock; bounded. */
static void trap_hold(void)
{
    atomic_store_explicit(&trap_inside, true, memory_order_release);
    int64_t deadline = now_ms() + WAIT_MS;
    while (!atomic_load_explicit(&forking, memory_order_acquire)) {
        if (now_ms() > deadline) {
            pl_db_fail("trap", "the main thread did not start its fork");
            return;
        }
        pause_1ms();
    }
    while (!atomic_load_explicit(&forked, memory_order_acquire) && !main_waits_in_preload()) {
        if (now_ms() > deadline) {
            pl_db_fail("trap", "the main thread neither forked nor waited on a plugin lock");
            return;
        }
        pause_1ms();
    }
}

void *calloc(size_t n, size_t size)
{
    if (trap_armed && in_preload(__builtin_return_address(0))) {
        trap_armed = false;
        trap_hold();
    }
    return __libc_calloc(n, size);
}

static void after_fork_parent(void)
{
    atomic_store_explicit(&forked, true, memory_order_release);
}

/* ---- the handles of one case ------------------------------------------------------------- */

typedef struct handles {
    redisContext *redis;
    PGconn *pq;
    MYSQL *my;
    CURL *curl;
    char url[256]; /* of the parent's libmicrohttpd server */
} handles_t;

static redisContext *redis_open(void)
{
    return pl_db_redis_connect("SW_TEST_REDIS_PORT");
}

static void handles_close(handles_t *h)
{
    redisFree(h->redis);
    PQfinish(h->pq);
    mysql_close(h->my);
    curl_easy_cleanup(h->curl);
}

/* ---- the child's traced calls ------------------------------------------------------------ */

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    (void)cls, (void)url, (void)method, (void)version, (void)upload, (void)upload_size;
    static int first;
    if (*state == NULL) {
        *state = &first;
        return MHD_YES;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(2, (void *)"ok", MHD_RESPMEM_PERSISTENT);
    enum MHD_Result rc = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return rc;
}

static struct MHD_Daemon *server_start(char *base, size_t size)
{
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, answer, NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    if (d == NULL) {
        pl_db_fail("MHD_start_daemon", "failed");
        return NULL;
    }
    snprintf(base, size, "http://127.0.0.1:%u",
             MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port);
    return d;
}

static size_t body_discard(char *data, size_t size, size_t n, void *user)
{
    (void)data, (void)user;
    return size * n;
}

static void curl_prepare(CURL *h, const char *url)
{
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)WAIT_MS);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_discard);
}

static void child_http(void)
{
    char base[128], url[256];
    struct MHD_Daemon *d = server_start(base, sizeof base);
    if (d == NULL) {
        return;
    }
    CURL *h = curl_easy_init();
    snprintf(url, sizeof url, "%s/fork-easy", base);
    curl_prepare(h, url);
    CURLcode rc = curl_easy_perform(h);
    if (rc != CURLE_OK) {
        pl_db_fail("curl_easy_perform", curl_easy_strerror(rc));
    }
    curl_easy_cleanup(h);
    CURLM *m = curl_multi_init();
    CURL *e = curl_easy_init();
    snprintf(url, sizeof url, "%s/fork-multi", base);
    curl_prepare(e, url);
    curl_multi_add_handle(m, e);
    int running = 1, done = 0;
    for (int64_t deadline = now_ms() + WAIT_MS; running > 0 && now_ms() < deadline;) {
        curl_multi_perform(m, &running);
        curl_multi_poll(m, NULL, 0, 1000, NULL);
    }
    for (CURLMsg *msg; (msg = curl_multi_info_read(m, &(int){0})) != NULL;) {
        done += msg->msg == CURLMSG_DONE && msg->data.result == CURLE_OK;
    }
    if (done != 1) {
        pl_db_fail("curl multi", "the transfer did not complete");
    }
    curl_multi_remove_handle(m, e);
    curl_easy_cleanup(e);
    curl_multi_cleanup(m);
    MHD_stop_daemon(d);
}

/* In the child: closes the inherited handles (each takes its plugin's lock), then makes traced
   calls of every plugin. */
static void child_run(handles_t *h)
{
    handles_close(h);
    redisContext *c = redis_open();
    if (c != NULL && c->err == 0) {
        void *r = NULL;
        if (redisAppendCommand(c, "SET forkkey %s", "v") != REDIS_OK ||
            redisGetReply(c, &r) != REDIS_OK) {
            pl_db_fail("SET forkkey", c->errstr);
        }
        if (r != NULL) {
            freeReplyObject(r);
        }
    }
    redisFree(c);
    PGconn *pq = pl_db_pq_connect(pl_db_env("SW_TEST_PG_SOCKDIR"));
    if (PQsendQuery(pq, "SELECT 'fork'") != 1) {
        pl_db_fail("PQsendQuery", PQerrorMessage(pq));
    }
    for (PGresult *r; (r = PQgetResult(pq)) != NULL;) {
        PQclear(r);
    }
    PQfinish(pq);
    MYSQL *my = pl_db_my_connect(false);
    const char *q = "SELECT 'fork'";
    if (mysql_send_query(my, q, strlen(q)) != 0 || mysql_read_query_result(my) != 0) {
        pl_db_fail("mysql_send_query", mysql_error(my));
    }
    MYSQL_RES *res = mysql_store_result(my);
    if (res != NULL) {
        mysql_free_result(res);
    }
    mysql_close(my);
    child_http();
}

/* ---- the cases --------------------------------------------------------------------------- */

typedef enum plugin { P_HIREDIS, P_PQ, P_MARIADB, P_CURL, P_COUNT } plugin_t;

static const char *const plugin_names[P_COUNT] = {"hiredis", "libpq", "libmariadb", "libcurl"};

typedef struct a_job {
    plugin_t plugin;
    handles_t *h;
} a_job_t;

/* Thread A: the first call on a fresh handle, with the trap armed. */
static void *thread_a(void *arg)
{
    const a_job_t *job = arg;
    trap_armed = true;
    switch (job->plugin) {
    case P_HIREDIS:
        (void)redisAppendCommand(job->h->redis, "PING");
        break;
    case P_PQ:
        (void)PQsendQuery(job->h->pq, "SELECT 1");
        break;
    case P_MARIADB:
        (void)mysql_send_query(job->h->my, "SELECT 1", 8);
        break;
    case P_CURL:
        curl_easy_setopt(job->h->curl, CURLOPT_URL, job->h->url);
        break;
    default:
        break;
    }
    if (trap_armed) {
        trap_armed = false;
        pl_db_fail(plugin_names[job->plugin], "the call allocated nothing in the preload library");
        atomic_store_explicit(&trap_inside, true, memory_order_release); /* let main go on */
    }
    return NULL;
}

/* Waits at most WAIT_MS for the child; kills it when late. */
static void child_wait(pid_t pid, const char *plugin)
{
    int status = 0;
    for (int64_t deadline = now_ms() + WAIT_MS;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            break;
        }
        if (w < 0 || now_ms() > deadline) {
            kill(pid, SIGKILL);
            (void)waitpid(pid, &status, 0);
            char msg[200];
            snprintf(msg, sizeof msg,
                     "the child forked while a thread was inside the %s plugin's lock did not "
                     "finish within %d ms (the lock inherited held?): killed",
                     plugin, WAIT_MS);
            pl_db_fail("child", msg);
            return;
        }
        pause_1ms();
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        pl_db_fail("child", WIFSIGNALED(status) ? "killed by a signal" : "exited non-zero");
    }
}

static void run_case(plugin_t p, const char *url)
{
    handles_t h = {redis_open(), pl_db_pq_connect(pl_db_env("SW_TEST_PG_SOCKDIR")),
                   pl_db_my_connect(false), curl_easy_init(), ""};
    snprintf(h.url, sizeof h.url, "%s/case", url);
    if (pl_db_failed) {
        return;
    }
    atomic_store_explicit(&trap_inside, false, memory_order_relaxed);
    atomic_store_explicit(&forking, false, memory_order_relaxed);
    atomic_store_explicit(&forked, false, memory_order_relaxed);
    a_job_t job = {p, &h};
    pthread_t a;
    if (pthread_create(&a, NULL, thread_a, &job) != 0) {
        pl_db_fail("pthread_create", plugin_names[p]);
        return;
    }
    for (int64_t deadline = now_ms() + WAIT_MS;
         !atomic_load_explicit(&trap_inside, memory_order_acquire);) {
        if (now_ms() > deadline) {
            pl_db_fail("thread A", "never reached the plugin's section");
            break;
        }
        pause_1ms();
    }
    atomic_store_explicit(&forking, true, memory_order_release);
    pid_t pid = fork();
    if (pid == 0) {
        child_run(&h);
        exit(pl_db_failed ? 1 : 0);
    }
    pthread_join(a, NULL);
    if (pid < 0) {
        pl_db_fail("fork", plugin_names[p]);
    } else {
        child_wait(pid, plugin_names[p]);
    }
    handles_close(&h); /* the child closed the server side of some: errors are expected */
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    main_tid = (pid_t)syscall(SYS_gettid);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char base[128];
    struct MHD_Daemon *d = server_start(base, sizeof base); /* starts the agent */
    if (d == NULL) {
        return 1;
    }
    pthread_atfork(NULL, after_fork_parent, NULL);
    for (plugin_t p = 0; p < P_COUNT && !pl_db_failed; p++) {
        run_case(p, base);
    }
    MHD_stop_daemon(d);
    curl_global_cleanup();
    return pl_db_failed ? 1 : 0;
}
