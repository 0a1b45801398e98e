/*
 * test_preload_utf8.c - hostile bytes from a traced server's clients lose no segment: the
 * preloaded libmicrohttpd server (pl_server) reports over gRPC to the project's collector
 * (tests/support/grpc_collector.py, whose protobuf decoder refuses a string field that is not
 * valid UTF-8, as the OAP's protobuf-java does, and then fails the whole collect call). Among
 * 20 ordinary requests come three hostile ones: GET /%FF%FE (libmicrohttpd unescapes it to the
 * bytes FF FE), a raw C3 28 in the path, and an sw8 whose trace id and parent endpoint decode
 * to invalid UTF-8. The agent batches segments for a second (SW_BUFFER_CONSUME_CYCLE_MS), so
 * the hostile ones share collect calls with ordinary ones: before the agent cleaned strings
 * where they enter a segment (util/utf8.h), the collector lost those calls whole.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "grpc_collector_proc.h"
#include "preload/pl_support.h"

#ifndef PL_PRELOAD_LIB
#error "PL_PRELOAD_LIB and PL_SERVER must be defined by the build"
#endif

#define NORMAL  20
#define SERVICE "pl-utf8"

/* sw8 of: trace id "utf8.trace.\xff" "1", parent segment "utf8.parent.segment", span 3,
   service "utf8-upstream", instance "utf8-upstream-1", endpoint "/bad\xc3\x28" "end", address
   "127.0.0.1:8080" (base64 of each). */
#define HOSTILE_SW8                                                               \
    "1-dXRmOC50cmFjZS7/MQ==-dXRmOC5wYXJlbnQuc2VnbWVudA==-3-dXRmOC11cHN0cmVhbQ==-" \
    "dXRmOC11cHN0cmVhbS0x-L2JhZMMoZW5k-MTI3LjAuMC4xOjgwODA="

/* Sends one raw HTTP/1.0 request (the path's bytes as given) and reads the answer up to the
   server's close; returns the status code, or -1. Bounded by SO_RCVTIMEO. */
static int raw_get(unsigned port, const char *path, const char *sw8)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct timeval tv = {WAIT_MS / 1000, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect: %s", strerror(errno));
    char req[1024];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n%s%s%s\r\n", path,
                     sw8 ? "sw8: " : "", sw8 ? sw8 : "", sw8 ? "\r\n" : "");
    cr_assert_eq(write(fd, req, (size_t)n), n);
    char buf[4096];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof buf - 1 && (r = read(fd, buf + got, sizeof buf - 1 - got)) > 0) {
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    int status = -1;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1) {
        status = -1;
    }
    return status;
}

typedef struct found {
    size_t segments;
    bool normal[NORMAL];
    bool unescaped, raw, sw8_ref;
    size_t rejected;
} found_t;

static found_t records_scan(const collector_t *c)
{
    found_t f = {0};
    FILE *file = fopen(c->out, "r");
    cr_assert_not_null(file, "no records file %s", c->out);
    char *line = NULL;
    size_t cap = 0;
    char kind[32], service[64];
    while (getline(&line, &cap, file) > 0) {
        fprintf(stderr, "collector: %s", line);
        if (!json_string(line, "kind", kind, sizeof kind)) {
            continue;
        }
        if (strcmp(kind, "rejected") == 0) {
            f.rejected++;
            continue;
        }
        if (strcmp(kind, "segment") != 0 ||
            !json_string(line, "service", service, sizeof service) ||
            strcmp(service, SERVICE) != 0) {
            continue;
        }
        f.segments++;
        int i;
        const char *ok = strstr(line, "\"operations\": [\"/ok/");
        if (ok != NULL && sscanf(ok + strlen("\"operations\": [\"/ok/"), "%d", &i) == 1 && i >= 0 &&
            i < NORMAL) {
            f.normal[i] = true;
        }
        f.unescaped |= strstr(line, "\"operations\": [\"/??\"]") != NULL;
        f.raw |= strstr(line, "\"operations\": [\"/?(\"]") != NULL;
        f.sw8_ref |= strstr(line, "\"refEndpoints\": [\"/bad?(end\"]") != NULL &&
                     strstr(line, "\"traceId\": \"utf8.trace.?1\"") != NULL;
    }
    free(line);
    fclose(file);
    return f;
}

