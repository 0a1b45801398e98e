/*
 * preload_mariadb.c - the MySQL C API of libmariadb (MariaDB Connector/C, Debian's
 * libmariadb-dev; it talks to MySQL and MariaDB servers): every statement becomes an exit span
 * with the database conventions of preload_db.h, component Mysql, operation
 * "Mysql/libmariadb/<call>", peer host:port (the socket path for a unix-socket connection).
 *
 * mysql_real_query and mysql_query are spans around the call. mysql_send_query remembers the
 * statement and its start time per connection; mysql_read_query_result makes the span, on the
 * thread that read it (span_async.h, "spans begun late"). mysql_stmt_prepare is a span with the
 * statement, remembered per statement handle for mysql_stmt_execute's span (and, with
 * SW_PLUGIN_SQL_PARAMETERS=true, the bound values: read at execute from the library's own copy
 * of the binds, stmt->params, never through the caller's MYSQL_BIND array, which the caller may
 * free or reuse once mysql_stmt_bind_param returned).
 * mysql_stmt_close and mysql_close forget a handle. libmariadb calls its own exported functions
 * (mysql_query calls mysql_real_query, which calls mysql_send_query): the thread's in_call flag
 * makes those inner calls plain forwards.
 */
#include <mysql.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/instrument/span_async.h"
#include "preload.h"
#include "preload_lock.h"
#include "preload_db.h"
#include "preload_handle_map.h"

/* What this library knows about a connection (a query sent and not read yet) or a prepared
   statement (its SQL and binds), keyed by the MYSQL or MYSQL_STMT. */
typedef struct handle_info {
    sw__handle_node_t node; /* first: the map's link */
    char *sql;              /* cut at the statement limit */
    int64_t start_ms;       /* connections: when mysql_send_query sent `sql` (0: nothing) */
    bool bound;             /* statements: mysql_stmt_bind_param succeeded since the prepare */
    MYSQL *mysql;           /* statements: their connection */
} handle_info_t;

/* Global because libmariadb offers no slot for it; SW__PLUGIN_LOCK_MARIADB (preload_lock.h)
 * protects the buckets and nodes. */
static sw__handle_map_t infos;

/* Set while this thread runs a traced call (the recursion guard, see above). */
static _Thread_local bool in_call;

typedef struct my_fns {
    my_bool (*get_info)(MYSQL *, enum mariadb_value, void *, ...);
    const char *(*error)(MYSQL *);
    const char *(*stmt_error)(MYSQL_STMT *);
    unsigned long (*param_count)(MYSQL_STMT *);
} my_fns_t;

static bool fns_resolve(my_fns_t *f)
{
    SW__PRELOAD_REAL(f->get_info, "mariadb_get_infov");
    SW__PRELOAD_REAL(f->error, "mysql_error");
    SW__PRELOAD_REAL(f->stmt_error, "mysql_stmt_error");
    SW__PRELOAD_REAL(f->param_count, "mysql_stmt_param_count");
    return f->get_info && f->error && f->stmt_error && f->param_count;
}

static bool tracing(my_fns_t *f)
{
    return !in_call && !sw__preload_busy && fns_resolve(f) && sw__preload_agent_ready();
}

/* The node of h, created when `create`; SW__PLUGIN_LOCK_MARIADB held. */
static handle_info_t *info_find(const void *h, bool create)
{
    if (create) {
        return (handle_info_t *)sw__handle_map_get(&infos, h, sizeof(handle_info_t));
    }
    return (handle_info_t *)sw__handle_map_find(&infos, h);
}

static void info_forget(const void *h)
{
    sw__plugin_lock(SW__PLUGIN_LOCK_MARIADB);
    handle_info_t *found = (handle_info_t *)sw__handle_map_take(&infos, h);
    sw__plugin_unlock(SW__PLUGIN_LOCK_MARIADB);
    if (found != NULL) {
        free(found->sql);
    }
    free(found);
}

static char *sql_copy(const char *q, size_t len)
{
    if (q == NULL) {
        return NULL;
    }
    return strndup(q, len < sw__db_settings.sql_body_max ? len : sw__db_settings.sql_body_max);
}

static void peer_format(const my_fns_t *f, MYSQL *m, char *peer, size_t size)
{
    const char *host = NULL, *sock = NULL;
    unsigned int port = 0;
    (void)f->get_info(m, MARIADB_CONNECTION_HOST, &host);
    (void)f->get_info(m, MARIADB_CONNECTION_UNIX_SOCKET, &sock);
    (void)f->get_info(m, MARIADB_CONNECTION_PORT, &port);
    if ((host == NULL || strcmp(host, "localhost") == 0) && sock != NULL && sock[0] != '\0') {
        snprintf(peer, size, "%s", sock);
    } else {
        snprintf(peer, size, "%s:%u", host != NULL && host[0] != '\0' ? host : "localhost",
                 port != 0 ? port : 3306);
    }
}

