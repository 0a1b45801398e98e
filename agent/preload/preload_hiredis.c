/*
 * preload_hiredis.c - hiredis (the Redis C client): every command becomes an exit span with the
 * cache conventions of preload_db.h (layer Cache, component Redis, cache.type, cache.cmd,
 * cache.op, cache.key), operation "Redis/<command>", peer the server's address as the
 * connection's socket sees it (getpeername: ip:port, or the unix socket's path).
 *
 * redisCommand, redisvCommand and redisCommandArgv are spans around the call. A pipeline
 * (redisAppendCommand, redisvAppendCommand, redisAppendCommandArgv,
 * redisAppendFormattedCommand ... redisGetReply) remembers each appended command with its start
 * time per context, in order; each redisGetReply that returns a reply makes the span of the
 * oldest one (span_async.h, "spans begun late"). redisFree forgets a context. hiredis calls
 * its own exported functions (redisCommand calls redisvCommand, which calls
 * redisvAppendCommand and redisGetReply): the thread's in_call flag makes those plain
 * forwards.
 *
 * An error reply (or a failed call: the context's errstr) sets the error flag and logs the
 * message. Only the reply's type is at the same place in every hiredis version; the message of
 * an error reply is read with the layout of the running version (0.x or 1.x, told apart by
 * redisSetPushCallback, which 1.0 added).
 */
#include <hiredis.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>

#include "../src/instrument/span_async.h"
#include "preload.h"
#include "preload_lock.h"
#include "preload_db.h"
#include "preload_handle_map.h"
#include "../src/util/locality.h"

#define PENDING_MAX 4096 /* appended commands remembered per context; later ones untraced */
#define CMD_MAX     32
#define KEY_MAX     256

typedef struct pending {
    struct pending *next;
    int64_t start_ms;
    char cmd[CMD_MAX];
    char key[KEY_MAX];
    size_t cmd_len, key_len;
    bool has_key;
} pending_t;

typedef struct ctx_info {
    sw__handle_node_t node; /* first: the map's link, keyed by the context */
    pending_t *head, *tail;
    unsigned count;
} ctx_info_t;

/* Pipelined commands per context; global because hiredis offers no slot for them.
   SW__PLUGIN_LOCK_HIREDIS (preload_lock.h) protects the buckets and every node. */
static sw__handle_map_t ctxs;

/* Set while this thread runs a traced call (the recursion guard, see above). */
static _Thread_local bool in_call;

/* The peer of the last context this thread traced (getpeername is a system call). */
static _Thread_local struct {
    const redisContext *ctx;
    int fd;
    char peer[128];
} tls_peer;

/* A command's name and first key, found in its RESP form. key is NULL unless argument 1 is a key
   (sw__cache_command_keyed): the argument 1 of AUTH and the like is never kept. */
typedef struct command_view {
    const char *cmd, *key;
    size_t cmd_len, key_len;
} command_view_t;

/* Drops v's argument 1 unless the command's argument 1 is a key. */
SW__HOT static void view_key_check(command_view_t *v)
{
    if (v->key != NULL && !sw__cache_command_keyed(v->cmd, v->cmd_len)) {
        v->key = NULL;
        v->key_len = 0;
    }
}

SW__HOT static bool tracing(void)
{
    return !in_call && !sw__preload_busy && sw__preload_agent_ready();
}

SW__HOT static const char *peer_of(const redisContext *c)
{
    if (tls_peer.ctx == c && tls_peer.fd == c->fd && tls_peer.peer[0] != '\0') {
        return tls_peer.peer;
    }
    tls_peer.ctx = c;
    tls_peer.fd = c->fd;
    tls_peer.peer[0] = '\0';
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (c->fd < 0 || getpeername(c->fd, (struct sockaddr *)&ss, &len) != 0) {
        return NULL;
    }
    char host[INET6_ADDRSTRLEN];
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)&ss;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        snprintf(tls_peer.peer, sizeof tls_peer.peer, "%s:%u", host, ntohs(in->sin_port));
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)&ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        snprintf(tls_peer.peer, sizeof tls_peer.peer, "[%s]:%u", host, ntohs(in6->sin6_port));
    } else if (ss.ss_family == AF_UNIX) {
        const struct sockaddr_un *un = (const struct sockaddr_un *)(const void *)&ss;
        snprintf(tls_peer.peer, sizeof tls_peer.peer, "%.*s",
                 (int)strnlen(un->sun_path, sizeof un->sun_path), un->sun_path);
    }
    return tls_peer.peer[0] != '\0' ? tls_peer.peer : NULL;
}