TestSuite(preload_utf8, .fini = collector_fini, .timeout = 300);

Test(preload_utf8, hostile_bytes_in_urls_and_sw8_lose_no_segment)
{
    collector_t *c = &the_collector;
    collector_start(c, 0, NULL, NULL);

    char portfile[700], env_store[6][512], *env[7];
    snprintf(portfile, sizeof portfile, "%s/pl_server.port", c->dir);
    snprintf(env_store[0], sizeof env_store[0], "LD_PRELOAD=%s", PL_PRELOAD_LIB);
    snprintf(env_store[1], sizeof env_store[1], "SW_AGENT_NAME=%s", SERVICE);
    snprintf(env_store[2], sizeof env_store[2], "SW_REPORTER=grpc");
    snprintf(env_store[3], sizeof env_store[3], "SW_AGENT_COLLECTOR_BACKEND_SERVICES=127.0.0.1:%d",
             c->port);
    snprintf(env_store[4], sizeof env_store[4], "SW_BUFFER_CONSUME_CYCLE_MS=1000");
    snprintf(env_store[5], sizeof env_store[5], "SW_AGENT_INSTANCE_NAME=pl-utf8-1");
    for (int i = 0; i < 6; i++) {
        env[i] = env_store[i];
    }
    env[6] = NULL;
    int fds[2];
    cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
    char err_path[700];
    snprintf(err_path, sizeof err_path, "%s/pl_server.err", c->dir);
    char *argv[] = {PL_SERVER, "serve", portfile, NULL};
    pid_t pid = pl_spawn(argv, env, fds[0], NULL, err_path);
    close(fds[0]);
    cr_assert_gt(pid, 0, "cannot start pl_server");
    cr_assert(pl_wait_file(portfile, WAIT_MS), "pl_server wrote no port within %d ms", WAIT_MS);
    char *text = pl_slurp(portfile, NULL);
    cr_assert_not_null(text);
    unsigned port = (unsigned)atoi(text);
    free(text);

    /* The hostile requests among the ordinary ones: every request is answered (404 for the
       unknown paths) and becomes one segment. */
    for (int i = 0; i < NORMAL; i++) {
        char path[32];
        snprintf(path, sizeof path, "/ok/%d", i);
        cr_expect_eq(raw_get(port, path, NULL), 404, "GET %s", path);
        if (i == 4) {
            cr_expect_eq(raw_get(port, "/%FF%FE", NULL), 404, "GET /%%FF%%FE");
        } else if (i == 9) {
            cr_expect_eq(raw_get(port, "/\xC3\x28", NULL), 404, "GET /\\xC3\\x28");
        } else if (i == 14) {
            cr_expect_eq(raw_get(port, "/ok/sw8", HOSTILE_SW8), 404, "GET with a hostile sw8");
        }
    }
    close(fds[1]); /* pl_server stops; the agent flushes at exit */
    cr_assert_eq(pl_wait(pid, WAIT_MS), 0, "pl_server did not exit cleanly");
    char *err = pl_slurp(err_path, NULL);
    fprintf(stderr, "--- pl_server stderr ---\n%s--- end ---\n", err != NULL ? err : "");
    free(err);
    collector_stop(c);

    found_t f = records_scan(c);
    cr_expect_eq(f.rejected, 0);
    cr_expect_eq(f.segments, NORMAL + 3, "the collector got %zu of %d segments", f.segments,
                 NORMAL + 3);
    for (int i = 0; i < NORMAL; i++) {
        cr_expect(f.normal[i], "the segment of /ok/%d was lost", i);
    }
    cr_expect(f.unescaped, "GET /%%FF%%FE arrives as operation \"/??\"");
    cr_expect(f.raw, "GET /\\xC3\\x28 arrives as operation \"/?(\"");
    cr_expect(f.sw8_ref, "the hostile sw8's trace id and parent endpoint arrive cleaned");
}
