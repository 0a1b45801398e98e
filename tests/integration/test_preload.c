/*
 * test_preload.c - libskywalking-preload.so in real, unmodified programs on loopback: the real
 * curl CLI against a libmicrohttpd server (pl_server), threads, 100 forks, and programs that
 * call nothing instrumented (ls, sort), which must behave byte for byte as without it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/pl_support.h"
#include "test_util.h"

#define WAIT_MS 60000

typedef struct server {
    pid_t pid;
    int stdin_w; /* closing it stops the server */
    unsigned port;
} server_t;

static void env_make(char *buf[4], char store[4][4200], const char *dir, const char *file,
                     const char *service)
{
    snprintf(store[0], sizeof store[0], "LD_PRELOAD=%s", PL_PRELOAD_LIB);
    snprintf(store[1], sizeof store[1], "SW_REPORTER_FILE_PATH=%s/%s", dir, file);
    snprintf(store[2], sizeof store[2], "SW_AGENT_NAME=%s", service);
    for (int i = 0; i < 3; i++) {
        buf[i] = store[i];
    }
    buf[3] = NULL;
}

static server_t server_start(const char *dir, const char *file)
{
    char store[4][4200], *env[4];
    env_make(env, store, dir, file, "pl-server");
    char portfile[4200];
    snprintf(portfile, sizeof portfile, "%s/port", dir);
    int fds[2];
    cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
    char *argv[] = {PL_SERVER, "serve", portfile, NULL};
    server_t s = {pl_spawn(argv, env, fds[0], NULL, NULL), fds[1], 0};
    close(fds[0]);
    cr_assert_gt(s.pid, 0, "cannot start pl_server");
    cr_assert(pl_wait_file(portfile, WAIT_MS), "pl_server wrote no port within %d ms", WAIT_MS);
    char *text = pl_slurp(portfile, NULL);
    cr_assert_not_null(text);
    s.port = (unsigned)atoi(text);
    free(text);
    cr_assert_gt(s.port, 0u);
    return s;
}

static void server_stop(server_t *s)
{
    close(s->stdin_w);
    cr_assert_eq(pl_wait(s->pid, WAIT_MS), 0, "pl_server did not exit cleanly");
}

static void path_join(char *out, size_t len, const char *dir, const char *file)
{
    snprintf(out, len, "%s/%s", dir, file);
}

