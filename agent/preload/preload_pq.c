/*
 * preload_pq.c - libpq (PostgreSQL's client library): every statement becomes an exit span with
 * the database conventions of preload_db.h, component PostgreSQL, operation
 * "PostgreSQL/libpq/<call>", peer host:port from PQhost/PQport (the socket file
 * <dir>/.s.PGSQL.<port> for a unix-socket connection).
 *
 * Blocking calls (PQexec, PQexecParams, PQprepare, PQexecPrepared) are spans around the call.
 * An asynchronous query (PQsendQuery, PQsendQueryParams, PQsendPrepare, PQsendQueryPrepared)
 * is remembered per connection with its start time; its span is made when PQgetResult returns
 * NULL (every result read), on the thread that read it, with an error when any result failed
 * (span_async.h, "spans begun late").
 *
 * PQexecPrepared and PQsendQueryPrepared know only the statement's name: the SQL that PQprepare
 * or PQsendPrepare gave for it on that connection is looked up (PREPARED_MAX names per
 * connection are remembered; a later one is traced with its name). PQfinish forgets a
 * connection. libpq calls its own exported functions (PQexec calls PQsendQuery and
 * PQgetResult): the thread's in_call flag makes those inner calls plain forwards.
 */
#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/core/span_instrument.h"
#include "../src/instrument/span_async.h"
#include "preload.h"
#include "preload_lock.h"
#include "preload_db.h"
#include "preload_handle_map.h"
#include "../src/util/locality.h"

#define PREPARED_MAX 256

typedef struct prepared {
    struct prepared *next;
    char *name;
    char *sql;
} prepared_t;

/* An asynchronous query in flight on a connection. */
typedef struct pending {
    bool active;
    bool failed;
    int64_t start_ms;
    const char *op; /* a string literal */
    char *sql;      /* cut at the statement limit */
    char *params;   /* NULL unless SW_PLUGIN_SQL_PARAMETERS=true */
    char *error;    /* the first failed result's message */
} pending_t;

typedef struct conn_info {
    sw__handle_node_t node; /* first: the map's link, keyed by the connection */
    prepared_t *prepared;
    unsigned prepared_count;
    pending_t pending;
} conn_info_t;

/* What this library knows about each connection; global because libpq offers no slot for it.
   SW__PLUGIN_LOCK_PQ (preload_lock.h) protects the buckets and every node. */
static sw__handle_map_t conns;

/* Set while this thread runs a traced libpq call (the recursion guard, see above). */
static _Thread_local bool in_call;

typedef struct pq_fns {
    char *(*host)(const PGconn *);
    char *(*port)(const PGconn *);
    char *(*db)(const PGconn *);
    char *(*conn_error)(const PGconn *);
    ExecStatusType (*status)(const PGresult *);
    char *(*result_error)(const PGresult *);
    int (*backend_pid)(const PGconn *);
} pq_fns_t;

/* The peer of the connection this thread traced last, keyed by the connection and its server
   process (a freed PGconn's address may be reused by a new connection). */
static _Thread_local struct {
    const PGconn *conn;
    int backend_pid;
    char peer[512];
} tls_peer;

SW__HOT static bool fns_resolve(pq_fns_t *f)
{
    SW__PRELOAD_REAL(f->host, "PQhost");
    SW__PRELOAD_REAL(f->port, "PQport");
    SW__PRELOAD_REAL(f->db, "PQdb");
    SW__PRELOAD_REAL(f->conn_error, "PQerrorMessage");
    SW__PRELOAD_REAL(f->status, "PQresultStatus");
    SW__PRELOAD_REAL(f->result_error, "PQresultErrorMessage");
    SW__PRELOAD_REAL(f->backend_pid, "PQbackendPID");
    return f->host && f->port && f->db && f->conn_error && f->status && f->result_error &&
           f->backend_pid;
}

/* The node of c, created when `create`; SW__PLUGIN_LOCK_PQ held. */
static conn_info_t *info_find(const PGconn *c, bool create)
{
    if (create) {
        return (conn_info_t *)sw__handle_map_get(&conns, c, sizeof(conn_info_t));
    }
    return (conn_info_t *)sw__handle_map_find(&conns, c);
}

