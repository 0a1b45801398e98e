/*
 * test_preload_db.c - the database and cache plugins of libskywalking-preload.so against real
 * servers (PostgreSQL, MariaDB, Redis of the ctest fixture "db", tests/support/db/servers.sh):
 * pl_db (libmicrohttpd + libpq + libmariadb + hiredis, linked dynamically) and the real psql.
 * Each test reads the segment file the reporter wrote and checks the span tree, tags, peers,
 * components, error flags and logs, and the statement limit.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/pl_support.h"

#define WAIT_MS 60000

/* The segment file and the stderr of the last run_traced. */
static char traced_file[512], traced_err[512];

/* Runs `argv` preloaded, with `extra` ("K=V" or NULL entries), writing segments into a fresh
   directory (traced_file); returns the segments read. */
static void run_traced(char *const argv[], const char *tag, const char *extra1, const char *extra2,
                       pl_segments_t *out)
{
    pl_db_servers_env();
    char dir[256], e[3][4200];
    char *file = traced_file, *err = traced_err;
    pl_tmpdir(dir, sizeof dir, tag);
    snprintf(file, sizeof traced_file, "%s/seg.bin", dir);
    snprintf(e[0], sizeof e[0], "LD_PRELOAD=%s", PL_PRELOAD_LIB);
    snprintf(e[1], sizeof e[1], "SW_REPORTER_FILE_PATH=%s", file);
    snprintf(e[2], sizeof e[2], "SW_AGENT_NAME=pl-db");
    char *env[] = {e[0], e[1], e[2], (char *)extra1, (char *)extra2, NULL};
    if (extra1 == NULL) {
        env[3] = (char *)extra2, env[4] = NULL;
    }
    snprintf(err, sizeof traced_err, "%s/stderr", dir);
    int rc = pl_run(argv, env, NULL, err, WAIT_MS);
    char *msg = pl_slurp(err, NULL);
    cr_assert_eq(rc, 0, "%s exited %d: %s", argv[0], rc, msg != NULL ? msg : "");
    free(msg);
    cr_assert_gt(pl_segments_read(out, file), 0, "%s wrote no segment", argv[0]);
}

/* The segment of pl_db's handler (entry span "/<mode>"). */
static const pl_segment_t *handler_segment(const pl_segments_t *s, const char *op)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->segs[i]->spans[0]->spantype == SKYWALKING__V3__SPAN_TYPE__Entry &&
            strcmp(s->segs[i]->spans[0]->operationname, op) == 0) {
            return s->segs[i];
        }
    }
    cr_assert_fail("no segment for the %s handler", op);
    return NULL;
}

/* The checks every database or cache exit span of a handler passes. */
static void exit_common(const pl_span_t *sp, int layer, int component)
{
    cr_assert_eq(sp->spantype, SKYWALKING__V3__SPAN_TYPE__Exit, "%s", sp->operationname);
    cr_assert_eq(sp->parentspanid, 0, "%s is a child of the handler's entry", sp->operationname);
    cr_assert_eq((int)sp->spanlayer, layer, "%s layer", sp->operationname);
    cr_assert_eq(sp->componentid, component, "%s component", sp->operationname);
    cr_assert_geq(sp->endtime, sp->starttime);
    cr_assert_neq(sp->peer[0], '\0', "%s has a peer", sp->operationname);
}

static void tag_is(const pl_span_t *sp, const char *key, const char *want)
{
    const char *v = pl_span_tag(sp, key);
    if (want == NULL) {
        cr_assert_null(v, "%s: tag %s = %s, expected none", sp->operationname, key, v);
        return;
    }
    cr_assert_not_null(v, "%s: no tag %s", sp->operationname, key);
    cr_assert_str_eq(v, want, "%s: tag %s", sp->operationname, key);
}

