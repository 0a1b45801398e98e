/*
 * test_preload_grpc_fork.c - a forking server whose parent started the agent with the gRPC
 * reporter (libskywalking-preload.so in pl_server, reporting to tests/support/grpc_collector.py).
 *
 * gRPC core cannot be used in a forked child of a process that runs it: its threads are gone
 * and its epoll set is shared with the parent (Debian's gRPC 1.51; its fork support needs every
 * thread out of gRPC at fork, which a running reporter never is). Before the fix a child's first
 * traced call started a gRPC reporter on that state: children hung or crashed, and the parent
 * crashed reading events of the children's sockets. Now each child says why in one message and
 * runs untraced, and the parent keeps reporting every one of its own segments.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_collector_proc.h"
#include "preload/pl_support.h"

#define FORKS 5

TestSuite(preload_grpc_fork, .fini = collector_fini, .timeout = 300);

/* Segments of `service` in the collector's records with operation `op` first. */
static size_t segments_of(const collector_t *c, const char *service, const char *op)
{
    char *text = pl_slurp(c->out, NULL);
    size_t n = 0;
    char want_op[64];
    snprintf(want_op, sizeof want_op, "\"operations\": [\"%s\"", op);
    for (char *line = text != NULL ? strtok(text, "\n") : NULL; line != NULL;
         line = strtok(NULL, "\n")) {
        char svc[64];
        n += strstr(line, "\"kind\": \"segment\"") != NULL &&
             json_string(line, "service", svc, sizeof svc) && strcmp(svc, service) == 0 &&
             strstr(line, want_op) != NULL;
    }
    free(text);
    return n;
}

Test(preload_grpc_fork, children_of_a_grpc_parent_run_untraced_and_the_parent_reports_all)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);
    char dir[256], err[512], e[4][300];
    pl_tmpdir(dir, sizeof dir, "grpcfork");
    snprintf(err, sizeof err, "%s/stderr", dir);
    snprintf(e[0], sizeof e[0], "LD_PRELOAD=%s", PL_PRELOAD_LIB);
    snprintf(e[1], sizeof e[1], "SW_REPORTER=grpc");
    snprintf(e[2], sizeof e[2], "SW_AGENT_COLLECTOR_BACKEND_SERVICES=127.0.0.1:%d", c->port);
    snprintf(e[3], sizeof e[3], "SW_AGENT_NAME=pl-grpc-fork");
    char *env[] = {e[0], e[1], e[2], e[3], NULL};
    char forks[8];
    snprintf(forks, sizeof forks, "%d", FORKS);
    char *argv[] = {PL_SERVER, "fork", forks, NULL};
    /* Each child GETs /leaf from the parent's server and exits; pl_server waits 20 s for each. */
    int rc = pl_run(argv, env, NULL, err, 120000);
    char *msg = pl_slurp(err, NULL);
    cr_assert_not_null(msg);
    cr_assert_eq(rc, 0, "pl_server exited %d (a child or the parent hung or crashed): %s", rc, msg);
    cr_expect_eq(occurrences(msg, "forked from one whose agent runs gRPC"), FORKS,
                 "every child says once why it runs untraced: %s", msg);
    /* The parent's segments: per fork, main's exit /fork, the handler's entry /fork, and the
       entry /leaf of the child's (untraced) request. */
    uint64_t deadline = now_ms() + WAIT_MS;
    size_t fork_n, leaf_n;
    while ((fork_n = segments_of(c, "pl-grpc-fork", "/fork")) < 2 * FORKS ||
           (leaf_n = segments_of(c, "pl-grpc-fork", "/leaf")) < FORKS) {
        cr_assert_lt(now_ms(), deadline,
                     "the collector holds %zu /fork and %zu /leaf segments of the parent, "
                     "expected %d and %d",
                     fork_n, segments_of(c, "pl-grpc-fork", "/leaf"), 2 * FORKS, FORKS);
        poll_pause();
    }
    cr_expect_eq(fork_n, 2 * FORKS);
    cr_expect_eq(leaf_n, FORKS, "no child reported a segment of its own");
    free(msg);
}
