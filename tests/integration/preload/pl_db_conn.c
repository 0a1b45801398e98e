/*
 * pl_db_conn.c - see pl_db_conn.h.
 */
#include "pl_db_conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

bool pl_db_failed;

void pl_db_fail(const char *what, const char *detail)
{
    fprintf(stderr, "%s[%d]: %s: %s\n", program_invocation_short_name, (int)getpid(), what,
            detail != NULL ? detail : "");
    pl_db_failed = true;
}

const char *pl_db_env(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL) {
        pl_db_fail("missing environment", name);
    }
    return v != NULL ? v : "";
}

PGconn *pl_db_pq_connect(const char *host)
{
    char info[512];
    snprintf(info, sizeof info, "host=%s port=%s dbname=swtest user=postgres connect_timeout=20",
             host, pl_db_env("SW_TEST_PG_PORT"));
    PGconn *c = PQconnectdb(info);
    if (PQstatus(c) != CONNECTION_OK) {
        pl_db_fail("PQconnectdb", PQerrorMessage(c));
    }
    return c;
}

MYSQL *pl_db_my_connect(bool tcp)
{
    MYSQL *m = mysql_init(NULL);
    unsigned timeout = 20;
    mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    if (mysql_real_connect(m, tcp ? "127.0.0.1" : "localhost", "root", NULL, "swtest",
                           tcp ? (unsigned)atoi(pl_db_env("SW_TEST_MY_PORT")) : 0,
                           tcp ? NULL : pl_db_env("SW_TEST_MY_SOCKET"), 0) == NULL) {
        pl_db_fail("mysql_real_connect", mysql_error(m));
    }
    return m;
}

redisContext *pl_db_redis_connect(const char *port_var)
{
    struct timeval tv = {20, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", atoi(pl_db_env(port_var)), tv);
    if (c == NULL || c->err) {
        pl_db_fail("redisConnect", c != NULL ? c->errstr : "no memory");
    }
    return c;
}