/* The span failed and its log carries the server's message containing `needle`. */
static void error_logged(const pl_span_t *sp, const char *needle)
{
    cr_assert(sp->iserror, "%s is an error", sp->operationname);
    cr_assert_eq(sp->n_logs, 1, "%s: one error log", sp->operationname);
    bool found = false;
    for (size_t i = 0; i < sp->logs[0]->n_data; i++) {
        if (strcmp(sp->logs[0]->data[i]->key, "message") == 0) {
            found = strstr(sp->logs[0]->data[i]->value, needle) != NULL;
        }
    }
    cr_assert(found, "%s: the log has the server's message (%s)", sp->operationname, needle);
}

static void no_error(const pl_span_t *sp)
{
    cr_assert_not(sp->iserror, "%s is no error", sp->operationname);
    cr_assert_eq(sp->n_logs, 0);
}

/* ---- PostgreSQL ------------------------------------------------------------------------ */

static const char *const pq_ops[] = {
    "PostgreSQL/libpq/PQexec",         "PostgreSQL/libpq/PQexec",
    "PostgreSQL/libpq/PQexecParams",   "PostgreSQL/libpq/PQprepare",
    "PostgreSQL/libpq/PQexecPrepared", "PostgreSQL/libpq/PQexec",
    "PostgreSQL/libpq/PQsendQuery",    "PostgreSQL/libpq/PQexec",
    "PostgreSQL/libpq/PQexec",
};

static void pq_check(const pl_segments_t *s, bool limited)
{
    cr_assert_eq(s->n, 2, "curl's exit and the handler: %zu segments", s->n);
    const pl_segment_t *h = handler_segment(s, "/pq");
    cr_assert_eq(h->n_spans, 10, "entry + 9 statements, got %zu spans", h->n_spans);
    char sock_peer[600], tcp_peer[64];
    snprintf(sock_peer, sizeof sock_peer, "%s/.s.PGSQL.%s", getenv("SW_TEST_PG_SOCKDIR"),
             getenv("SW_TEST_PG_PORT"));
    snprintf(tcp_peer, sizeof tcp_peer, "127.0.0.1:%s", getenv("SW_TEST_PG_PORT"));
    for (size_t i = 1; i < 10; i++) {
        const pl_span_t *sp = h->spans[i];
        cr_assert_str_eq(sp->operationname, pq_ops[i - 1]);
        exit_common(sp, SKYWALKING__V3__SPAN_LAYER__Database, 22);
        cr_assert_str_eq(sp->peer, i == 9 ? tcp_peer : sock_peer);
        tag_is(sp, "db.type", "sql");
        tag_is(sp, "db.instance", "swtest");
    }
    tag_is(h->spans[1], "db.statement", "SELECT 1");
    tag_is(h->spans[3], "db.statement", "INSERT INTO t VALUES ($1, $2)");
    tag_is(h->spans[3], "db.sql.parameters", limited ? "[7,seven]" : NULL);
    tag_is(h->spans[5], "db.statement", "SELECT name FROM t WHERE id = $1");
    tag_is(h->spans[5], "db.sql.parameters", limited ? "[7]" : NULL);
    error_logged(h->spans[6], "no_such_table");
    for (size_t i = 1; i < 10; i++) {
        if (i != 6) {
            no_error(h->spans[i]);
        }
    }
    tag_is(h->spans[7], "db.statement", "SELECT 2; SELECT 3");
    const char *longsql = pl_span_tag(h->spans[8], "db.statement");
    cr_assert_not_null(longsql);
    cr_assert_eq(strlen(longsql), limited ? 64u : 109u, "statement cut at the limit: %zu",
                 strlen(longsql));
    cr_assert_eq(strncmp(longsql, "SELECT '0000", 12), 0);
}

Test(preload_db, libpq_calls_are_database_exit_spans)
{
    char *argv[] = {PL_DB, "pq", NULL};
    pl_segments_t s = {0};
    run_traced(argv, "pq", "SW_PLUGIN_SQL_BODY_MAX_LENGTH=64", "SW_PLUGIN_SQL_PARAMETERS=true", &s);
    pq_check(&s, true);
    pl_segments_free(&s);
}