Test(preload, curl_cli_to_mhd_server_is_one_trace)
{
    char dir[256];
    pl_tmpdir(dir, sizeof dir, "curl");
    server_t srv = server_start(dir, "server.bin");
    char store[4][4200], *env[4], url[128], peer[64];
    env_make(env, store, dir, "curl.bin", "pl-curl");
    snprintf(url, sizeof url, "http://127.0.0.1:%u/needs-header", srv.port);
    snprintf(peer, sizeof peer, "127.0.0.1:%u", srv.port);
    char *argv[] = {"curl", "-s", "-f", "-o", "/dev/null", "-H", "X-Test: 1", url, NULL};
    /* -f: exit 22 unless 200, so the caller's own header reached the server intact. */
    cr_assert_eq(pl_run(argv, env, NULL, NULL, WAIT_MS), 0, "curl failed");
    server_stop(&srv);

    char path[512];
    pl_segments_t client = {0}, server = {0};
    path_join(path, sizeof path, dir, "curl.bin");
    cr_assert_eq(pl_segments_read(&client, path), 1, "curl wrote no single segment");
    path_join(path, sizeof path, dir, "server.bin");
    cr_assert_eq(pl_segments_read(&server, path), 1, "the server wrote no single segment");

    const pl_segment_t *cs = client.segs[0], *ss = server.segs[0];
    cr_assert_str_eq(cs->service, "pl-curl");
    cr_assert_eq(cs->n_spans, 1);
    const pl_span_t *exit_span = cs->spans[0];
    cr_assert_eq(exit_span->spantype, SKYWALKING__V3__SPAN_TYPE__Exit);
    cr_assert_eq(exit_span->spanlayer, SKYWALKING__V3__SPAN_LAYER__Http);
    cr_assert_str_eq(exit_span->operationname, "/needs-header");
    cr_assert_str_eq(exit_span->peer, peer);
    cr_assert_str_eq(pl_span_tag(exit_span, "url"), url);
    cr_assert_str_eq(pl_span_tag(exit_span, "http.method"), "GET");
    cr_assert_str_eq(pl_span_tag(exit_span, "http.status_code"), "200");
    cr_assert_not(exit_span->iserror);
    cr_assert_eq(exit_span->componentid, 8002, "libcurl exits are cURL (component-libraries.yml)");

    cr_assert_str_eq(ss->service, "pl-server");
    cr_assert_str_eq(ss->traceid, cs->traceid, "the server did not join curl's trace");
    cr_assert_eq(ss->n_spans, 1);
    const pl_span_t *entry = ss->spans[0];
    cr_assert_eq(entry->spantype, SKYWALKING__V3__SPAN_TYPE__Entry);
    cr_assert_str_eq(entry->operationname, "/needs-header");
    cr_assert_str_eq(pl_span_tag(entry, "http.status_code"), "200");
    cr_assert_str_eq(pl_span_tag(entry, "http.method"), "GET");
    cr_assert_eq(strncmp(entry->peer, "127.0.0.1:", 10), 0, "entry peer %s", entry->peer);
    cr_assert_eq(entry->componentid, 49, "libmicrohttpd entries are http");
    cr_assert_eq(entry->n_refs, 1);
    const Skywalking__V3__SegmentReference *ref = entry->refs[0];
    cr_assert_eq(ref->reftype, SKYWALKING__V3__REF_TYPE__CrossProcess);
    cr_assert_str_eq(ref->parenttracesegmentid, cs->tracesegmentid);
    cr_assert_eq(ref->parentspanid, exit_span->spanid);
    cr_assert_str_eq(ref->parentservice, "pl-curl");
    cr_assert_str_eq(ref->networkaddressusedatpeer, peer);
    pl_segments_free(&client);
    pl_segments_free(&server);
}

Test(preload, failed_requests_keep_exit_codes_and_are_errors)
{
    char dir[256];
    pl_tmpdir(dir, sizeof dir, "fail");
    server_t srv = server_start(dir, "server.bin");
    char store[4][4200], *env[4], url[128], refused[128];
    env_make(env, store, dir, "curl.bin", "pl-curl");
    snprintf(url, sizeof url, "http://127.0.0.1:%u/fail", srv.port);
    char *fail_argv[] = {"curl", "-s", "-f", "-o", "/dev/null", url, NULL};
    cr_assert_eq(pl_run(fail_argv, NULL, NULL, NULL, WAIT_MS), 22);
    cr_assert_eq(pl_run(fail_argv, env, NULL, NULL, WAIT_MS), 22, "exit code changed");
    server_stop(&srv);
    /* A port nobody listens on: bind, read the port, close. */
    int down = loopback_refused_port(false);
    cr_assert_gt(down, 0, "no free loopback port: %s", strerror(errno));
    snprintf(refused, sizeof refused, "http://127.0.0.1:%d/x", down);
    char *refused_argv[] = {"curl", "-s", refused, NULL};
    cr_assert_eq(pl_run(refused_argv, env, NULL, NULL, WAIT_MS), 7, "exit code changed");

    char path[512];
    pl_segments_t client = {0};
    path_join(path, sizeof path, dir, "curl.bin");
    cr_assert_eq(pl_segments_read(&client, path), 2);
    const pl_span_t *s503 = client.segs[0]->spans[0], *s_refused = client.segs[1]->spans[0];
    cr_assert_str_eq(pl_span_tag(s503, "http.status_code"), "503");
    cr_assert(s503->iserror, "a 503 answer is an error");
    cr_assert(s_refused->iserror, "a refused connection is an error");
    cr_assert_eq(s_refused->n_logs, 1, "the curl error message is logged");
    pl_segments_free(&client);
}