/* One bulk string "$<len>\r\n<bytes>\r\n" at *p (of end), or false. Every byte read and every
   pointer formed stays within [*p, end]. */
SW__HOT static bool resp_bulk(const char **p, const char *end, const char **s, size_t *len)
{
    const char *q = *p;
    if (q >= end || *q != '$') {
        return false;
    }
    size_t n = 0;
    for (q++; q < end && *q >= '0' && *q <= '9'; q++) {
        if (n > (SIZE_MAX - 9) / 10) {
            return false;
        }
        n = n * 10 + (size_t)(*q - '0');
    }
    if (end - q < 2 || q[0] != '\r' || (size_t)(end - q - 2) < n || (size_t)(end - q - 2) - n < 2) {
        return false;
    }
    *s = q + 2;
    *len = n;
    *p = q + 2 + n + 2;
    return true;
}

/* Finds the command name and first key in a formatted command (RESP array of bulk strings) of
   len bytes at cmd; reads none of them when len is 0. */
SW__HOT static bool resp_view(const char *cmd, size_t len, command_view_t *v)
{
    if (len == 0 || cmd[0] != '*') {
        return false;
    }
    const char *end = cmd + len;
    const char *p = memchr(cmd, '\n', len);
    if (p == NULL) {
        return false;
    }
    p++;
    if (!resp_bulk(&p, end, &v->cmd, &v->cmd_len)) {
        return false;
    }
    if (!resp_bulk(&p, end, &v->key, &v->key_len)) {
        v->key = NULL;
        v->key_len = 0;
    }
    view_key_check(v);
    return true;
}

SW__HOT static bool argv_view(int argc, const char **argv, const size_t *argvlen, command_view_t *v)
{
    if (argc < 1 || argv == NULL || argv[0] == NULL) {
        return false;
    }
    v->cmd = argv[0];
    v->cmd_len = argvlen != NULL ? argvlen[0] : strlen(argv[0]);
    v->key = NULL;
    v->key_len = 0;
    if (argc > 1 && argv[1] != NULL && sw__cache_command_keyed(v->cmd, v->cmd_len)) {
        v->key = argv[1];
        v->key_len = argvlen != NULL ? argvlen[1] : strlen(argv[1]);
    }
    return true;
}

/* The length of the word of fmt at p (up to a space or the end). */
SW__HOT static size_t word_len(const char *p)
{
    return strcspn(p, " ");
}

/* The view of the common formats without a formatting pass: a literal command word, then
   nothing, a literal key, "%s" or "%b". False for any other format (a '%' in the command
   word, another conversion in the key word). A command whose argument 1 is no key
   ("AUTH %s") is viewed from its word alone: its arguments are never read. */
SW__HOT static bool format_view_fast(const char *fmt, va_list ap, command_view_t *v)
{
    size_t n = word_len(fmt);
    if (n == 0 || memchr(fmt, '%', n) != NULL) {
        return false;
    }
    v->cmd = fmt;
    v->cmd_len = n;
    v->key = NULL;
    v->key_len = 0;
    if (!sw__cache_command_keyed(fmt, n)) {
        return true;
    }
    const char *k = fmt + n;
    while (*k == ' ') {
        k++;
    }
    size_t kn = word_len(k);
    if (kn == 0) {
        return true;
    }
    if (memchr(k, '%', kn) == NULL) {
        v->key = k;
        v->key_len = kn;
        return true;
    }
    if (kn != 2 || (k[1] != 's' && k[1] != 'b')) {
        return false;
    }
    va_list copy;
    va_copy(copy, ap);
    v->key = va_arg(copy, const char *);
    v->key_len = k[1] == 'b' ? va_arg(copy, size_t) : (v->key != NULL ? strlen(v->key) : 0);
    va_end(copy);
    return v->key != NULL;
}