Test(preload_db, libpq_defaults_record_no_parameters_and_whole_statements)
{
    char *argv[] = {PL_DB, "pq", NULL};
    pl_segments_t s = {0};
    run_traced(argv, "pqdef", NULL, NULL, &s);
    pq_check(&s, false);
    pl_segments_free(&s);
}

Test(preload_db, real_psql_is_traced)
{
    pl_db_servers_env();
    char *argv[] = {"psql",
                    "-X",
                    "-q",
                    "-h",
                    getenv("SW_TEST_PG_SOCKDIR"),
                    "-p",
                    getenv("SW_TEST_PG_PORT"),
                    "-U",
                    "postgres",
                    "-d",
                    "swtest",
                    "-c",
                    "SELECT 42",
                    NULL};
    pl_segments_t s = {0};
    run_traced(argv, "psql", NULL, NULL, &s);
    size_t found = 0;
    for (size_t i = 0; i < s.n; i++) {
        for (size_t k = 0; k < s.segs[i]->n_spans; k++) {
            const pl_span_t *sp = s.segs[i]->spans[k];
            const char *st = pl_span_tag(sp, "db.statement");
            if (st == NULL || strcmp(st, "SELECT 42") != 0) {
                continue;
            }
            cr_assert_eq(sp->spantype, SKYWALKING__V3__SPAN_TYPE__Exit);
            cr_assert_eq(sp->componentid, 22);
            cr_assert_eq(sp->spanlayer, SKYWALKING__V3__SPAN_LAYER__Database);
            tag_is(sp, "db.instance", "swtest");
            no_error(sp);
            found++;
        }
    }
    cr_assert_eq(found, 1, "psql's SELECT 42 is one exit span (found %zu)", found);
    pl_segments_free(&s);
}

/* ---- MariaDB --------------------------------------------------------------------------- */

static const char *const my_ops[] = {
    "Mysql/libmariadb/mysql_query",        "Mysql/libmariadb/mysql_real_query",
    "Mysql/libmariadb/mysql_stmt_prepare", "Mysql/libmariadb/mysql_stmt_execute",
    "Mysql/libmariadb/mysql_query",        "Mysql/libmariadb/mysql_send_query",
    "Mysql/libmariadb/mysql_query",
};

Test(preload_db, libmariadb_calls_are_database_exit_spans)
{
    char *argv[] = {PL_DB, "mysql", NULL};
    pl_segments_t s = {0};
    run_traced(argv, "my", "SW_PLUGIN_SQL_PARAMETERS=true", "SW_PLUGIN_SQL_BODY_MAX_LENGTH=20", &s);
    cr_assert_eq(s.n, 2);
    const pl_segment_t *h = handler_segment(&s, "/mysql");
    cr_assert_eq(h->n_spans, 8, "entry + 7 statements, got %zu spans", h->n_spans);
    char tcp_peer[64];
    snprintf(tcp_peer, sizeof tcp_peer, "127.0.0.1:%s", getenv("SW_TEST_MY_PORT"));
    for (size_t i = 1; i < 8; i++) {
        const pl_span_t *sp = h->spans[i];
        cr_assert_str_eq(sp->operationname, my_ops[i - 1]);
        exit_common(sp, SKYWALKING__V3__SPAN_LAYER__Database, 5);
        cr_assert_str_eq(sp->peer, i == 7 ? tcp_peer : getenv("SW_TEST_MY_SOCKET"));
        tag_is(sp, "db.type", "sql");
        tag_is(sp, "db.instance", "swtest");
        if (i != 5) {
            no_error(sp);
        }
    }
    tag_is(h->spans[1], "db.statement", "SELECT 1");
    tag_is(h->spans[2], "db.statement", "CREATE TEMPORARY TAB"); /* cut at 20 bytes */
    tag_is(h->spans[3], "db.statement", "INSERT INTO t VALUES");
    tag_is(h->spans[4], "db.statement", "INSERT INTO t VALUES");
    tag_is(h->spans[4], "db.sql.parameters", "[7,seven]");
    error_logged(h->spans[5], "no_such_table");
    tag_is(h->spans[6], "db.statement", "SELECT 2");
    pl_segments_free(&s);
}

