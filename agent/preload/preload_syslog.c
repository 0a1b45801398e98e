/*
 * preload_syslog.c - syslog(3) lines of an unmodified program sent to the OAP as LogData, as
 * sw_log_kv does for a linked one (agent/src/core/app_log.c), when SW_PLUGIN_SYSLOG=true.
 *
 * Interposed: syslog, vsyslog, and glibc's _FORTIFY_SOURCE forms __syslog_chk and
 * __vsyslog_chk (what a program built with -D_FORTIFY_SOURCE -O2 calls instead). Each first
 * formats the message for the agent (%m included: errno is kept for it), then hands the
 * ORIGINAL format and arguments to the real vsyslog / __vsyslog_chk, so the line reaches
 * syslog exactly as without the agent, then queues the LogData (never blocking: a full queue
 * drops the line, counted in sw_stats.logs_dropped). A priority masked by setlogmask is not
 * sent either. Tags: level (LOG_EMERG..LOG_ERR ERROR, LOG_WARNING WARN, LOG_NOTICE and
 * LOG_INFO INFO, LOG_DEBUG DEBUG), logger "syslog", syslog.priority (the numeric priority).
 *
 * Off (the default), or while the agent itself runs inside an interposed call, or when the
 * agent could not start, the calls only forward.
 */
/* This file defines syslog and vsyslog themselves: glibc's fortified inline wrappers of them
   must not be in the way. */
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE 1 /* vasprintf */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>

#include "../src/log/log.h"
#include "preload.h"

typedef void (*vsyslog_fn)(int, const char *, va_list);
typedef void (*vsyslog_chk_fn)(int, int, const char *, va_list);

void __syslog_chk(int priority, int flag, const char *fmt, ...);
void __vsyslog_chk(int priority, int flag, const char *fmt, va_list ap);

static sw_log_severity_t severity_of(int priority)
{
    int p = LOG_PRI(priority);
    return p <= LOG_ERR       ? SW_SEVERITY_ERROR
           : p == LOG_WARNING ? SW_SEVERITY_WARN
           : p == LOG_DEBUG   ? SW_SEVERITY_DEBUG
                              : SW_SEVERITY_INFO;
}

/* Whether this call is to be sent: enabled, not the agent's own, not masked, agent up. */
static bool wanted(int priority)
{
    if (!sw__preload_config()->plugin_syslog || sw__preload_busy) { /* SW_PLUGIN_SYSLOG */
        return false;
    }
    int mask = setlogmask(0); /* 0: reads the mask without changing it */
    if ((LOG_MASK(LOG_PRI(priority)) & mask) == 0) {
        return false;
    }
    return sw__preload_agent_ready();
}

/* Formats the message (with errno restored for %m) into a heap buffer: NULL on failure. */
static char *message_format(int saved_errno, const char *fmt, va_list ap)
{
    char *text = NULL;
    errno = saved_errno;
    if (vasprintf(&text, fmt, ap) < 0) {
        return NULL;
    }
    return text;
}

static void message_send(int priority, char *text)
{
    if (text == NULL) {
        return;
    }
    char number[16];
    snprintf(number, sizeof number, "%d", priority);
    sw_kv_t tag = {"syslog.priority", number};
    sw__preload_busy = true; /* malloc hooks or the agent's own paths never re-enter here */
    (void)sw_log_kv(severity_of(priority), "syslog", text, &tag, 1);
    sw__preload_busy = false;
    free(text);
}

/* Every hook: formats a copy of the line when it is to be sent, forwards the original call
   (to __vsyslog_chk with `flag` when `fortified`, else to vsyslog), then queues the copy.
   errno is as the caller left it for %m and for the real call, and as the real call left it
   on return. */
static void hooked(int priority, bool fortified, int flag, const char *fmt, va_list ap)
{
    int saved_errno = errno;
    char *text = NULL;
    if (fmt != NULL && wanted(priority)) {
        va_list copy;
        va_copy(copy, ap);
        text = message_format(saved_errno, fmt, copy);
        va_end(copy);
    }
    errno = saved_errno;
    if (fortified) {
        vsyslog_chk_fn real;
        SW__PRELOAD_REAL(real, "__vsyslog_chk");
        if (real != NULL) {
            real(priority, flag, fmt, ap);
        }
    } else {
        vsyslog_fn real;
        SW__PRELOAD_REAL(real, "vsyslog");
        if (real != NULL) {
            real(priority, fmt, ap);
        }
    }
    int after = errno;
    message_send(priority, text);
    errno = after;
}

void vsyslog(int priority, const char *fmt, va_list ap)
{
    hooked(priority, false, 0, fmt, ap);
}

void syslog(int priority, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hooked(priority, false, 0, fmt, ap);
    va_end(ap);
}

void __vsyslog_chk(int priority, int flag, const char *fmt, va_list ap)
{
    hooked(priority, true, flag, fmt, ap);
}

void __syslog_chk(int priority, int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hooked(priority, true, flag, fmt, ap);
    va_end(ap);
}