/* Every segment of `s` is in one of the traces and every reference names an existing span. */
static void refs_resolve(const pl_segments_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        for (size_t j = i + 1; j < s->n; j++) {
            cr_assert_str_neq(s->segs[i]->tracesegmentid, s->segs[j]->tracesegmentid,
                              "segment %s reported twice", s->segs[i]->tracesegmentid);
        }
        const pl_span_t *root = s->segs[i]->spans[0];
        for (size_t r = 0; r < root->n_refs; r++) {
            const pl_segment_t *parent = pl_segment_find(s, root->refs[r]->parenttracesegmentid);
            cr_assert_not_null(parent, "a reference names a missing segment");
            cr_assert_str_eq(parent->traceid, s->segs[i]->traceid);
            cr_assert_lt((size_t)root->refs[r]->parentspanid, parent->n_spans);
        }
    }
}

/* Counts root spans of `s` named `op` of `type` whose single ref is of `ref_type` to a span
   named `parent_op`. */
static size_t count_linked(const pl_segments_t *s, const char *op, int type, int ref_type,
                           const char *parent_op)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        const pl_span_t *root = s->segs[i]->spans[0];
        if (strcmp(root->operationname, op) != 0 || (int)root->spantype != type ||
            root->n_refs != 1 || (int)root->refs[0]->reftype != ref_type) {
            continue;
        }
        const pl_segment_t *p = pl_segment_find(s, root->refs[0]->parenttracesegmentid);
        if (p != NULL &&
            strcmp(p->spans[root->refs[0]->parentspanid]->operationname, parent_op) == 0) {
            n++;
        }
    }
    return n;
}

/* A request served in several handler calls (headers; body chunks; the answer) is one entry
   span, begun at the first call: libmicrohttpd's layer sets it aside between the calls. */
Test(preload, an_upload_over_several_handler_calls_is_one_span_from_the_first_call)
{
    char dir[256], path[512], body[4200], url[128];
    pl_tmpdir(dir, sizeof dir, "upload");
    path_join(body, sizeof body, dir, "body");
    FILE *f = fopen(body, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 48 * 1024; i++) {
        fputc('a' + i % 26, f);
    }
    cr_assert_eq(fclose(f), 0);
    server_t srv = server_start(dir, "server.bin");
    snprintf(url, sizeof url, "http://127.0.0.1:%u/upload", srv.port);
    /* 48 KiB at 32 KiB/s: curl sends the first second's worth at once, the rest ~1 s later. */
    char data[4300];
    snprintf(data, sizeof data, "@%s", body);
    char *argv[] = {"curl",         "-s",  "-f", "-o",      "/dev/null",
                    "--limit-rate", "32k", "-H", "Expect:", "--data-binary",
                    data,           url,   NULL};
    cr_assert_eq(pl_run(argv, NULL, NULL, NULL, WAIT_MS), 0, "curl failed");
    server_stop(&srv);

    pl_segments_t s = {0};
    path_join(path, sizeof path, dir, "server.bin");
    cr_assert_eq(pl_segments_read(&s, path), 1, "one request, one segment");
    cr_assert_eq(s.segs[0]->n_spans, 1);
    const pl_span_t *entry = s.segs[0]->spans[0];
    cr_assert_str_eq(entry->operationname, "/upload");
    cr_assert_str_eq(pl_span_tag(entry, "http.method"), "POST");
    cr_assert_str_eq(pl_span_tag(entry, "http.status_code"), "200");
    /* Begun at the first call (headers), not at the last one (after the body). */
    cr_assert_geq(entry->endtime - entry->starttime, 300, "the span lasted %lld ms",
                  (long long)(entry->endtime - entry->starttime));
    pl_segments_free(&s);
}