/* The bound values of mysql_stmt_execute come from libmariadb's copy of the binds: pl_db binds
   from a MYSQL_BIND array in a helper's frame, overwrites that stack, executes, changes the
   values and executes again. In the asan preset (detect_stack_use_after_return) a read through
   the caller's array is reported and pl_db fails; in a plain build the scribbled frame gives
   wrong values. */
Test(preload_db, libmariadb_binds_are_read_from_the_librarys_copy)
{
    char asan[600];
    const char *given = getenv("ASAN_OPTIONS");
    snprintf(asan, sizeof asan, "ASAN_OPTIONS=%s%sdetect_stack_use_after_return=1",
             given != NULL ? given : "", given != NULL && given[0] != '\0' ? ":" : "");
    char *argv[] = {PL_DB, "mysql-bind", NULL};
    pl_segments_t s = {0};
    run_traced(argv, "mybind", "SW_PLUGIN_SQL_PARAMETERS=true", asan, &s);
    const pl_segment_t *h = handler_segment(&s, "/mysql-bind");
    cr_assert_eq(h->n_spans, 5, "entry + 4 statements, got %zu spans", h->n_spans);
    cr_assert_str_eq(h->spans[3]->operationname, "Mysql/libmariadb/mysql_stmt_execute");
    cr_assert_str_eq(h->spans[4]->operationname, "Mysql/libmariadb/mysql_stmt_execute");
    tag_is(h->spans[3], "db.sql.parameters", "[7,seven]");
    tag_is(h->spans[4], "db.sql.parameters", "[8,eight]");
    for (size_t i = 1; i < 5; i++) {
        no_error(h->spans[i]);
    }
    pl_segments_free(&s);
}

/* ---- Redis ----------------------------------------------------------------------------- */

typedef struct redis_want {
    const char *op, *cmd, *cache_op, *key;
} redis_want_t;

static const redis_want_t redis_wants[] = {
    {"Redis/set", "set", "write", "k"},   {"Redis/get", "get", "read", "k"},
    {"Redis/hset", "hset", "write", "h"}, {"Redis/incr", "incr", "write", "k"},
    {"Redis/get", "get", "read", "k"},    {"Redis/del", "del", "write", "k"},
    {"Redis/ping", "ping", NULL, NULL},
};

static void redis_check(const pl_segments_t *s, bool keys)
{
    cr_assert_eq(s->n, 2);
    const pl_segment_t *h = handler_segment(s, "/redis");
    cr_assert_eq(h->n_spans, 8, "entry + 7 commands, got %zu spans", h->n_spans);
    char tcp_peer[64];
    snprintf(tcp_peer, sizeof tcp_peer, "127.0.0.1:%s", getenv("SW_TEST_REDIS_PORT"));
    for (size_t i = 1; i < 8; i++) {
        const pl_span_t *sp = h->spans[i];
        const redis_want_t *w = &redis_wants[i - 1];
        cr_assert_str_eq(sp->operationname, w->op);
        exit_common(sp, SKYWALKING__V3__SPAN_LAYER__Cache, 7);
        cr_assert_str_eq(sp->peer, i == 7 ? getenv("SW_TEST_REDIS_SOCKET") : tcp_peer);
        tag_is(sp, "cache.type", "Redis");
        tag_is(sp, "cache.cmd", w->cmd);
        tag_is(sp, "cache.op", w->cache_op);
        tag_is(sp, "cache.key", keys ? w->key : NULL);
        if (i != 4) {
            no_error(sp);
        }
    }
    error_logged(h->spans[4], "not an integer");
}

Test(preload_db, hiredis_commands_are_cache_exit_spans)
{
    char *argv[] = {PL_DB, "redis", NULL};
    pl_segments_t s = {0};
    run_traced(argv, "redis", NULL, NULL, &s);
    redis_check(&s, true);
    pl_segments_free(&s);
}

