/*
 * preload_db.c - span conventions and settings of the database and cache plugins (see
 * preload_db.h).
 */
#include "preload_db.h"

#include <stdlib.h>
#include <string.h>

#include "../src/core/span_instrument.h"
#include "../src/log/log.h"
#include "preload.h"
#include "skywalking.h"
#include "../src/util/locality.h"

sw__db_settings_t sw__db_settings = {SW__PLUGIN_SQL_BODY_DEFAULT, false, true};

/* A span's strings live in its segment's arena (SW_AGENT_SEGMENT_ARENA_BYTES, 16384 by default),
   and the texts are assembled in stack buffers of SW__PLUGIN_SQL_BODY_MAX bytes (config.h), the
   bound config.c checks SW_PLUGIN_SQL_BODY_MAX_LENGTH against. */
#define SQL_BODY_MAX_LIMIT SW__PLUGIN_SQL_BODY_MAX

void sw__db_settings_apply(const sw_config_t *cfg)
{
    sw__db_settings.sql_body_max = cfg->plugin_sql_body_max_length;
    sw__db_settings.sql_parameters = cfg->plugin_sql_parameters;
    sw__db_settings.redis_trace_key = cfg->plugin_redis_trace_key;
}

/* len cut to at most max bytes, not inside a UTF-8 sequence. */
SW__HOT static size_t utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max) {
        return len;
    }
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) {
        n--;
    }
    return n;
}

/* Tags key (a literal: not copied) with the first len bytes of value, up to a NUL in them. */
#define tag_n(key, value, len) sw__span_tag_static_n(key, (value), strnlen((value), (len)))

SW__HOT void sw__db_span_tags(int32_t component, const char *instance, const char *sql,
                              size_t sql_len)
{
    sw__span_set_layer_component(SW_LAYER_DATABASE, component);
    sw__span_tag_kept("db.type", "sql");
    if (instance != NULL && instance[0] != '\0') {
        sw__span_tag_static("db.instance", instance);
    }
    if (sql != NULL) {
        tag_n("db.statement", sql, utf8_cut(sql, sql_len, sw__db_settings.sql_body_max));
    }
}

const char *sw__db_params_format(char *buf, size_t size, int n, sw__db_param_fn value,
                                 const void *ctx)
{
    size_t max = sw__db_settings.sql_body_max < size - 1 ? sw__db_settings.sql_body_max : size - 1;
    size_t used = 0;
    if (used < max) {
        buf[used++] = '[';
    }
    for (int i = 0; i < n && used < max; i++) {
        size_t len;
        const char *v = value(ctx, i, &len);
        if (v == NULL) {
            v = "null";
            len = 4;
        }
        if (i != 0) {
            buf[used++] = ',';
        }
        size_t k = utf8_cut(v, len, max > used ? max - used : 0);
        memcpy(buf + used, v, k);
        used += k;
    }
    if (used < max) {
        buf[used++] = ']';
    }
    buf[used] = '\0';
    return buf;
}

void sw__db_params_tag(int n, sw__db_param_fn value, const void *ctx)
{
    if (!sw__db_settings.sql_parameters || n <= 0) {
        return;
    }
    char buf[SQL_BODY_MAX_LIMIT + 1];
    sw__span_tag_static("db.sql.parameters", sw__db_params_format(buf, sizeof buf, n, value, ctx));
}

void sw__db_span_error(const char *kind, const char *message, size_t len)
{
    while (len > 0 && (message[len - 1] == '\n' || message[len - 1] == ' ')) {
        len--; /* libpq and hiredis end messages with a newline */
    }
    char esc[SW__LOG_ESCAPED_SIZE];
    sw__log_escape(esc, sizeof esc, message, len);
    sw_span_set_error(true);
    sw_kv_t kv[3] = {{"event", "error"}, {"error.kind", kind}, {"message", esc}};
    sw_span_log(kv, 3);
}

/* Redis commands that only read (sorted, for bsearch), and those that write. A command in
   neither table gets no cache.op tag. */
