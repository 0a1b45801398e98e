/*
 * log.c - the agent's one logging path: level filter, bounded formatting, rate limit per call
 * site, and the handler (stderr by default or the host's). See log.h.
 */
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "swc_clock.h"

/* Call sites remembered by the rate limit; the agent has fewer distinct formats than this.
   Sites beyond it share the last slot (limited together). */
#define SITES 96

typedef struct site {
    const char *fmt; /* the call site's format literal; NULL: free slot */
    uint64_t window_start_ms;
    uint32_t lines;      /* lines passed in the current window */
    uint64_t suppressed; /* repeats dropped in the current window */
} site_t;

/*
 * Logging is process-wide by nature (a host routes all of the agent's messages into its own
 * log), so its state is global. `lock` protects handler, handler_opaque, sites and window_ms
 * and serialises handler calls; max_level is an atomic read without it (relaxed: a level
 * change needs no ordering with anything else).
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sw_log_handler_t handler;
static void *handler_opaque;
static site_t sites[SITES];
static unsigned window_ms = SW__LOG_WINDOW_MS;
static _Atomic int max_level = SW_LOG_INFO;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

const char *sw_log_level_name(sw_log_level_t level)
{
    return (unsigned)level < sizeof level_names / sizeof level_names[0] ? level_names[level]
                                                                        : "unknown";
}

/* A child forked while another thread held the lock would never get it: start afresh. */
static void after_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
}

static void fork_hook_register(void)
{
    (void)pthread_atfork(NULL, NULL, after_fork_child);
}

/* The slot of `fmt` (found, or a free one, or the shared last slot). Called with lock held. */
static site_t *site_find(const char *fmt)
{
    size_t start = ((uintptr_t)fmt >> 4) % (SITES - 1);
    for (size_t k = 0; k < SITES - 1; k++) {
        site_t *s = &sites[(start + k) % (SITES - 1)];
        if (s->fmt == fmt || s->fmt == NULL) {
            s->fmt = fmt;
            return s;
        }
    }
    return &sites[SITES - 1];
}

/* Whether a line from `fmt` passes now; *suppressed gets the repeats dropped in the window
   that just ended (to be reported with this line). Called with lock held. */
static bool rate_allow(const char *fmt, uint64_t now, uint64_t *suppressed)
{
    site_t *s = site_find(fmt);
    *suppressed = 0;
    if (s->lines == 0 || now - s->window_start_ms >= window_ms) {
        *suppressed = s->suppressed;
        s->window_start_ms = now;
        s->lines = 1;
        s->suppressed = 0;
        return true;
    }
    if (s->lines < SW__LOG_BURST) {
        s->lines++;
        return true;
    }
    s->suppressed++;
    return false;
}

/* Writes all of p to stderr's descriptor (EINTR retried; other errors give up silently: there
   is nowhere left to report them). */
static void stderr_write(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void stderr_handler(sw_log_level_t level, const char *message)
{
    char line[SW__LOG_LINE_MAX + 128];
    int n = snprintf(line, sizeof line, "skywalking-c %s: %s\n", sw_log_level_name(level), message);
    if (n < 0) {
        return;
    }
    if ((size_t)n >= sizeof line) {
        n = (int)sizeof line - 1;
        line[n - 1] = '\n';
    }
    stderr_write(line, (size_t)n);
}

/* Replaces control bytes (a newline would split the line) in our own formatted text. */
static void one_line(char *s)
{
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f) {
            *s = '?';
        }
    }
}

void sw__log(sw_log_level_t level, const char *fmt, ...)
{
    if ((int)level > atomic_load_explicit(&max_level, memory_order_relaxed)) {
        return;
    }
    char msg[SW__LOG_LINE_MAX + 1];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    if ((size_t)n > SW__LOG_LINE_MAX) {
        memcpy(msg + SW__LOG_LINE_MAX - 3, "...", 4);
    }
    one_line(msg);
    pthread_once(&fork_once, fork_hook_register);
    pthread_mutex_lock(&lock);
    uint64_t suppressed;
    if (rate_allow(fmt, (uint64_t)swc__monotonic_ms(), &suppressed)) {
        char full[SW__LOG_LINE_MAX + 64];
        const char *text = msg;
        if (suppressed != 0) {
            snprintf(full, sizeof full, "%s (%llu similar messages suppressed)", msg,
                     (unsigned long long)suppressed);
            text = full;
        }
        if (handler != NULL) {
            handler(level, text, handler_opaque);
        } else {
            stderr_handler(level, text);
        }
    }
    pthread_mutex_unlock(&lock);
}

void sw_set_log_handler(sw_log_handler_t fn, void *opaque)
{
    pthread_once(&fork_once, fork_hook_register);
    pthread_mutex_lock(&lock);
    handler = fn;
    handler_opaque = fn != NULL ? opaque : NULL;
    pthread_mutex_unlock(&lock);
}

void sw_set_log_level(sw_log_level_t level)
{
    int l = (int)level < SW_LOG_ERROR   ? SW_LOG_ERROR
            : (int)level > SW_LOG_DEBUG ? SW_LOG_DEBUG
                                        : (int)level;
    atomic_store_explicit(&max_level, l, memory_order_relaxed);
}

void sw__log_reset(unsigned window)
{
    pthread_mutex_lock(&lock);
    memset(sites, 0, sizeof sites);
    window_ms = window != 0 ? window : SW__LOG_WINDOW_MS;
    pthread_mutex_unlock(&lock);
}

/* Bytes of the escaped form of c. */
static size_t escaped_len(unsigned char c)
{
    if (c == '\\' || c == '\n' || c == '\r' || c == '\t') {
        return 2;
    }
    return c >= 0x20 && c < 0x7f ? 1 : 4;
}

/* Appends the escaped form of byte c to buf at *at if it fits before `limit`. */
static bool escape_one(char *buf, size_t *at, size_t limit, unsigned char c)
{
    char tmp[5];
    size_t n;
    if (c == '\\') {
        memcpy(tmp, "\\\\", 2);
        n = 2;
    } else if (c >= 0x20 && c < 0x7f) {
        tmp[0] = (char)c;
        n = 1;
    } else if (c == '\n' || c == '\r' || c == '\t') {
        tmp[0] = '\\';
        tmp[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        n = 2;
    } else {
        static const char hex[] = "0123456789abcdef";
        tmp[0] = '\\';
        tmp[1] = 'x';
        tmp[2] = hex[c >> 4];
        tmp[3] = hex[c & 15];
        n = 4;
    }
    if (*at + n > limit) {
        return false;
    }
    memcpy(buf + *at, tmp, n);
    *at += n;
    return true;
}

const char *sw__log_escape(char *buf, size_t size, const char *text, size_t len)
{
    if (size < 8) {
        if (size > 0) {
            buf[0] = '\0';
        }
        return buf;
    }
    if (text == NULL) {
        snprintf(buf, size, "(null)");
        return buf;
    }
    size_t need = 0;
    for (size_t i = 0; i < len && need < size; i++) {
        need += escaped_len((unsigned char)text[i]);
    }
    size_t at = 0, limit = need < size ? size - 1 : size - 4; /* room for "..." when cut */
    for (size_t i = 0; i < len; i++) {
        if (!escape_one(buf, &at, limit, (unsigned char)text[i])) {
            break;
        }
    }
    if (need >= size) {
        memcpy(buf + at, "...", 3);
        at += 3;
    }
    buf[at] = '\0';
    return buf;
}