Test(preload_db, redis_keys_are_left_out_on_request)
{
    char *argv[] = {PL_DB, "redis", NULL};
    pl_segments_t s = {0};
    run_traced(argv, "rediskey", "SW_PLUGIN_REDIS_TRACE_KEY=false", NULL, &s);
    redis_check(&s, false);
    pl_segments_free(&s);
}

/* Whether the file at path holds the bytes of `needle` anywhere. */
static bool file_has(const char *path, const char *needle)
{
    size_t len;
    char *text = pl_slurp(path, &len);
    bool found = text != NULL && memmem(text, len, needle, strlen(needle)) != NULL;
    free(text);
    return found;
}

static const char *const redis_auth_ops[] = {
    "Redis/auth", "Redis/auth",   "Redis/auth",  "Redis/auth",    "Redis/auth",
    "Redis/auth", "Redis/auth",   "Redis/hello", "Redis/migrate", "Redis/acl",
    "Redis/acl",  "Redis/config", "Redis/auth",  "Redis/set",     "Redis/get",
};

/* A password never reaches a span: not as cache.key of AUTH in any form the plugin sees (the
   blocking calls, the pipelines), nor of HELLO, MIGRATE, ACL SETUSER or CONFIG SET, nor in the
   error reply that repeats an ACL SETUSER argument. Keys of SET and GET are still recorded. The
   whole segment file and the program's stderr are searched for the password's bytes. */
Test(preload_db, redis_passwords_never_reach_a_span)
{
    char *argv[] = {PL_DB, "redis-auth", NULL};
    pl_segments_t s = {0};
    run_traced(argv, "redisauth", NULL, NULL, &s);
    const char *pw = getenv("SW_TEST_REDIS_PASSWORD");
    cr_assert(pw != NULL && strlen(pw) == 32, "the db fixture sets SW_TEST_REDIS_PASSWORD");
    cr_assert_eq(s.n, 2);
    const pl_segment_t *h = handler_segment(&s, "/redis-auth");
    size_t n = sizeof redis_auth_ops / sizeof *redis_auth_ops;
    cr_assert_eq(h->n_spans, n + 1, "entry + %zu commands, got %zu spans", n, h->n_spans);
    for (size_t i = 1; i <= n; i++) {
        const pl_span_t *sp = h->spans[i];
        cr_assert_str_eq(sp->operationname, redis_auth_ops[i - 1], "span %zu", i);
        exit_common(sp, SKYWALKING__V3__SPAN_LAYER__Cache, 7);
        bool keyed = i >= n - 1;
        tag_is(sp, "cache.key", keyed ? "authkey" : NULL);
        if (i == 11 || i == 13) {
            cr_assert(sp->iserror, "%s (span %zu) failed", sp->operationname, i);
        } else {
            no_error(sp);
        }
    }
    error_logged(h->spans[13], "not shown"); /* WRONGPASS: no reply to AUTH is recorded */
    error_logged(h->spans[11], "not shown");
    cr_assert_not(file_has(traced_file, pw), "the password is in the segment file");
    cr_assert_not(file_has(traced_file, "not-the-password-0123"),
                  "the wrong password is in the segment file");
    cr_assert_not(file_has(traced_err, pw), "the password is in the program's stderr");
    pl_segments_free(&s);
}

#ifdef PL_FORK /* plain builds: pl_fork's calloc would replace a sanitizer's */
/* Spans of operation `op` in all segments (with cache.key or db.statement `want` when not NULL). */
static size_t count_spans(const pl_segments_t *s, const char *op, const char *tag, const char *want)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        for (size_t k = 0; k < s->segs[i]->n_spans; k++) {
            const pl_span_t *sp = s->segs[i]->spans[k];
            const char *v = tag != NULL ? pl_span_tag(sp, tag) : NULL;
            n += strcmp(sp->operationname, op) == 0 && (tag == NULL || (v && !strcmp(v, want)));
        }
    }
    return n;
}