/* The view of a printf-style command: format_view_fast, or else formatted with the real
   redisvFormatCommand on a copy of ap (*formatted is then to be freed with redisFreeCommand).
 */
SW__HOT static bool format_view(const char *fmt, va_list ap, char **formatted, command_view_t *v)
{
    int (*format)(char **, const char *, va_list);
    SW__PRELOAD_REAL(format, "redisvFormatCommand");
    *formatted = NULL;
    if (fmt == NULL) {
        return false;
    }
    if (format_view_fast(fmt, ap, v)) {
        return true;
    }
    if (format == NULL) {
        return false;
    }
    va_list copy;
    va_copy(copy, ap);
    int n = format(formatted, fmt, copy);
    va_end(copy);
    return n > 0 && resp_view(*formatted, (size_t)n, v);
}

SW__HOT static void formatted_free(char *formatted)
{
    void (*release)(char *);
    SW__PRELOAD_REAL(release, "redisFreeCommand");
    if (formatted != NULL && release != NULL) {
        release(formatted);
    }
}

SW__HOT static void span_begin(const redisContext *c, const command_view_t *v, int64_t since_ms)
{
    char op[CMD_MAX + 8];
    sw__cache_operation(op, sizeof op, "Redis/", v->cmd, v->cmd_len);
    sw__span_mark_t mark;
    sw__span_begin_exit_since(op, peer_of(c), since_ms, &mark);
    sw__preload_pending_apply(&mark, true);
    sw__cache_span_tags(v->cmd, v->cmd_len, v->key, v->key_len);
}

/* The message of an error reply, by the running hiredis' reply layout. */
typedef struct reply_v1 {
    int type;
    long long integer;
    double dval;
    size_t len;
    char *str;
} reply_v1_t;

static void reply_error_message(const void *reply, const char **msg, size_t *len)
{
    static _Atomic(void *) push_slot;
    if (sw__preload_real(&push_slot, "redisSetPushCallback", NULL) != NULL) {
        const reply_v1_t *r = reply;
        *msg = r->str;
        *len = r->len;
    } else {
        const redisReply *r = reply;
        *msg = r->str;
        *len = r->len;
    }
}

/* Stands for the server's error reply to a command that may carry a secret (the reply may
   repeat its arguments: "Error in ACL SETUSER modifier '...'"). */
static const char secret_reply[] = "(not shown: the reply to a command with a password)";

/* Ends the active span with the outcome of a call of command `cmd` that returned `reply` on c.
   The error reply to a command that may carry a password (sw__cache_command_secret) is not
   recorded. */
SW__HOT static void span_end(const redisContext *c, const char *cmd, size_t cmd_len,
                             const void *reply, bool call_failed)
{
    if (reply == NULL && call_failed) {
        sw__db_span_error("Redis", c->errstr, strnlen(c->errstr, sizeof c->errstr));
    } else if (reply != NULL && ((const redisReply *)reply)->type == REDIS_REPLY_ERROR) {
        const char *msg;
        size_t len;
        reply_error_message(reply, &msg, &len);
        if (sw__cache_command_secret(cmd, cmd_len)) {
            msg = secret_reply;
            len = sizeof secret_reply - 1;
        }
        sw__db_span_error("Redis", msg != NULL ? msg : "", msg != NULL ? len : 0);
    }
    sw_span_end();
}

/* ------------------------------------------------------------------------------------------ */
/* Blocking commands                                                                           */
/* ------------------------------------------------------------------------------------------ */