Test(preload, url_without_port_gets_the_scheme_default)
{
    char dir[256], path[512];
    pl_tmpdir(dir, sizeof dir, "noport");
    char store[4][4200], *env[4];
    env_make(env, store, dir, "c.bin", "pl-curl");
    /* An empty port: curl uses 80. Whether something answers there does not matter. */
    char *argv[] = {"curl", "-s", "-o", "/dev/null", "--max-time", "5", "http://127.0.0.1:/x",
                    NULL};
    cr_assert_geq(pl_run(argv, env, NULL, NULL, WAIT_MS), 0, "curl did not exit");
    pl_segments_t s = {0};
    path_join(path, sizeof path, dir, "c.bin");
    cr_assert_eq(pl_segments_read(&s, path), 1);
    cr_assert_str_eq(s.segs[0]->spans[0]->peer, "127.0.0.1:80", "peer %s",
                     s.segs[0]->spans[0]->peer);
    pl_segments_free(&s);
}

Test(preload, curl_multi_transfers_are_sibling_exit_spans)
{
    char dir[256], path[512];
    pl_tmpdir(dir, sizeof dir, "multi");
    char store[4][4200], *env[4];
    env_make(env, store, dir, "m.bin", "pl-multi");
    char *argv[] = {PL_SERVER, "multi", "3", NULL};
    cr_assert_eq(pl_run(argv, env, NULL, NULL, WAIT_MS), 0, "a multi transfer failed");
    pl_segments_t s = {0};
    path_join(path, sizeof path, dir, "m.bin");
    /* main's GET /multi/3, the handler (entry + 3 exits), 2 /leaf and 1 /fail handlers. */
    cr_assert_eq(pl_segments_read(&s, path), 5);
    refs_resolve(&s);
    const pl_segment_t *handler = NULL;
    for (size_t i = 0; i < s.n; i++) {
        if (s.segs[i]->spans[0]->spantype == SKYWALKING__V3__SPAN_TYPE__Entry &&
            strcmp(s.segs[i]->spans[0]->operationname, "/multi/3") == 0) {
            handler = s.segs[i];
        }
    }
    cr_assert_not_null(handler, "no /multi/3 handler segment");
    cr_assert_eq(handler->n_spans, 4, "the 3 transfers are spans of the handler's segment");
    unsigned fails = 0;
    for (size_t k = 1; k < 4; k++) {
        const pl_span_t *x = handler->spans[k];
        cr_assert_eq(x->spantype, SKYWALKING__V3__SPAN_TYPE__Exit);
        cr_assert_eq(x->parentspanid, 0, "transfers in flight together are siblings");
        cr_assert_eq(x->componentid, 8002);
        cr_assert_geq(x->endtime, x->starttime);
        bool fail = strcmp(x->operationname, "/fail") == 0;
        fails += fail;
        cr_assert_str_eq(pl_span_tag(x, "http.status_code"), fail ? "503" : "200");
        cr_assert_eq(x->iserror, fail);
    }
    cr_assert_eq(fails, 1);
    /* Each server-side segment continues its own transfer's span. */
    unsigned linked = 0;
    for (size_t i = 0; i < s.n; i++) {
        const pl_span_t *root = s.segs[i]->spans[0];
        if (root->n_refs == 1 &&
            strcmp(root->refs[0]->parenttracesegmentid, handler->tracesegmentid) == 0) {
            const pl_span_t *x = handler->spans[root->refs[0]->parentspanid];
            cr_assert_str_eq(x->operationname, root->operationname);
            linked++;
        }
    }
    cr_assert_eq(linked, 3, "each transfer carried its own sw8");
    pl_segments_free(&s);
}