/* Every plugin lock is fork-safe: pl_fork forks while another thread is held inside the
   hiredis, libpq, libmariadb and libcurl plugins' sections in turn; each child closes the
   handles it inherited and makes traced calls of every plugin (hiredis pipeline, PQsendQuery,
   mysql_send_query, a libmicrohttpd server, curl easy and multi) within a bounded wait, and
   its spans reach the file. */
Test(preload_db, forks_while_a_plugin_lock_is_held_leave_children_working)
{
    char *argv[] = {PL_FORK, NULL};
    pl_segments_t s = {0};
    run_traced(argv, "fork", NULL, NULL, &s);
    const size_t cases = 4;
    cr_assert_eq(count_spans(&s, "Redis/set", "cache.key", "forkkey"), cases);
    cr_assert_eq(count_spans(&s, "PostgreSQL/libpq/PQsendQuery", "db.statement", "SELECT 'fork'"),
                 cases);
    cr_assert_eq(
        count_spans(&s, "Mysql/libmariadb/mysql_send_query", "db.statement", "SELECT 'fork'"),
        cases);
    cr_assert_eq(count_spans(&s, "/fork-easy", NULL, NULL), 2 * cases, "exit and entry spans");
    cr_assert_eq(count_spans(&s, "/fork-multi", NULL, NULL), 2 * cases, "exit and entry spans");
    pl_segments_free(&s);
}
#endif

/* The plugins' settings come from the SW_AGENT_CONFIG file like every other setting. */
Test(preload_db, plugin_settings_are_read_from_the_config_file)
{
    char dir[256], conf[512], conf_env[600];
    pl_tmpdir(dir, sizeof dir, "dbconf");
    snprintf(conf, sizeof conf, "%s/agent.conf", dir);
    FILE *f = fopen(conf, "w");
    cr_assert_not_null(f, "%s", conf);
    fputs("# the Redis plugin of the preload library\nSW_PLUGIN_REDIS_TRACE_KEY=false\n", f);
    cr_assert_eq(fclose(f), 0);
    snprintf(conf_env, sizeof conf_env, "SW_AGENT_CONFIG=%s", conf);
    char *argv[] = {PL_DB, "redis", NULL};
    pl_segments_t s = {0};
    run_traced(argv, "redisconf", conf_env, NULL, &s);
    redis_check(&s, false);
    pl_segments_free(&s);
}

/* A bad plugin value is a bad setting like any other: one message names it, and the program
   runs untraced and exits normally. */
Test(preload_db, a_bad_plugin_setting_leaves_the_program_untraced)
{
    pl_db_servers_env();
    char dir[256], file[512], err[512], e[3][4200];
    pl_tmpdir(dir, sizeof dir, "dbbad");
    snprintf(file, sizeof file, "%s/seg.bin", dir);
    snprintf(err, sizeof err, "%s/stderr", dir);
    snprintf(e[0], sizeof e[0], "LD_PRELOAD=%s", PL_PRELOAD_LIB);
    snprintf(e[1], sizeof e[1], "SW_REPORTER_FILE_PATH=%s", file);
    snprintf(e[2], sizeof e[2], "SW_PLUGIN_SQL_BODY_MAX_LENGTH=lots");
    char *env[] = {e[0], e[1], e[2], NULL};
    char *argv[] = {PL_DB, "redis", NULL};
    int rc = pl_run(argv, env, NULL, err, WAIT_MS);
    char *msg = pl_slurp(err, NULL);
    cr_assert_not_null(msg);
    cr_expect_eq(rc, 0, "pl_db exited %d: %s", rc, msg);
    cr_expect_not_null(strstr(msg, "SW_PLUGIN_SQL_BODY_MAX_LENGTH must be an integer in 0..16384"),
                       "%s", msg);
    cr_expect_not_null(strstr(msg, "runs untraced"), "%s", msg);
    cr_expect_eq(access(file, F_OK), -1, "an untraced program writes no segment file");
    free(msg);
}
