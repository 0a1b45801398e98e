/*
 * grpc_collector_proc.h - the test side of tests/support/grpc_collector.py (shared by the gRPC
 * integration tests): start it as a child process on a free port and wait for its port file,
 * stop it (SIGTERM, bounded wait, SIGKILL), read string fields of its JSONL records, and
 * capture the agent's stderr while it runs.
 *
 * The collector runs with PR_SET_PDEATHSIG, so a crashed test does not leave it behind; a
 * suite's .fini (collector_fini) stops it and removes its files.
 */
#ifndef GRPC_COLLECTOR_PROC_H
#define GRPC_COLLECTOR_PROC_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "skywalking.h"

#ifndef SW_TEST_GRPC_COLLECTOR
#error "SW_TEST_GRPC_COLLECTOR (path of grpc_collector.py) must be defined by the build"
#endif

#define PYTHON                  "/usr/bin/python3"
#define COLLECTOR_START_WAIT_MS 60000 /* stub generation + grpc import, on a busy machine */
#define WAIT_MS                 30000 /* any other bounded wait */

/* ---------------------------------------------------------------------------------------- */
/* The collector process                                                                     */
/* ---------------------------------------------------------------------------------------- */

typedef struct collector {
    pid_t pid;
    int port;
    char dir[128];
    char out[192]; /* the JSONL records */
    char port_file[192];
} collector_t;

/* The test's collector, so that .fini can stop it after a failed assertion. */
static collector_t the_collector;

static inline uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A short pause between two checks of a bounded wait (not synchronization by itself). */
static inline void poll_pause(void)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static inline int port_file_read(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    int port = 0;
    if (fscanf(f, "%d", &port) != 1) {
        port = 0;
    }
    fclose(f);
    return port;
}

/* Starts the collector on `port` (0: any) with optional --token / --command, and waits for
   its port file. The records file is kept across restarts. */
/* When set, the next collector serves TLS with these PEM files (cert, key). */
static const char *collector_tls_cert, *collector_tls_key;
/* When set too, the collector requires a client certificate signed by this CA (mutual TLS). */
static const char *collector_tls_client_ca;
/* When set, the next collector answers fetchConfigurations from this file (--cds-file). */
static const char *collector_cds_file;
/* When set, the next collector serves profile tasks from this file (--profile-task-file). */
static const char *collector_profile_task_file;
/* When set, the next collector pads every Commands answer by this many bytes (--answer-pad). */
static const char *collector_answer_pad;
/* When set, the next collector is the test double that fails every collect call
   (--test-double-reject-collect). */
static bool collector_reject_collect;

