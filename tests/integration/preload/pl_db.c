/*
 * pl_db - an ordinary libmicrohttpd service that calls PostgreSQL (libpq), MariaDB
 * (libmariadb) and Redis (hiredis), for the database/cache preload tests. It knows nothing of
 * skywalking; the tests preload libskywalking-preload.so into it.
 *
 *   pl_db pq|mysql|mysql-bind|redis|redis-auth
 *
 * starts a libmicrohttpd daemon on a free loopback port and GETs /<mode> from it once with
 * libcurl; the handler runs the mode's calls (below) against the servers named by the
 * environment of tests/support/db/servers.sh (SW_TEST_PG_SOCKDIR, SW_TEST_PG_PORT,
 * SW_TEST_MY_SOCKET, SW_TEST_MY_PORT, SW_TEST_REDIS_PORT, SW_TEST_REDIS_SOCKET,
 * SW_TEST_REDIS_AUTH_PORT, SW_TEST_REDIS_PASSWORD) and answers 200
 * when every call behaved as expected (the failing ones failed). Exit code 0 on 200. Every
 * failure prints why on stderr.
 */
#include <curl/curl.h>
#include <hiredis.h>
#include <libpq-fe.h>
#include <microhttpd.h>
#include <mysql.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pl_db_conn.h"

#define WAIT_MS 20000

/* ---- PostgreSQL: 9 exit spans ---------------------------------------------------------- */

static void pq_expect(PGresult *r, ExecStatusType want, const char *what)
{
    if (PQresultStatus(r) != want) {
        pl_db_fail(what, PQresultErrorMessage(r));
    }
    PQclear(r);
}

static void run_pq(void)
{
    PGconn *c = pl_db_pq_connect(pl_db_env("SW_TEST_PG_SOCKDIR"));
    pq_expect(PQexec(c, "SELECT 1"), PGRES_TUPLES_OK, "SELECT 1");
    pq_expect(PQexec(c, "CREATE TEMP TABLE t (id int, name text)"), PGRES_COMMAND_OK, "CREATE");
    const char *values[2] = {"7", "seven"};
    pq_expect(PQexecParams(c, "INSERT INTO t VALUES ($1, $2)", 2, NULL, values, NULL, NULL, 0),
              PGRES_COMMAND_OK, "INSERT");
    pq_expect(PQprepare(c, "sel", "SELECT name FROM t WHERE id = $1", 1, NULL), PGRES_COMMAND_OK,
              "PQprepare");
    pq_expect(PQexecPrepared(c, "sel", 1, values, NULL, NULL, 0), PGRES_TUPLES_OK,
              "PQexecPrepared");
    pq_expect(PQexec(c, "SELECT * FROM no_such_table"), PGRES_FATAL_ERROR, "the failing SELECT");
    if (PQsendQuery(c, "SELECT 2; SELECT 3") != 1) {
        pl_db_fail("PQsendQuery", PQerrorMessage(c));
    }
    int results = 0;
    for (PGresult *r; (r = PQgetResult(c)) != NULL; results++) {
        PQclear(r);
    }
    if (results != 2) {
        pl_db_fail("PQgetResult", "expected 2 results");
    }
    char longsql[200];
    snprintf(longsql, sizeof longsql, "SELECT '%0100d'", 0);
    pq_expect(PQexec(c, longsql), PGRES_TUPLES_OK, "the long SELECT");
    PQfinish(c);
    PGconn *tcp = pl_db_pq_connect("127.0.0.1");
    pq_expect(PQexec(tcp, "SELECT 1"), PGRES_TUPLES_OK, "SELECT 1 over TCP");
    PQfinish(tcp);
}

/* ---- MariaDB: 7 exit spans ------------------------------------------------------------- */

static void my_drain(MYSQL *m)
{
    MYSQL_RES *r = mysql_store_result(m);
    if (r != NULL) {
        mysql_free_result(r);
    }
}