SW__HOT static void *command_traced(redisContext *c, const char *format, va_list ap)
{
    void *(*real)(redisContext *, const char *, va_list);
    SW__PRELOAD_REAL(real, "redisvCommand");
    if (real == NULL) {
        return NULL;
    }
    char *formatted = NULL;
    command_view_t v;
    if (c == NULL || !tracing() || !format_view(format, ap, &formatted, &v)) {
        formatted_free(formatted);
        return real(c, format, ap);
    }
    span_begin(c, &v, 0);
    char cmd[CMD_MAX];
    size_t cmd_len = v.cmd_len < CMD_MAX ? v.cmd_len : CMD_MAX;
    memcpy(cmd, v.cmd, cmd_len);
    formatted_free(formatted); /* v points into it */
    in_call = true;
    void *reply = real(c, format, ap);
    in_call = false;
    span_end(c, cmd, cmd_len, reply, reply == NULL && c->err != 0);
    return reply;
}

SW__HOT void *redisvCommand(redisContext *c, const char *format, va_list ap)
{
    return command_traced(c, format, ap);
}

SW__HOT void *redisCommand(redisContext *c, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    void *reply = command_traced(c, format, ap);
    va_end(ap);
    return reply;
}

SW__HOT void *redisCommandArgv(redisContext *c, int argc, const char **argv, const size_t *argvlen)
{
    void *(*real)(redisContext *, int, const char **, const size_t *);
    SW__PRELOAD_REAL(real, "redisCommandArgv");
    if (real == NULL) {
        return NULL;
    }
    command_view_t v;
    if (c == NULL || !tracing() || !argv_view(argc, argv, argvlen, &v)) {
        return real(c, argc, argv, argvlen);
    }
    span_begin(c, &v, 0);
    in_call = true;
    void *reply = real(c, argc, argv, argvlen);
    in_call = false;
    span_end(c, v.cmd, v.cmd_len, reply, reply == NULL && c->err != 0);
    return reply;
}

/* ------------------------------------------------------------------------------------------ */
/* Pipelines                                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* Remembers an appended command (called after a successful append). */
SW__HOT static void pending_push(const redisContext *c, const command_view_t *v, int64_t start_ms)
{
    pending_t *p = malloc(sizeof *p);
    if (p == NULL) {
        return;
    }
    p->next = NULL;
    p->start_ms = start_ms;
    p->cmd_len = v->cmd_len < CMD_MAX ? v->cmd_len : CMD_MAX;
    memcpy(p->cmd, v->cmd, p->cmd_len);
    p->has_key = v->key != NULL;
    p->key_len = p->has_key ? (v->key_len < KEY_MAX ? v->key_len : KEY_MAX) : 0;
    if (p->has_key) {
        memcpy(p->key, v->key, p->key_len);
    }
    sw__plugin_lock(SW__PLUGIN_LOCK_HIREDIS);
    ctx_info_t *i = (ctx_info_t *)sw__handle_map_get(&ctxs, c, sizeof(ctx_info_t));
    if (i != NULL && i->count < PENDING_MAX) {
        if (i->tail != NULL) {
            i->tail->next = p;
        } else {
            i->head = p;
        }
        i->tail = p;
        i->count++;
        p = NULL;
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_HIREDIS);
    free(p);
}

/* The oldest appended command of c, to free, or NULL. */
SW__HOT static pending_t *pending_pop(const redisContext *c)
{
    pending_t *p = NULL;
    sw__plugin_lock(SW__PLUGIN_LOCK_HIREDIS);
    ctx_info_t *i = (ctx_info_t *)sw__handle_map_find(&ctxs, c);
    if (i != NULL && i->head != NULL) {
        p = i->head;
        i->head = p->next;
        if (i->head == NULL) {
            i->tail = NULL;
        }
        i->count--;
    }
    sw__plugin_unlock(SW__PLUGIN_LOCK_HIREDIS);
    return p;
}