static inline void collector_start(collector_t *c, int port, const char *token, const char *command)
{
    if (c->dir[0] == '\0') {
        snprintf(c->dir, sizeof c->dir, "/tmp/sw-grpc-test-XXXXXX");
        cr_assert_not_null(mkdtemp(c->dir), "mkdtemp: %s", strerror(errno));
        snprintf(c->out, sizeof c->out, "%s/records.jsonl", c->dir);
        snprintf(c->port_file, sizeof c->port_file, "%s/port", c->dir);
    }
    unlink(c->port_file);
    char port_arg[16];
    snprintf(port_arg, sizeof port_arg, "%d", port);
    const char *argv[28] = {PYTHON,        SW_TEST_GRPC_COLLECTOR, "--port", port_arg,
                            "--port-file", c->port_file,           "--out",  c->out};
    int argc = 8;
    if (token != NULL) {
        argv[argc++] = "--token";
        argv[argc++] = token;
    }
    if (command != NULL) {
        argv[argc++] = "--command";
        argv[argc++] = command;
    }
    if (collector_cds_file != NULL) {
        argv[argc++] = "--cds-file";
        argv[argc++] = collector_cds_file;
    }
    if (collector_profile_task_file != NULL) {
        argv[argc++] = "--profile-task-file";
        argv[argc++] = collector_profile_task_file;
    }
    if (collector_answer_pad != NULL) {
        argv[argc++] = "--answer-pad";
        argv[argc++] = collector_answer_pad;
    }
    if (collector_reject_collect) {
        argv[argc++] = "--test-double-reject-collect";
    }
    if (collector_tls_cert != NULL) {
        argv[argc++] = "--tls-cert";
        argv[argc++] = collector_tls_cert;
        argv[argc++] = "--tls-key";
        argv[argc++] = collector_tls_key;
    }
    if (collector_tls_cert != NULL && collector_tls_client_ca != NULL) {
        argv[argc++] = "--tls-client-ca";
        argv[argc++] = collector_tls_client_ca;
    }
    argv[argc] = NULL;
    pid_t parent = getpid();
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* the collector dies with the test */
        if (getppid() != parent) {
            _exit(127);
        }
        execv(PYTHON, (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", PYTHON, strerror(errno));
        _exit(127);
    }
    c->pid = pid;
    uint64_t deadline = now_ms() + COLLECTOR_START_WAIT_MS;
    while ((c->port = port_file_read(c->port_file)) == 0) {
        int status;
        cr_assert_eq(waitpid(pid, &status, WNOHANG), 0,
                     "the collector (%s) exited before serving, status %d", SW_TEST_GRPC_COLLECTOR,
                     status);
        cr_assert_lt(now_ms(), deadline, "the collector did not write %s within %d ms",
                     c->port_file, COLLECTOR_START_WAIT_MS);
        poll_pause();
    }
    cr_assert(port == 0 || c->port == port, "collector listens on %d, wanted %d", c->port, port);
}

/* SIGTERM (graceful stop), then a bounded wait; SIGKILL if it does not end. Idempotent. */
static inline void collector_stop(collector_t *c)
{
    if (c->pid <= 0) {
        return;
    }
    kill(c->pid, SIGTERM);
    uint64_t deadline = now_ms() + WAIT_MS;
    int status = 0;
    while (waitpid(c->pid, &status, WNOHANG) == 0) {
        if (now_ms() > deadline) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &status, 0);
            break;
        }
        poll_pause();
    }
    c->pid = 0;
}

static inline void collector_fini(void)
{
    collector_t *c = &the_collector;
    collector_stop(c);
    if (sw_enabled()) {
        sw_shutdown();
    }
    if (c->dir[0] != '\0') { /* what a failed test recorded was printed by its assertions */
        char path[sizeof c->dir + 16];
        snprintf(path, sizeof path, "%.120s/stderr.txt", c->dir);
        unlink(path);
        unlink(c->out);
        unlink(c->port_file);
        rmdir(c->dir);
    }
}

/* Returns the text of the JSON string value of `"key": "` in line into buf, or false. */
static inline bool json_string(const char *line, const char *key, char *buf, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *p = strstr(line, pat);
    if (p == NULL) {
        return false;
    }
    p += strlen(pat);
    const char *end = strchr(p, '"');
    if (end == NULL || (size_t)(end - p) >= len) {
        return false;
    }
    memcpy(buf, p, (size_t)(end - p));
    buf[end - p] = '\0';
    return true;
}

typedef struct stderr_capture {
    int saved;
    char path[192];
} stderr_capture_t;

static inline void stderr_capture_begin(stderr_capture_t *cap, const collector_t *c)
{
    snprintf(cap->path, sizeof cap->path, "%s/stderr.txt", c->dir);
    int fd = open(cap->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0, "open %s: %s", cap->path, strerror(errno));
    fflush(stderr);
    cap->saved = dup(2);
    dup2(fd, 2);
    close(fd);
}

/* Restores stderr, echoes what was captured, and returns it (malloc'd). */
static inline char *stderr_capture_end(stderr_capture_t *cap)
{
    fflush(stderr);
    dup2(cap->saved, 2);
    close(cap->saved);
    FILE *f = fopen(cap->path, "r");
    cr_assert_not_null(f);
    char *text = calloc(1, 1 << 20);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    text[n] = '\0';
    fclose(f);
    fprintf(stderr, "--- agent stderr ---\n%s--- end ---\n", text);
    return text;
}

static inline size_t occurrences(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle)) {
        n++;
    }
    return n;
}

#endif /* GRPC_COLLECTOR_PROC_H */