Test(preload, threads_continue_the_creating_span)
{
    char dir[256], path[512];
    pl_tmpdir(dir, sizeof dir, "threads");
    char store[4][4200], *env[4];
    env_make(env, store, dir, "t.bin", "pl-threads");
    char *argv[] = {PL_SERVER, "threads", "4", NULL};
    cr_assert_eq(pl_run(argv, env, NULL, NULL, WAIT_MS), 0);
    pl_segments_t s = {0};
    path_join(path, sizeof path, dir, "t.bin");
    /* main's GET, the /spawn/4 handler, 4 threads' GETs, 4 /leaf handlers. */
    cr_assert_eq(pl_segments_read(&s, path), 10);
    refs_resolve(&s);
    for (size_t i = 1; i < s.n; i++) {
        cr_assert_str_eq(s.segs[i]->traceid, s.segs[0]->traceid, "one trace");
    }
    cr_assert_eq(count_linked(&s, "/spawn/4", 0, 0, "/spawn/4"), 1);
    cr_assert_eq(count_linked(&s, "/leaf", 1, 1, "/spawn/4"), 4,
                 "each thread's segment continues the handler's span (CrossThread)");
    cr_assert_eq(count_linked(&s, "/leaf", 0, 0, "/leaf"), 4);
    pl_segments_free(&s);
}

Test(preload, hundred_forks_report_once_each)
{
    char dir[256], path[512];
    pl_tmpdir(dir, sizeof dir, "fork");
    char store[4][4200], *env[4];
    env_make(env, store, dir, "f.bin", "pl-fork");
    char *argv[] = {PL_SERVER, "fork", "100", NULL};
    cr_assert_eq(pl_run(argv, env, NULL, NULL, 4 * WAIT_MS), 0);
    pl_segments_t s = {0};
    path_join(path, sizeof path, dir, "f.bin");
    /* Per fork: main's GET /fork, its handler, the child's GET /leaf, the /leaf handler. */
    cr_assert_eq(pl_segments_read(&s, path), 400, "segments lost or sent twice");
    refs_resolve(&s);
    cr_assert_eq(count_linked(&s, "/fork", 0, 0, "/fork"), 100);
    cr_assert_eq(count_linked(&s, "/leaf", 1, 1, "/fork"), 100,
                 "each child's first segment continues the span that forked it");
    cr_assert_eq(count_linked(&s, "/leaf", 0, 0, "/leaf"), 100);
    pl_segments_free(&s);
}

/* Runs argv with and without the preload; stdout, stderr and exit code must be identical and
   no segment file may appear. */
static void same_without_tracing(char *const argv[], const char *tag)
{
    char dir[256], path[512], out[2][512], err[2][512];
    pl_tmpdir(dir, sizeof dir, tag);
    char store[4][4200], *env[4];
    env_make(env, store, dir, "seg.bin", "pl-plain");
    for (int i = 0; i < 2; i++) {
        snprintf(out[i], sizeof out[i], "%s/out%d", dir, i);
        snprintf(err[i], sizeof err[i], "%s/err%d", dir, i);
    }
    int plain = pl_run(argv, NULL, out[0], err[0], WAIT_MS);
    int traced = pl_run(argv, env, out[1], err[1], WAIT_MS);
    cr_assert_eq(traced, plain, "%s: exit code %d with the preload, %d without", argv[0], traced,
                 plain);
    for (int k = 0; k < 2; k++) {
        size_t la, lb;
        char *a = pl_slurp(k ? err[0] : out[0], &la), *b = pl_slurp(k ? err[1] : out[1], &lb);
        cr_assert(a && b && la == lb && memcmp(a, b, la) == 0, "%s: %s differs", argv[0],
                  k ? "stderr" : "stdout");
        free(a);
        free(b);
    }
    path_join(path, sizeof path, dir, "seg.bin");
    struct stat st;
    cr_assert_neq(stat(path, &st), 0, "%s: a segment file was written", argv[0]);
}

Test(preload, programs_without_instrumented_calls_are_unchanged)
{
    char *ls[] = {"ls", "-la", "/usr/bin", NULL};
    same_without_tracing(ls, "ls");
    char *missing[] = {"ls", "/nonexistent-sw-preload", NULL};
    same_without_tracing(missing, "lsfail");
    char *sort[] = {"sort", "-r", "/etc/passwd", NULL};
    same_without_tracing(sort, "sort");
}