static const char *const read_cmds[] = {
    "bitcount", "exists",        "get",    "getbit",    "getrange", "hexists",     "hget",
    "hgetall",  "hkeys",         "hlen",   "hmget",     "hscan",    "hstrlen",     "hvals",
    "keys",     "lindex",        "llen",   "lrange",    "mget",     "pttl",        "scan",
    "scard",    "sdiff",         "sinter", "sismember", "smembers", "srandmember", "sscan",
    "strlen",   "sunion",        "ttl",    "type",      "zcard",    "zcount",      "zlexcount",
    "zrange",   "zrangebyscore", "zrank",  "zrevrange", "zrevrank", "zscan",       "zscore",
};
static const char *const write_cmds[] = {
    "append", "decr",        "decrby",  "del",     "expire",  "expireat", "getdel",
    "getset", "hdel",        "hincrby", "hmset",   "hset",    "hsetnx",   "incr",
    "incrby", "incrbyfloat", "linsert", "lpop",    "lpush",   "lrem",     "lset",
    "ltrim",  "mset",        "msetnx",  "persist", "pexpire", "psetex",   "rename",
    "rpop",   "rpush",       "sadd",    "set",     "setex",   "setnx",    "setrange",
    "spop",   "srem",        "unlink",  "zadd",    "zincrby", "zrem",
};

SW__HOT static int cmd_compare(const void *key, const void *elem)
{
    return strcmp(key, *(const char *const *)elem);
}

/* The table's own copy of lower (a literal: a tag value that needs no copy), or NULL. */
SW__HOT static const char *cmd_in(const char *lower, const char *const *table, size_t n)
{
    const char *const *found = bsearch(lower, table, n, sizeof *table, cmd_compare);
    return found != NULL ? *found : NULL;
}

/* The lower-case form of cmd in buf (size >= 2), cut. */
SW__HOT static void cmd_lower(char *buf, size_t size, const char *cmd, size_t len)
{
    size_t n = len < size - 1 ? len : size - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)cmd[i];
        buf[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
    }
    buf[n] = '\0';
}

SW__HOT void sw__cache_operation(char *buf, size_t size, const char *prefix, const char *cmd,
                                 size_t cmd_len)
{
    size_t p = strlen(prefix);
    if (p + 2 > size) {
        p = size - 2;
    }
    memcpy(buf, prefix, p);
    cmd_lower(buf + p, size - p, cmd, cmd_len);
}

/* Commands whose arguments (or the server's error reply, which may repeat them) can carry a
   password: AUTH, HELLO ... AUTH, MIGRATE ... AUTH/AUTH2, ACL SETUSER, CONFIG SET requirepass /
   masterauth, SENTINEL SET ... auth-pass. Sorted, for bsearch. */
static const char *const secret_cmds[] = {"acl", "auth", "config", "hello", "migrate", "sentinel"};

#define TABLE_N(t) (sizeof(t) / sizeof *(t))

SW__HOT bool sw__cache_command_keyed(const char *cmd, size_t cmd_len)
{
    char lower[32];
    cmd_lower(lower, sizeof lower, cmd, cmd_len);
    return cmd_in(lower, read_cmds, TABLE_N(read_cmds)) != NULL ||
           cmd_in(lower, write_cmds, TABLE_N(write_cmds)) != NULL;
}

bool sw__cache_command_secret(const char *cmd, size_t cmd_len)
{
    char lower[32];
    cmd_lower(lower, sizeof lower, cmd, cmd_len);
    return cmd_in(lower, secret_cmds, TABLE_N(secret_cmds)) != NULL;
}

SW__HOT void sw__cache_span_tags(const char *cmd, size_t cmd_len, const char *key, size_t key_len)
{
    char lower[32];
    cmd_lower(lower, sizeof lower, cmd, cmd_len);
    sw__span_set_layer_component(SW_LAYER_CACHE, SW__COMPONENT_REDIS);
    sw__span_tag_kept("cache.type", "Redis");
    const char *read = cmd_in(lower, read_cmds, TABLE_N(read_cmds));
    const char *write = read == NULL ? cmd_in(lower, write_cmds, TABLE_N(write_cmds)) : NULL;
    const char *known = read != NULL ? read : write;
    if (known != NULL) {
        sw__span_tag_kept_("cache.cmd", 9, known, SIZE_MAX); /* the table's literal */
    } else {
        sw__span_tag_static("cache.cmd", lower);
    }
    if (read != NULL) {
        sw__span_tag_kept("cache.op", "read");
    } else if (write != NULL) {
        sw__span_tag_kept("cache.op", "write");
    }
    /* Argument 1 is a key only for the commands of the tables: never record another command's
       argument (AUTH's is the password). */
    if (known != NULL && key != NULL && sw__db_settings.redis_trace_key) {
        tag_n("cache.key", key, utf8_cut(key, key_len, sw__db_settings.sql_body_max));
    }
}