static void run_mysql(void)
{
    MYSQL *m = pl_db_my_connect(false);
    if (mysql_query(m, "SELECT 1") != 0) {
        pl_db_fail("SELECT 1", mysql_error(m));
    }
    my_drain(m);
    const char *create = "CREATE TEMPORARY TABLE t (id INT, name VARCHAR(20))";
    if (mysql_real_query(m, create, strlen(create)) != 0) {
        pl_db_fail("CREATE", mysql_error(m));
    }
    MYSQL_STMT *st = mysql_stmt_init(m);
    const char *insert = "INSERT INTO t VALUES (?, ?)";
    if (mysql_stmt_prepare(st, insert, strlen(insert)) != 0) {
        pl_db_fail("mysql_stmt_prepare", mysql_stmt_error(st));
    }
    int id = 7;
    unsigned long name_len = 5;
    MYSQL_BIND b[2];
    memset(b, 0, sizeof b);
    b[0].buffer_type = MYSQL_TYPE_LONG;
    b[0].buffer = &id;
    b[1].buffer_type = MYSQL_TYPE_STRING;
    b[1].buffer = (char *)"seven";
    b[1].buffer_length = name_len;
    b[1].length = &name_len;
    if (mysql_stmt_bind_param(st, b) != 0 || mysql_stmt_execute(st) != 0) {
        pl_db_fail("mysql_stmt_execute", mysql_stmt_error(st));
    }
    mysql_stmt_close(st);
    if (mysql_query(m, "SELECT * FROM no_such_table") == 0) {
        pl_db_fail("the failing SELECT", "succeeded");
    }
    const char *two = "SELECT 2";
    if (mysql_send_query(m, two, strlen(two)) != 0 || mysql_read_query_result(m) != 0) {
        pl_db_fail("mysql_send_query", mysql_error(m));
    }
    my_drain(m);
    mysql_close(m);
    MYSQL *tcp = pl_db_my_connect(true);
    if (mysql_query(tcp, "SELECT 1") != 0) {
        pl_db_fail("SELECT 1 over TCP", mysql_error(tcp));
    }
    my_drain(tcp);
    mysql_close(tcp);
}

/* ---- MariaDB, binds that die before execute: 4 exit spans ----------------------------------
 * mysql_stmt_prepare and two mysql_stmt_execute of INSERT (?, ?) whose MYSQL_BIND array lived
 * in the frame of a helper that returned before the executes (as the API allows: libmariadb
 * copies the array; only the buffers must stay valid). The values change between the executes
 * without a new bind: the spans say [7,seven], then [8,eight]. */

static int bind_id;
static char bind_name[16];

static void __attribute__((noinline)) bind_from_stack(MYSQL_STMT *st)
{
    MYSQL_BIND b[2];
    memset(b, 0, sizeof b);
    b[0].buffer_type = MYSQL_TYPE_LONG;
    b[0].buffer = &bind_id;
    b[1].buffer_type = MYSQL_TYPE_STRING;
    b[1].buffer = bind_name;
    b[1].buffer_length = 5;
    if (mysql_stmt_bind_param(st, b) != 0) {
        pl_db_fail("mysql_stmt_bind_param", mysql_stmt_error(st));
    }
}

/* Overwrites the stack where bind_from_stack's frame was. */
static void __attribute__((noinline)) stack_scribble(void)
{
    volatile unsigned char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++) {
        junk[i] = 0xa5;
    }
}

static void run_mysql_bind(void)
{
    MYSQL *m = pl_db_my_connect(false);
    const char *create = "CREATE TEMPORARY TABLE t (id INT, name VARCHAR(20))";
    if (mysql_query(m, create) != 0) {
        pl_db_fail("CREATE", mysql_error(m));
    }
    MYSQL_STMT *st = mysql_stmt_init(m);
    const char *insert = "INSERT INTO t VALUES (?, ?)";
    if (mysql_stmt_prepare(st, insert, strlen(insert)) != 0) {
        pl_db_fail("mysql_stmt_prepare", mysql_stmt_error(st));
    }
    bind_id = 7;
    memcpy(bind_name, "seven", 5);
    bind_from_stack(st);
    stack_scribble();
    if (mysql_stmt_execute(st) != 0) {
        pl_db_fail("mysql_stmt_execute", mysql_stmt_error(st));
    }
    bind_id = 8;
    memcpy(bind_name, "eight", 5);
    stack_scribble();
    if (mysql_stmt_execute(st) != 0) {
        pl_db_fail("the second mysql_stmt_execute", mysql_stmt_error(st));
    }
    mysql_stmt_close(st);
    mysql_close(m);
}

/* ---- Redis: 7 exit spans --------------------------------------------------------------- */

