/*
 * preload_db.h - span conventions shared by the database and cache plugins of the preload
 * library (preload_pq.c, preload_mariadb.c, preload_hiredis.c), and their settings (internal).
 *
 * The conventions are the SkyWalking Java agent's (its JDBC and Jedis plugins):
 * - database: an exit span, layer Database, the plugin's component id, tags db.type=sql,
 *   db.instance (the database name), db.statement (cut at SW_PLUGIN_SQL_BODY_MAX_LENGTH bytes)
 *   and, only with SW_PLUGIN_SQL_PARAMETERS=true, db.sql.parameters ("[v1,v2]", cut likewise);
 * - cache: an exit span, layer Cache, component Redis, tags cache.type=Redis, cache.cmd (the
 *   command, lower case), cache.op (read or write, for the commands the tables know) and
 *   cache.key (the first key, only for the commands of the tables; left out with
 *   SW_PLUGIN_REDIS_TRACE_KEY=false); the arguments of a command that may carry a password
 *   (AUTH, HELLO, MIGRATE, ACL, CONFIG, SENTINEL) and the error reply to it are never recorded;
 * - a server error: the error flag and a log {event=error, error.kind=<plugin's kind>,
 *   message=<the server's message, escaped and cut to SW__LOG_TEXT_MAX bytes>}.
 *
 * The settings are read from the environment once, by the preload's constructor; they are
 * read-only afterwards.
 */
#ifndef SW_PRELOAD_DB_H
#define SW_PRELOAD_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../src/config/config.h"
#include "skywalking.h"

typedef struct sw__db_settings {
    size_t sql_body_max;  /* SW_PLUGIN_SQL_BODY_MAX_LENGTH, bytes of db.statement (2048) */
    bool sql_parameters;  /* SW_PLUGIN_SQL_PARAMETERS: record bound values (false) */
    bool redis_trace_key; /* SW_PLUGIN_REDIS_TRACE_KEY: record cache.key (true) */
} sw__db_settings_t;

/* Written once by sw__db_settings_apply (when the preload reads its configuration, before any
   traced call); read-only afterwards. */
extern sw__db_settings_t sw__db_settings;

/* Takes the SW_PLUGIN_* settings of `cfg` (checked by the agent's configuration: file and
   environment, config.c). */
void sw__db_settings_apply(const sw_config_t *cfg);

/*
 * Sets the conventions on the active span (an exit span the plugin just began): layer Database,
 * `component`, db.type=sql, db.instance (when not NULL or empty), db.statement (the first
 * sql_len bytes of sql, cut at the limit on a whole UTF-8 character).
 */
void sw__db_span_tags(int32_t component, const char *instance, const char *sql, size_t sql_len);

/*
 * Collects bound parameter values into db.sql.parameters on the active span, only when
 * SW_PLUGIN_SQL_PARAMETERS=true. `value(i, &len)` returns the i-th value (NULL: SQL NULL).
 */
typedef const char *(*sw__db_param_fn)(const void *ctx, int i, size_t *len);
void sw__db_params_tag(int n, sw__db_param_fn value, const void *ctx);

/* The same "[v1,v2]" text (cut at SW_PLUGIN_SQL_BODY_MAX_LENGTH and size - 1) into buf; returns
   buf. For a plugin that records the values before the span exists. */
const char *sw__db_params_format(char *buf, size_t size, int n, sw__db_param_fn value,
                                 const void *ctx);

/* Marks the active span as failed and logs the server's `message` (len bytes, from outside:
   escaped and capped) with error.kind `kind`. */
void sw__db_span_error(const char *kind, const char *message, size_t len);

/* Whether argument 1 of the Redis command `cmd` is a key: true only for the commands of the
   read and write tables. A plugin keeps no copy of argument 1 of any other command. */
bool sw__cache_command_keyed(const char *cmd, size_t cmd_len);

/* Whether the Redis command `cmd` may carry a secret (AUTH, HELLO, MIGRATE, ACL, CONFIG,
   SENTINEL): its arguments are never recorded, and neither is the server's error reply to it,
   which may repeat them. */
bool sw__cache_command_secret(const char *cmd, size_t cmd_len);

/* Sets the cache conventions on the active span (component Redis). `cmd` and `key` are
   argument 0 and 1 of the command (key may be NULL); cache.key is recorded only for a command
   of the tables (sw__cache_command_keyed). */
void sw__cache_span_tags(const char *cmd, size_t cmd_len, const char *key, size_t key_len);

/* Writes the operation name "<prefix><CMD>" for a Redis command into buf (upper case, cut). */
void sw__cache_operation(char *buf, size_t size, const char *prefix, const char *cmd,
                         size_t cmd_len);

#endif /* SW_PRELOAD_DB_H */