Test(preload, bad_configuration_is_reported_once_and_the_program_runs)
{
    char dir[256], errp[512], path[512];
    pl_tmpdir(dir, sizeof dir, "badcfg");
    server_t srv = server_start(dir, "server.bin");
    char url[128], preload[4200], file[4200];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/leaf", srv.port);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", PL_PRELOAD_LIB);
    snprintf(file, sizeof file, "SW_REPORTER_FILE_PATH=%s/curl.bin", dir);
    char *env[] = {preload, file, "SW_AGENT_SAMPLE=often", NULL};
    snprintf(errp, sizeof errp, "%s/err", dir);
    char *argv[] = {"curl", "-s", "-f", "-o", "/dev/null", url, url, NULL};
    cr_assert_eq(pl_run(argv, env, NULL, errp, WAIT_MS), 0, "the program must run untraced");
    server_stop(&srv);
    char *text = pl_slurp(errp, NULL);
    cr_assert_not_null(text);
    cr_assert_not_null(strstr(text, "SW_AGENT_SAMPLE"), "stderr: %s", text);
    cr_assert_null(strstr(strstr(text, "SW_AGENT_SAMPLE") + 1, "SW_AGENT_SAMPLE"),
                   "reported more than once: %s", text);
    free(text);
    path_join(path, sizeof path, dir, "curl.bin");
    struct stat st;
    cr_assert_neq(stat(path, &st), 0, "an untraced program wrote segments");
}

Test(preload, idle_server_leaves_no_empty_file)
{
    char dir[256], path[512];
    pl_tmpdir(dir, sizeof dir, "idle");
    server_t srv = server_start(dir, "server.bin");
    server_stop(&srv);
    path_join(path, sizeof path, dir, "server.bin");
    struct stat st;
    cr_assert_neq(stat(path, &st), 0, "a server that traced nothing left %s", path);
}

/* The cleanup of an idle server's empty file removes the file the agent created, not the
   file its relative path names after the program changed directory. */
Test(preload, idle_server_cleanup_after_chdir_removes_only_its_own_file)
{
    char dir[256], other[512], path[512], bystander[600], portfile[512];
    pl_tmpdir(dir, sizeof dir, "chdir");
    path_join(other, sizeof other, dir, "other");
    cr_assert_eq(mkdir(other, 0700), 0);
    path_join(bystander, sizeof bystander, other, "server.bin");
    int fd = open(bystander, O_WRONLY | O_CREAT | O_EXCL, 0600); /* empty, like ours */
    cr_assert_geq(fd, 0);
    close(fd);
    path_join(portfile, sizeof portfile, dir, "port");
    char preload[4200], cwd[600], exit_cwd[600];
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", PL_PRELOAD_LIB);
    snprintf(cwd, sizeof cwd, "PL_SERVER_CWD=%s", dir);
    snprintf(exit_cwd, sizeof exit_cwd, "PL_SERVER_EXIT_CWD=%s", other);
    char *env[] = {
        preload, "SW_REPORTER_FILE_PATH=server.bin", "SW_AGENT_NAME=pl-chdir", cwd, exit_cwd, NULL};
    int fds[2];
    cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
    char *argv[] = {PL_SERVER, "serve", portfile, NULL};
    pid_t pid = pl_spawn(argv, env, fds[0], NULL, NULL);
    close(fds[0]);
    cr_assert_gt(pid, 0, "cannot start pl_server");
    cr_assert(pl_wait_file(portfile, WAIT_MS), "pl_server wrote no port within %d ms", WAIT_MS);
    path_join(path, sizeof path, dir, "server.bin");
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "the agent created no %s", path);
    cr_expect_eq(st.st_mode & 0777, 0600, "a new segment file is private: mode %o",
                 (unsigned)(st.st_mode & 0777));
    close(fds[1]);
    cr_assert_eq(pl_wait(pid, WAIT_MS), 0, "pl_server did not exit cleanly");
    cr_expect_eq(stat(bystander, &st), 0,
                 "the cleanup after chdir removed another file: %s is gone", bystander);
    cr_expect_neq(stat(path, &st), 0, "the agent's own empty file %s was left", path);
}