static void pending_clear(pending_t *p)
{
    free(p->sql);
    free(p->params);
    free(p->error);
    memset(p, 0, sizeof *p);
}

/* Whether a call on this thread is traced now (agent running, not nested). */
SW__HOT static bool tracing(pq_fns_t *f)
{
    return !in_call && !sw__preload_busy && fns_resolve(f) && sw__preload_agent_ready();
}

SW__HOT static const char *peer_of(const pq_fns_t *f, const PGconn *conn)
{
    int pid = f->backend_pid(conn);
    if (tls_peer.conn == conn && tls_peer.backend_pid == pid && pid != 0) {
        return tls_peer.peer;
    }
    char *peer = tls_peer.peer;
    size_t size = sizeof tls_peer.peer;
    tls_peer.conn = conn;
    tls_peer.backend_pid = pid;
    const char *host = f->host(conn);
    const char *port = f->port(conn);
    if (port == NULL || port[0] == '\0') {
        port = "5432";
    }
    if (host != NULL && host[0] == '/') {
        snprintf(peer, size, "%s/.s.PGSQL.%s", host, port);
    } else {
        snprintf(peer, size, "%s:%s", host != NULL && host[0] != '\0' ? host : "localhost", port);
    }
    return peer;
}

static const char *param_text(const void *ctx, int i, size_t *len)
{
    const char *const *values = ctx;
    if (values[i] != NULL) {
        *len = strlen(values[i]);
    }
    return values[i];
}

/* The parameters as db.sql.parameters text, NULL when not recorded. Values sent in binary
   format are written as "(binary)". */
static char *params_copy(int n, const char *const *values, const int *formats)
{
    if (!sw__db_settings.sql_parameters || n <= 0 || values == NULL) {
        return NULL;
    }
    const char **shown = malloc((size_t)n * sizeof *shown);
    char *buf = malloc(SW__PLUGIN_SQL_BODY_MAX + 1);
    if (shown != NULL && buf != NULL) {
        for (int i = 0; i < n; i++) {
            shown[i] =
                formats != NULL && formats[i] != 0 && values[i] != NULL ? "(binary)" : values[i];
        }
        sw__db_params_format(buf, SW__PLUGIN_SQL_BODY_MAX + 1, n, param_text, shown);
    } else {
        free(buf);
        buf = NULL;
    }
    free(shown);
    return buf;
}

/* Begins the span of a blocking call and sets its tags. */
SW__HOT static void span_begin(const pq_fns_t *f, const PGconn *conn, const char *op,
                               const char *sql, int64_t since_ms)
{
    sw__span_mark_t mark;
    sw__span_begin_exit_since(op, peer_of(f, conn), since_ms, &mark);
    sw__preload_pending_apply(&mark, true);
    sw__db_span_tags(SW__COMPONENT_POSTGRESQL, f->db(conn), sql, sql != NULL ? strlen(sql) : 0);
}

SW__HOT static bool result_failed(const pq_fns_t *f, const PGresult *r)
{
    ExecStatusType s = f->status(r);
    return s == PGRES_FATAL_ERROR || s == PGRES_BAD_RESPONSE;
}

/* Ends the span of a blocking call with its outcome. */
SW__HOT static void span_end(const pq_fns_t *f, const PGconn *conn, const PGresult *r)
{
    const char *msg = NULL;
    if (r == NULL) {
        msg = f->conn_error(conn);
    } else if (result_failed(f, r)) {
        msg = f->result_error(r);
    }
    if (msg != NULL) {
        sw__db_span_error("PostgreSQL", msg, strlen(msg));
    }
    sw_span_end();
}

/* The SQL remembered for a prepared statement's name (a copy to free), or NULL. */
static char *prepared_sql(const PGconn *conn, const char *name)
{
    char *sql = NULL;
    sw__plugin_lock(SW__PLUGIN_LOCK_PQ);
    conn_info_t *i = info_find(conn, false);
    for (prepared_t *p = i != NULL ? i->prepared : NULL; p != NULL; p = p->next) {
        if (strcmp(p->name, name != NULL ? name : "") == 0) {
            sql = strdup(p->sql);
            break;
        }
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_PQ);
    return sql;
}