SW__HOT int redisvAppendCommand(redisContext *c, const char *format, va_list ap)
{
    int (*real)(redisContext *, const char *, va_list);
    SW__PRELOAD_REAL(real, "redisvAppendCommand");
    if (real == NULL) {
        return REDIS_ERR;
    }
    char *formatted = NULL;
    command_view_t v;
    if (c == NULL || !tracing() || !format_view(format, ap, &formatted, &v)) {
        formatted_free(formatted);
        return real(c, format, ap);
    }
    int64_t start = sw__span_clock_ms();
    in_call = true;
    int rc = real(c, format, ap);
    in_call = false;
    if (rc == REDIS_OK) {
        pending_push(c, &v, start);
    }
    formatted_free(formatted);
    return rc;
}

SW__HOT int redisAppendCommand(redisContext *c, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    int rc = redisvAppendCommand(c, format, ap);
    va_end(ap);
    return rc;
}

SW__HOT int redisAppendCommandArgv(redisContext *c, int argc, const char **argv,
                                   const size_t *argvlen)
{
    int (*real)(redisContext *, int, const char **, const size_t *);
    SW__PRELOAD_REAL(real, "redisAppendCommandArgv");
    if (real == NULL) {
        return REDIS_ERR;
    }
    command_view_t v;
    if (c == NULL || !tracing() || !argv_view(argc, argv, argvlen, &v)) {
        return real(c, argc, argv, argvlen);
    }
    int64_t start = sw__span_clock_ms();
    in_call = true;
    int rc = real(c, argc, argv, argvlen);
    in_call = false;
    if (rc == REDIS_OK) {
        pending_push(c, &v, start);
    }
    return rc;
}

SW__HOT int redisAppendFormattedCommand(redisContext *c, const char *cmd, size_t len)
{
    int (*real)(redisContext *, const char *, size_t);
    SW__PRELOAD_REAL(real, "redisAppendFormattedCommand");
    if (real == NULL) {
        return REDIS_ERR;
    }
    command_view_t v;
    if (c == NULL || cmd == NULL || !tracing() || !resp_view(cmd, len, &v)) {
        return real(c, cmd, len);
    }
    int64_t start = sw__span_clock_ms();
    in_call = true;
    int rc = real(c, cmd, len);
    in_call = false;
    if (rc == REDIS_OK) {
        pending_push(c, &v, start);
    }
    return rc;
}

SW__HOT int redisGetReply(redisContext *c, void **reply)
{
    int (*real)(redisContext *, void **);
    SW__PRELOAD_REAL(real, "redisGetReply");
    if (real == NULL) {
        return REDIS_ERR;
    }
    if (c == NULL || !tracing()) {
        return real(c, reply);
    }
    in_call = true;
    int rc = real(c, reply);
    in_call = false;
    void *r = reply != NULL ? *reply : NULL;
    if (rc == REDIS_OK && r == NULL) {
        return rc; /* a non-blocking context without a complete reply yet */
    }
    pending_t *p = pending_pop(c);
    if (p == NULL) {
        return rc;
    }
    command_view_t v = {p->cmd, p->has_key ? p->key : NULL, p->cmd_len, p->key_len};
    span_begin(c, &v, p->start_ms);
    span_end(c, v.cmd, v.cmd_len, rc == REDIS_OK ? r : NULL, rc != REDIS_OK);
    free(p);
    return rc;
}

void redisFree(redisContext *c)
{
    void (*real)(redisContext *);
    SW__PRELOAD_REAL(real, "redisFree");
    sw__plugin_lock(SW__PLUGIN_LOCK_HIREDIS);
    ctx_info_t *found = (ctx_info_t *)sw__handle_map_take(&ctxs, c);
    sw__plugin_unlock(SW__PLUGIN_LOCK_HIREDIS);
    if (found != NULL) {
        for (pending_t *p = found->head, *next; p != NULL; p = next) {
            next = p->next;
            free(p);
        }
        free(found);
    }
    if (tls_peer.ctx == c) {
        tls_peer.ctx = NULL;
    }
    if (real != NULL) {
        real(c);
    }
}