static void redis_expect(redisReply *r, int type, const char *what)
{
    if (r == NULL || r->type != type) {
        pl_db_fail(what, r != NULL && r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    }
    if (r != NULL) {
        freeReplyObject(r);
    }
}

/* An empty formatted command whose pointer is the first byte of an inaccessible page: appending
   it must read nothing (no span, no crash). */
static void redis_append_empty(redisContext *c)
{
    long page = sysconf(_SC_PAGESIZE);
    char *m =
        mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m + page, (size_t)page, PROT_NONE) != 0) {
        pl_db_fail("mmap", "no guard page");
        return;
    }
    if (redisAppendFormattedCommand(c, m + page, 0) != REDIS_OK) {
        pl_db_fail("redisAppendFormattedCommand of 0 bytes", c->errstr);
    }
    munmap(m, (size_t)page * 2);
}

static void run_redis(void)
{
    struct timeval tv = {20, 0};
    redisContext *c = pl_db_redis_connect("SW_TEST_REDIS_PORT");
    if (c == NULL || c->err) {
        return;
    }
    redis_expect(redisCommand(c, "SET k %s", "v"), REDIS_REPLY_STATUS, "SET");
    redis_expect(redisCommand(c, "GET k"), REDIS_REPLY_STRING, "GET");
    const char *argv[] = {"HSET", "h", "f", "1"};
    redis_expect(redisCommandArgv(c, 4, argv, NULL), REDIS_REPLY_INTEGER, "HSET");
    redis_expect(redisCommand(c, "INCR k"), REDIS_REPLY_ERROR, "INCR of a string");
    redisAppendCommand(c, "GET k");
    redisAppendCommand(c, "DEL k");
    void *r;
    if (redisGetReply(c, &r) != REDIS_OK) {
        pl_db_fail("redisGetReply", c->errstr);
    } else {
        redis_expect(r, REDIS_REPLY_STRING, "pipelined GET");
    }
    if (redisGetReply(c, &r) != REDIS_OK) {
        pl_db_fail("redisGetReply", c->errstr);
    } else {
        redis_expect(r, REDIS_REPLY_INTEGER, "pipelined DEL");
    }
    redis_append_empty(c);
    redisFree(c);
    redisContext *u = redisConnectUnixWithTimeout(pl_db_env("SW_TEST_REDIS_SOCKET"), tv);
    if (u == NULL || u->err) {
        pl_db_fail("redisConnectUnix", u != NULL ? u->errstr : "no memory");
        return;
    }
    redis_expect(redisCommand(u, "PING"), REDIS_REPLY_STATUS, "PING");
    redisFree(u);
}

/* ---- Redis with a password: 15 exit spans, in this order -------------------------------
 * AUTH in every form the plugin sees (redisCommand "AUTH %s", "AUTH %b", a literal "AUTH <pw>",
 * redisCommandArgv; redisAppendCommand, redisAppendCommandArgv, redisAppendFormattedCommand and
 * redisGetReply), HELLO 2 AUTH, MIGRATE ... AUTH, ACL SETUSER (accepted, then refused with a reply
 * that repeats the argument), CONFIG SET requirepass, a wrong password (WRONGPASS), SET and GET
 * of a key (argument 1 of SET and GET is recorded). */

static void redis_auth_append_check(redisContext *c, const char *what)
{
    void *r;
    if (redisGetReply(c, &r) != REDIS_OK) {
        pl_db_fail(what, c->errstr);
    } else {
        redis_expect(r, REDIS_REPLY_STATUS, what);
    }
}