/* Begins a span on connection m and sets its tags. */
static void span_begin(const my_fns_t *f, MYSQL *m, const char *op, const char *sql, size_t sql_len,
                       int64_t since_ms)
{
    char peer[512];
    peer_format(f, m, peer, sizeof peer);
    const char *schema = NULL;
    (void)f->get_info(m, MARIADB_CONNECTION_SCHEMA, &schema);
    sw__span_mark_t mark;
    sw__span_begin_exit_since(op, peer, since_ms, &mark);
    sw__preload_pending_apply(&mark, true);
    sw__db_span_tags(SW__COMPONENT_MYSQL, schema, sql, sql_len);
}

/* Ends the active span; `failed` with the server's message `msg`. */
static void span_end(bool failed, const char *msg)
{
    if (failed) {
        sw__db_span_error("Mysql", msg != NULL ? msg : "", msg != NULL ? strlen(msg) : 0);
    }
    sw_span_end();
}

int mysql_real_query(MYSQL *mysql, const char *q, unsigned long length)
{
    int (*real)(MYSQL *, const char *, unsigned long);
    SW__PRELOAD_REAL(real, "mysql_real_query");
    if (real == NULL) {
        return 1;
    }
    my_fns_t f;
    if (mysql == NULL || !tracing(&f)) {
        return real(mysql, q, length);
    }
    span_begin(&f, mysql, "Mysql/libmariadb/mysql_real_query", q, q != NULL ? length : 0, 0);
    in_call = true;
    int rc = real(mysql, q, length);
    in_call = false;
    span_end(rc != 0, rc != 0 ? f.error(mysql) : NULL);
    return rc;
}

int mysql_query(MYSQL *mysql, const char *q)
{
    int (*real)(MYSQL *, const char *);
    SW__PRELOAD_REAL(real, "mysql_query");
    if (real == NULL) {
        return 1;
    }
    my_fns_t f;
    if (mysql == NULL || !tracing(&f)) {
        return real(mysql, q);
    }
    span_begin(&f, mysql, "Mysql/libmariadb/mysql_query", q, q != NULL ? strlen(q) : 0, 0);
    in_call = true;
    int rc = real(mysql, q);
    in_call = false;
    span_end(rc != 0, rc != 0 ? f.error(mysql) : NULL);
    return rc;
}

int mysql_send_query(MYSQL *mysql, const char *q, unsigned long length)
{
    int (*real)(MYSQL *, const char *, unsigned long);
    SW__PRELOAD_REAL(real, "mysql_send_query");
    if (real == NULL) {
        return 1;
    }
    my_fns_t f;
    if (mysql == NULL || !tracing(&f)) {
        return real(mysql, q, length);
    }
    int64_t start = sw__span_clock_ms();
    in_call = true;
    int rc = real(mysql, q, length);
    in_call = false;
    char *sql = rc == 0 ? sql_copy(q, length) : NULL;
    if (sql == NULL) {
        return rc;
    }
    sw__plugin_lock(SW__PLUGIN_LOCK_MARIADB);
    handle_info_t *i = info_find(mysql, true);
    if (i != NULL) {
        free(i->sql);
        i->sql = sql;
        i->start_ms = start;
        sql = NULL;
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_MARIADB);
    free(sql);
    return rc;
}

my_bool mysql_read_query_result(MYSQL *mysql)
{
    my_bool (*real)(MYSQL *);
    SW__PRELOAD_REAL(real, "mysql_read_query_result");
    if (real == NULL) {
        return 1;
    }
    my_fns_t f;
    if (mysql == NULL || !tracing(&f)) {
        return real(mysql);
    }
    in_call = true;
    my_bool rc = real(mysql);
    in_call = false;
    char *sql = NULL;
    int64_t start = 0;
    sw__plugin_lock(SW__PLUGIN_LOCK_MARIADB);
    handle_info_t *i = info_find(mysql, false);
    if (i != NULL && i->start_ms != 0) {
        sql = i->sql;
        start = i->start_ms;
        i->sql = NULL;
        i->start_ms = 0;
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_MARIADB);
    if (start != 0) {
        span_begin(&f, mysql, "Mysql/libmariadb/mysql_send_query", sql,
                   sql != NULL ? strlen(sql) : 0, start);
        span_end(rc != 0, rc != 0 ? f.error(mysql) : NULL);
    }
    free(sql);
    return rc;
}