static void prepared_remember(const PGconn *conn, const char *name, const char *sql)
{
    if (sql == NULL) {
        return;
    }
    size_t len = strlen(sql);
    if (len > sw__db_settings.sql_body_max) {
        len = sw__db_settings.sql_body_max;
    }
    sw__plugin_lock(SW__PLUGIN_LOCK_PQ);
    conn_info_t *i = info_find(conn, true);
    prepared_t *p = NULL;
    for (p = i != NULL ? i->prepared : NULL; p != NULL; p = p->next) {
        if (strcmp(p->name, name != NULL ? name : "") == 0) {
            break;
        }
    }
    if (p == NULL && i != NULL && i->prepared_count < PREPARED_MAX &&
        (p = calloc(1, sizeof *p)) != NULL) {
        p->name = strdup(name != NULL ? name : "");
        p->next = i->prepared;
        i->prepared = p;
        i->prepared_count++;
    }
    if (p != NULL) {
        free(p->sql);
        p->sql = strndup(sql, len);
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_PQ);
}

/* The statement text of a prepared statement for its span: the remembered SQL, or "EXECUTE
   <name>" when it is unknown. */
static char *prepared_statement(const PGconn *conn, const char *name)
{
    char *sql = prepared_sql(conn, name);
    if (sql == NULL) {
        size_t n = strlen(name != NULL ? name : "") + 9;
        sql = malloc(n);
        if (sql != NULL) {
            snprintf(sql, n, "EXECUTE %s", name != NULL ? name : "");
        }
    }
    return sql;
}

/* ------------------------------------------------------------------------------------------ */
/* Blocking calls                                                                              */
/* ------------------------------------------------------------------------------------------ */

SW__HOT PGresult *PQexec(PGconn *conn, const char *query)
{
    PGresult *(*real)(PGconn *, const char *);
    SW__PRELOAD_REAL(real, "PQexec");
    if (real == NULL) {
        return NULL;
    }
    pq_fns_t f;
    if (conn == NULL || !tracing(&f)) {
        return real(conn, query);
    }
    span_begin(&f, conn, "PostgreSQL/libpq/PQexec", query, 0);
    in_call = true;
    PGresult *r = real(conn, query);
    in_call = false;
    span_end(&f, conn, r);
    return r;
}

PGresult *PQexecParams(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
                       const char *const *paramValues, const int *paramLengths,
                       const int *paramFormats, int resultFormat)
{
    PGresult *(*real)(PGconn *, const char *, int, const Oid *, const char *const *, const int *,
                      const int *, int);
    SW__PRELOAD_REAL(real, "PQexecParams");
    if (real == NULL) {
        return NULL;
    }
    pq_fns_t f;
    if (conn == NULL || !tracing(&f)) {
        return real(conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats,
                    resultFormat);
    }
    span_begin(&f, conn, "PostgreSQL/libpq/PQexecParams", command, 0);
    char *params = params_copy(nParams, paramValues, paramFormats);
    if (params != NULL) {
        sw__span_tag_static("db.sql.parameters", params);
    }
    free(params);
    in_call = true;
    PGresult *r = real(conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats,
                       resultFormat);
    in_call = false;
    span_end(&f, conn, r);
    return r;
}

PGresult *PQprepare(PGconn *conn, const char *stmtName, const char *query, int nParams,
                    const Oid *paramTypes)
{
    PGresult *(*real)(PGconn *, const char *, const char *, int, const Oid *);
    SW__PRELOAD_REAL(real, "PQprepare");
    if (real == NULL) {
        return NULL;
    }
    pq_fns_t f;
    if (conn == NULL || !tracing(&f)) {
        return real(conn, stmtName, query, nParams, paramTypes);
    }
    span_begin(&f, conn, "PostgreSQL/libpq/PQprepare", query, 0);
    in_call = true;
    PGresult *r = real(conn, stmtName, query, nParams, paramTypes);
    in_call = false;
    if (r != NULL && !result_failed(&f, r)) {
        prepared_remember(conn, stmtName, query);
    }
    span_end(&f, conn, r);
    return r;
}