static void run_redis_auth(void)
{
    redisContext *c = pl_db_redis_connect("SW_TEST_REDIS_AUTH_PORT");
    if (c == NULL || c->err) {
        return;
    }
    const char *pw = pl_db_env("SW_TEST_REDIS_PASSWORD");
    char literal[256];
    snprintf(literal, sizeof literal, "AUTH %s", pw); /* hex: no '%' in it */
    const char *argv[] = {"AUTH", pw};
    redis_expect(redisCommand(c, "AUTH %s", pw), REDIS_REPLY_STATUS, "AUTH %s");
    redis_expect(redisCommand(c, "AUTH %b", pw, strlen(pw)), REDIS_REPLY_STATUS, "AUTH %b");
    redis_expect(redisCommand(c, literal), REDIS_REPLY_STATUS, "AUTH literal");
    redis_expect(redisCommandArgv(c, 2, argv, NULL), REDIS_REPLY_STATUS, "AUTH argv");
    char *formatted = NULL;
    int len = redisFormatCommand(&formatted, "AUTH %s", pw);
    if (redisAppendCommand(c, "AUTH %s", pw) != REDIS_OK ||
        redisAppendCommandArgv(c, 2, argv, NULL) != REDIS_OK || len <= 0 ||
        redisAppendFormattedCommand(c, formatted, (size_t)len) != REDIS_OK) {
        pl_db_fail("appending AUTH", c->errstr);
    }
    redisFreeCommand(formatted);
    redis_auth_append_check(c, "appended AUTH %s");
    redis_auth_append_check(c, "appended AUTH argv");
    redis_auth_append_check(c, "appended formatted AUTH");
    redis_expect(redisCommand(c, "HELLO 2 AUTH default %s", pw), REDIS_REPLY_ARRAY, "HELLO AUTH");
    const char *migrate[] = {"MIGRATE", "127.0.0.1", "1", "",     "0",
                             "1000",    "AUTH",      pw,  "KEYS", "nokey"};
    redis_expect(redisCommandArgv(c, 10, migrate, NULL), REDIS_REPLY_STATUS, "MIGRATE AUTH");
    char good[64], bad[64];
    snprintf(good, sizeof good, ">%s", pw);
    snprintf(bad, sizeof bad, "#%s", pw); /* a hash must be 64 hex digits: refused, repeated */
    const char *acl_good[] = {"ACL", "SETUSER", "swtest", "on", good};
    const char *acl_bad[] = {"ACL", "SETUSER", "swtest", bad};
    redis_expect(redisCommandArgv(c, 5, acl_good, NULL), REDIS_REPLY_STATUS, "ACL SETUSER");
    redis_expect(redisCommandArgv(c, 4, acl_bad, NULL), REDIS_REPLY_ERROR, "ACL SETUSER #hash");
    redis_expect(redisCommand(c, "CONFIG SET requirepass %s", pw), REDIS_REPLY_STATUS,
                 "CONFIG SET requirepass");
    redis_expect(redisCommand(c, "AUTH %s", "not-the-password-0123"), REDIS_REPLY_ERROR,
                 "AUTH with a wrong password");
    redis_expect(redisCommand(c, "SET authkey %s", "v"), REDIS_REPLY_STATUS, "SET");
    redis_expect(redisCommand(c, "GET authkey"), REDIS_REPLY_STRING, "GET");
    redisFree(c);
}

/* ---- the service ----------------------------------------------------------------------- */

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    (void)cls, (void)method, (void)version, (void)upload, (void)upload_size;
    static int first;
    if (*state == NULL) {
        *state = &first;
        return MHD_YES;
    }
    if (strcmp(url, "/pq") == 0) {
        run_pq();
    } else if (strcmp(url, "/mysql") == 0) {
        run_mysql();
    } else if (strcmp(url, "/mysql-bind") == 0) {
        run_mysql_bind();
    } else if (strcmp(url, "/redis") == 0) {
        run_redis();
    } else if (strcmp(url, "/redis-auth") == 0) {
        run_redis_auth();
    } else {
        pl_db_fail("unknown path", url);
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(2, (void *)"ok", MHD_RESPMEM_PERSISTENT);
    enum MHD_Result rc = MHD_queue_response(c, pl_db_failed ? 500 : 200, r);
    MHD_destroy_response(r);
    return rc;
}

static size_t body_discard(char *data, size_t size, size_t n, void *user)
{
    (void)data, (void)user;
    return size * n;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: pl_db pq|mysql|mysql-bind|redis|redis-auth\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, handle, NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "pl_db: MHD_start_daemon failed\n");
        return 1;
    }
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/%s",
             MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port, argv[1]);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(3 * WAIT_MS));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_discard);
    long status = 0;
    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_OK) {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    } else {
        fprintf(stderr, "pl_db: GET %s: %s\n", url, curl_easy_strerror(rc));
    }
    curl_easy_cleanup(h);
    MHD_stop_daemon(d);
    curl_global_cleanup();
    return status == 200 ? 0 : 1;
}
