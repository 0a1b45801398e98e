/*
 * pl_db_conn.h - what the database preload test programs (pl_db, pl_fork) share: failure
 * reporting, the servers' environment (tests/support/db/servers.sh) and connections to them.
 * They know nothing of skywalking.
 */
#ifndef PL_DB_CONN_H
#define PL_DB_CONN_H

#include <hiredis.h>
#include <libpq-fe.h>
#include <mysql.h>
#include <stdbool.h>

/* Set by pl_db_fail: the program exits non-zero. */
extern bool pl_db_failed;

/* Prints "<program>[<pid>]: what: detail" on stderr and sets pl_db_failed. */
void pl_db_fail(const char *what, const char *detail);

/* The value of environment variable `name`; "" (and a failure) when it is not set. */
const char *pl_db_env(const char *name);

/* A libpq connection to database swtest on `host` (the socket directory or 127.0.0.1); a
   failure is reported, the connection returned anyway (PQfinish it). */
PGconn *pl_db_pq_connect(const char *host);

/* A libmariadb connection to database swtest over TCP or the unix socket; likewise. */
MYSQL *pl_db_my_connect(bool tcp);

/* A hiredis connection over TCP to the server at SW_TEST_REDIS_PORT_VAR's port; NULL or a
   context with err set after a reported failure. */
redisContext *pl_db_redis_connect(const char *port_var);

#endif /* PL_DB_CONN_H */