PGresult *PQexecPrepared(PGconn *conn, const char *stmtName, int nParams,
                         const char *const *paramValues, const int *paramLengths,
                         const int *paramFormats, int resultFormat)
{
    PGresult *(*real)(PGconn *, const char *, int, const char *const *, const int *, const int *,
                      int);
    SW__PRELOAD_REAL(real, "PQexecPrepared");
    if (real == NULL) {
        return NULL;
    }
    pq_fns_t f;
    if (conn == NULL || !tracing(&f)) {
        return real(conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat);
    }
    char *sql = prepared_statement(conn, stmtName);
    span_begin(&f, conn, "PostgreSQL/libpq/PQexecPrepared", sql, 0);
    free(sql);
    char *params = params_copy(nParams, paramValues, paramFormats);
    if (params != NULL) {
        sw__span_tag_static("db.sql.parameters", params);
    }
    free(params);
    in_call = true;
    PGresult *r =
        real(conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat);
    in_call = false;
    span_end(&f, conn, r);
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Asynchronous queries                                                                        */
/* ------------------------------------------------------------------------------------------ */

/* After a successful PQsend*: remembers the query (sql and params are taken over). */
static void pending_start(const PGconn *conn, const char *op, char *sql, char *params,
                          int64_t start_ms)
{
    size_t len = sql != NULL ? strlen(sql) : 0;
    if (len > sw__db_settings.sql_body_max && sql != NULL) {
        sql[len = sw__db_settings.sql_body_max] = '\0';
    }
    sw__plugin_lock(SW__PLUGIN_LOCK_PQ);
    conn_info_t *i = info_find(conn, true);
    if (i != NULL) {
        pending_clear(&i->pending);
        i->pending = (pending_t){true, false, start_ms, op, sql, params, NULL};
        sql = params = NULL;
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_PQ);
    free(sql);
    free(params);
}

/* Common tail of the PQsend* interposers: rc is the real call's result. */
static int send_traced(const PGconn *conn, int rc, const char *op, char *sql, char *params,
                       int64_t start_ms)
{
    if (rc == 1) {
        pending_start(conn, op, sql, params, start_ms);
    } else {
        free(sql);
        free(params);
    }
    return rc;
}

SW__HOT int PQsendQuery(PGconn *conn, const char *query)
{
    int (*real)(PGconn *, const char *);
    SW__PRELOAD_REAL(real, "PQsendQuery");
    if (real == NULL) {
        return 0;
    }
    pq_fns_t f;
    if (conn == NULL || !tracing(&f)) {
        return real(conn, query);
    }
    int64_t start = sw__span_clock_ms();
    in_call = true;
    int rc = real(conn, query);
    in_call = false;
    return send_traced(conn, rc, "PostgreSQL/libpq/PQsendQuery",
                       query != NULL ? strdup(query) : NULL, NULL, start);
}

int PQsendQueryParams(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
                      const char *const *paramValues, const int *paramLengths,
                      const int *paramFormats, int resultFormat)
{
    int (*real)(PGconn *, const char *, int, const Oid *, const char *const *, const int *,
                const int *, int);
    SW__PRELOAD_REAL(real, "PQsendQueryParams");
    if (real == NULL) {
        return 0;
    }
    pq_fns_t f;
    if (conn == NULL || !tracing(&f)) {
        return real(conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats,
                    resultFormat);
    }
    int64_t start = sw__span_clock_ms();
    in_call = true;
    int rc = real(conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats,
                  resultFormat);
    in_call = false;
    return send_traced(conn, rc, "PostgreSQL/libpq/PQsendQueryParams",
                       command != NULL ? strdup(command) : NULL,
                       params_copy(nParams, paramValues, paramFormats), start);
}

int PQsendPrepare(PGconn *conn, const char *stmtName, const char *query, int nParams,
                  const Oid *paramTypes)
{
    int (*real)(PGconn *, const char *, const char *, int, const Oid *);
    SW__PRELOAD_REAL(real, "PQsendPrepare");
    if (real == NULL) {
        return 0;
    }
    pq_fns_t f;
    if (conn == NULL || !tracing(&f)) {
        return real(conn, stmtName, query, nParams, paramTypes);
    }
    int64_t start = sw__span_clock_ms();
    in_call = true;
    int rc = real(conn, stmtName, query, nParams, paramTypes);
    in_call = false;
    if (rc == 1) {
        prepared_remember(conn, stmtName, query);
    }
    return send_traced(conn, rc, "PostgreSQL/libpq/PQsendPrepare",
                       query != NULL ? strdup(query) : NULL, NULL, start);
}

int PQsendQueryPrepared(PGconn *conn, const char *stmtName, int nParams,
                        const char *const *paramValues, const int *paramLengths,
                        const int *paramFormats, int resultFormat)
{
    int (*real)(PGconn *, const char *, int, const char *const *, const int *, const int *, int);
    SW__PRELOAD_REAL(real, "PQsendQueryPrepared");
    if (real == NULL) {
        return 0;
    }
    pq_fns_t f;
    if (conn == NULL || !tracing(&f)) {
        return real(conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat);
    }
    int64_t start = sw__span_clock_ms();
    in_call = true;
    int rc = real(conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat);
    in_call = false;
    return send_traced(conn, rc, "PostgreSQL/libpq/PQsendQueryPrepared",
                       prepared_statement(conn, stmtName),
                       params_copy(nParams, paramValues, paramFormats), start);
}

/* A result of an asynchronous query was read: remembers a failure; the last one (NULL) makes
   the span. */
static void pending_result(const pq_fns_t *f, const PGconn *conn, const PGresult *r)
{
    pending_t done = {0};
    sw__plugin_lock(SW__PLUGIN_LOCK_PQ);
    conn_info_t *i = info_find(conn, false);
    if (i != NULL && i->pending.active) {
        if (r == NULL) {
            done = i->pending;
            memset(&i->pending, 0, sizeof i->pending);
        } else if (result_failed(f, r) && !i->pending.failed) {
            const char *msg = f->result_error(r);
            i->pending.failed = true;
            i->pending.error = msg != NULL ? strdup(msg) : NULL;
        }
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_PQ);
    if (!done.active) {
        return;
    }
    span_begin(f, conn, done.op, done.sql, done.start_ms);
    if (done.params != NULL) {
        sw__span_tag_static("db.sql.parameters", done.params);
    }
    if (done.failed) {
        sw__db_span_error("PostgreSQL", done.error != NULL ? done.error : "",
                          done.error != NULL ? strlen(done.error) : 0);
    }
    sw_span_end();
    pending_clear(&done);
}

SW__HOT PGresult *PQgetResult(PGconn *conn)
{
    PGresult *(*real)(PGconn *);
    SW__PRELOAD_REAL(real, "PQgetResult");
    if (real == NULL) {
        return NULL;
    }
    PGresult *r = real(conn);
    pq_fns_t f;
    if (conn != NULL && tracing(&f)) {
        pending_result(&f, conn, r);
    }
    return r;
}

void PQfinish(PGconn *conn)
{
    void (*real)(PGconn *);
    SW__PRELOAD_REAL(real, "PQfinish");
    sw__plugin_lock(SW__PLUGIN_LOCK_PQ);
    conn_info_t *found = (conn_info_t *)sw__handle_map_take(&conns, conn);
    sw__plugin_unlock(SW__PLUGIN_LOCK_PQ);
    if (found != NULL) {
        pending_clear(&found->pending);
        for (prepared_t *p = found->prepared, *next; p != NULL; p = next) {
            next = p->next;
            free(p->name);
            free(p->sql);
            free(p);
        }
        free(found);
    }
    if (real != NULL) {
        real(conn);
    }
}
