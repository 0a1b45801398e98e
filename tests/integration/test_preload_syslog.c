/*
 * test_preload_syslog.c - the syslog hook of libskywalking-preload.so (SW_PLUGIN_SYSLOG=true)
 * in a real program calling syslog(3), vsyslog(3) and, built with _FORTIFY_SOURCE,
 * __syslog_chk, against the real gRPC collector:
 *
 *   - every line syslog accepts arrives as LogData with its text (%m expanded as syslog does),
 *     tags level and logger=syslog; a line masked by setlogmask does not;
 *   - the program's syslog output (LOG_PERROR: glibc copies each line to stderr) is the same
 *     with the agent as without it;
 *   - without SW_PLUGIN_SYSLOG nothing is sent.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_collector_proc.h"

#ifndef PL_PRELOAD_LIB
#error "PL_PRELOAD_LIB and PL_SYSLOG must be defined by the build"
#endif

/* Runs pl_syslog with the preload library (enabled: SW_PLUGIN_SYSLOG=true) sending to the
   collector on `port`; returns its stderr (malloc'd). */
static char *program_run(const collector_t *c, const char *program, bool preload, bool enabled)
{
    char err_path[256], cmd[2048];
    snprintf(err_path, sizeof err_path, "%s/pl_syslog.err", c->dir);
    snprintf(cmd, sizeof cmd,
             "env %s%s SW_PLUGIN_SYSLOG=%s SW_AGENT_NAME=pl-syslog "
             "SW_AGENT_INSTANCE_NAME=pl-syslog-1 SW_AGENT_COLLECTOR_BACKEND_SERVICES=127.0.0.1:%d "
             "timeout 120 %s >/dev/null 2>%s",
             preload ? "LD_PRELOAD=" : "", preload ? PL_PRELOAD_LIB : "",
             enabled ? "true" : "false", c->port, program, err_path);
    int rc = system(cmd);
    cr_assert_eq(rc, 0, "pl_syslog failed (%d): %s", rc, cmd);
    FILE *f = fopen(err_path, "r");
    cr_assert_not_null(f);
    char *text = calloc(1, 65536);
    size_t n = fread(text, 1, 65535, f);
    text[n] = '\0';
    fclose(f);
    unlink(err_path);
    return text;
}

/* The number of log records in the collector's file, and the one whose text is `text`. */
static size_t logs_find(const collector_t *c, const char *text, char *found, size_t len)
{
    FILE *f = fopen(c->out, "r");
    size_t n = 0;
    char *line = NULL;
    size_t cap = 0;
    char kind[32], t[1024];
    found[0] = '\0';
    while (f != NULL && getline(&line, &cap, f) > 0) {
        if (!json_string(line, "kind", kind, sizeof kind) || strcmp(kind, "log") != 0) {
            continue;
        }
        n++;
        if (text != NULL && json_string(line, "text", t, sizeof t) && strcmp(t, text) == 0) {
            snprintf(found, len, "%s", line);
        }
    }
    free(line);
    if (f != NULL) {
        fclose(f);
    }
    return n;
}

static void expect_line(const collector_t *c, const char *text, const char *level)
{
    char line[4096], buf[64];
    (void)logs_find(c, text, line, sizeof line);
    cr_assert(line[0] != '\0', "the collector has no log '%s'", text);
    cr_expect(json_string(line, "level", buf, sizeof buf) && strcmp(buf, level) == 0,
              "'%s': level %s, expected %s", text, buf, level);
    cr_expect(json_string(line, "logger", buf, sizeof buf) && strcmp(buf, "syslog") == 0);
    cr_expect(json_string(line, "service", buf, sizeof buf) && strcmp(buf, "pl-syslog") == 0);
}

TestSuite(preload_syslog, .fini = collector_fini, .timeout = 300);

static void lines_check(const char *program)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    char *plain = program_run(c, program, false, false);
    char *traced = program_run(c, program, true, true);
    collector_stop(c);
    fprintf(stderr, "--- without the agent ---\n%s--- with it ---\n%s---\n", plain, traced);

    const char *expected = "pl_syslog: disk sda is 93% full\n"
                           "pl_syslog: open config: No such file or directory\n"
                           "pl_syslog: request 7 served in 2.5 ms\n";
    cr_expect_str_eq(plain, expected, "the program's own syslog output changed?");
    cr_expect(strstr(traced, expected) == traced,
              "with the agent, syslog must still see the same lines first:\n%s", traced);
    char line[64];
    cr_expect_eq(logs_find(c, NULL, line, sizeof line), 3, "3 lines pass the mask");
    expect_line(c, "disk sda is 93% full", "WARN");
    expect_line(c, "open config: No such file or directory", "ERROR");
    expect_line(c, "request 7 served in 2.5 ms", "INFO");
    free(plain);
    free(traced);
}

/* Built with _FORTIFY_SOURCE: the program calls __syslog_chk and __vsyslog_chk. */
Test(preload_syslog, fortified_lines_reach_syslog_unchanged_and_the_oap)
{
    lines_check(PL_SYSLOG);
}

/* Built without it: plain syslog and vsyslog. */
Test(preload_syslog, plain_lines_reach_syslog_unchanged_and_the_oap)
{
    lines_check(PL_SYSLOG_PLAIN);
}

Test(preload_syslog, off_by_default)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    char *out = program_run(c, PL_SYSLOG, true, false);
    collector_stop(c);
    cr_expect(strstr(out, "pl_syslog: disk sda is 93% full\n") != NULL, "%s", out);
    char line[64];
    cr_expect_eq(logs_find(c, NULL, line, sizeof line), 0,
                 "SW_PLUGIN_SYSLOG=false must send nothing");
    free(out);
}
