/*
 * pl_syslog.c - an ordinary program that logs through syslog(3) and knows nothing of
 * skywalking (test_preload_syslog.c preloads the agent into it). openlog's LOG_PERROR makes
 * glibc also write every line that syslog accepts to stderr, so the test sees exactly what
 * reached syslog. Built with _FORTIFY_SOURCE like the project (syslog becomes __syslog_chk).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

static void log_via_vsyslog(int priority, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsyslog(priority, fmt, ap);
    va_end(ap);
}

int main(void)
{
    openlog("pl_syslog", LOG_PERROR, LOG_USER);
    syslog(LOG_WARNING, "disk %s is %d%% full", "sda", 93);
    errno = ENOENT;
    syslog(LOG_ERR, "open config: %m");
    log_via_vsyslog(LOG_INFO, "request %d served in %.1f ms", 7, 2.5);
    setlogmask(LOG_UPTO(LOG_INFO));
    syslog(LOG_DEBUG, "masked debug line");
    closelog();
    printf("pl_syslog: done\n");
    return 0;
}