void mysql_close(MYSQL *mysql)
{
    void (*real)(MYSQL *);
    SW__PRELOAD_REAL(real, "mysql_close");
    info_forget(mysql);
    if (real != NULL) {
        real(mysql);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Prepared statements                                                                         */
/* ------------------------------------------------------------------------------------------ */

int mysql_stmt_prepare(MYSQL_STMT *stmt, const char *query, unsigned long length)
{
    int (*real)(MYSQL_STMT *, const char *, unsigned long);
    SW__PRELOAD_REAL(real, "mysql_stmt_prepare");
    if (real == NULL) {
        return 1;
    }
    my_fns_t f;
    if (stmt == NULL || stmt->mysql == NULL || !tracing(&f)) {
        return real(stmt, query, length);
    }
    MYSQL *m = stmt->mysql;
    span_begin(&f, m, "Mysql/libmariadb/mysql_stmt_prepare", query, query != NULL ? length : 0, 0);
    in_call = true;
    int rc = real(stmt, query, length);
    in_call = false;
    span_end(rc != 0, rc != 0 ? f.stmt_error(stmt) : NULL);
    char *sql = rc == 0 ? sql_copy(query, length) : NULL;
    sw__plugin_lock(SW__PLUGIN_LOCK_MARIADB);
    handle_info_t *i = info_find(stmt, sql != NULL);
    if (i != NULL) {
        free(i->sql);
        i->sql = sql;
        i->mysql = m;
        i->bound = false;
        sql = NULL;
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_MARIADB);
    free(sql);
    return rc;
}

my_bool mysql_stmt_bind_param(MYSQL_STMT *stmt, MYSQL_BIND *bnd)
{
    my_bool (*real)(MYSQL_STMT *, MYSQL_BIND *);
    SW__PRELOAD_REAL(real, "mysql_stmt_bind_param");
    if (real == NULL) {
        return 1;
    }
    my_bool rc = real(stmt, bnd);
    if (rc == 0 && sw__db_settings.sql_parameters) {
        sw__plugin_lock(SW__PLUGIN_LOCK_MARIADB);
        handle_info_t *i = info_find(stmt, false);
        if (i != NULL) {
            i->bound = true; /* the values are read from stmt->params at execute */
        }
        sw__plugin_unlock(SW__PLUGIN_LOCK_MARIADB);
    }
    return rc;
}

/* One bound value as text: strings as they are, numbers formatted, others "(binary)". */
typedef struct bind_view {
    const MYSQL_BIND *bind;
    char scratch[32];
} bind_view_t;

static const char *bind_text(const void *ctx, int i, size_t *len)
{
    bind_view_t *v = (bind_view_t *)(uintptr_t)ctx; /* the view is the caller's scratch */
    const MYSQL_BIND *b = &v->bind[i];
    if ((b->is_null != NULL && *b->is_null) || b->buffer_type == MYSQL_TYPE_NULL ||
        b->buffer == NULL) {
        return NULL;
    }
    switch (b->buffer_type) {
    case MYSQL_TYPE_STRING:
    case MYSQL_TYPE_VAR_STRING:
    case MYSQL_TYPE_VARCHAR:
    case MYSQL_TYPE_BLOB:
        *len = b->length != NULL ? *b->length : b->buffer_length;
        return b->buffer;
    case MYSQL_TYPE_TINY:
        snprintf(v->scratch, sizeof v->scratch, "%d", *(const signed char *)b->buffer);
        break;
    case MYSQL_TYPE_SHORT:
        snprintf(v->scratch, sizeof v->scratch, "%d", *(const short *)b->buffer);
        break;
    case MYSQL_TYPE_LONG:
        snprintf(v->scratch, sizeof v->scratch, "%d", *(const int *)b->buffer);
        break;
    case MYSQL_TYPE_LONGLONG:
        snprintf(v->scratch, sizeof v->scratch, "%lld", *(const long long *)b->buffer);
        break;
    case MYSQL_TYPE_DOUBLE:
        snprintf(v->scratch, sizeof v->scratch, "%g", *(const double *)b->buffer);
        break;
    default:
        snprintf(v->scratch, sizeof v->scratch, "(binary)");
        break;
    }
    *len = strlen(v->scratch);
    return v->scratch;
}

int mysql_stmt_execute(MYSQL_STMT *stmt)
{
    int (*real)(MYSQL_STMT *);
    SW__PRELOAD_REAL(real, "mysql_stmt_execute");
    if (real == NULL) {
        return 1;
    }
    my_fns_t f;
    if (stmt == NULL || !tracing(&f)) {
        return real(stmt);
    }
    char *sql = NULL;
    bool bound = false;
    MYSQL *m = stmt->mysql;
    sw__plugin_lock(SW__PLUGIN_LOCK_MARIADB);
    handle_info_t *i = info_find(stmt, false);
    if (i != NULL) {
        sql = i->sql != NULL ? strdup(i->sql) : NULL;
        bound = i->bound;
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_MARIADB);
    if (m == NULL) {
        free(sql);
        return real(stmt);
    }
    span_begin(&f, m, "Mysql/libmariadb/mysql_stmt_execute", sql, sql != NULL ? strlen(sql) : 0, 0);
    free(sql);
    if (bound && stmt->params != NULL) {
        /* libmariadb's copy of the binds (mysql_stmt_bind_param copies the caller's array into
           it); the buffers it points to are the caller's, valid until execute by the API. */
        bind_view_t view = {stmt->params, ""};
        sw__db_params_tag((int)f.param_count(stmt), bind_text, &view);
    }
    in_call = true;
    int rc = real(stmt);
    in_call = false;
    span_end(rc != 0, rc != 0 ? f.stmt_error(stmt) : NULL);
    return rc;
}

my_bool mysql_stmt_close(MYSQL_STMT *stmt)
{
    my_bool (*real)(MYSQL_STMT *);
    SW__PRELOAD_REAL(real, "mysql_stmt_close");
    info_forget(stmt);
    return real != NULL ? real(stmt) : 1;
}
