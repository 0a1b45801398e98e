/*
 * test_preload_w3c.c - W3C Trace Context through libskywalking-preload.so in real programs on
 * loopback: the real curl CLI and pl_server's libcurl multi transfers send traceparent and
 * tracestate (SW_AGENT_PROPAGATION=tracecontext: no sw8 at all), pl_server's libmicrohttpd
 * entries continue them (tracecontext,sw8), and an OpenTelemetry-traced Python service
 * (tests/support/otel_hop.py, the SDK's TraceContextTextMapPropagator) sits between the two.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/pl_support.h"

#define WAIT_MS 120000

typedef struct proc {
    pid_t pid;
    int stdin_w; /* closing it stops the process */
    unsigned port;
} proc_t;

typedef struct env {
    char store[4][4200];
    char *vars[5];
} env_t;

static void env_make(env_t *e, const char *dir, const char *file, const char *service,
                     const char *propagation)
{
    snprintf(e->store[0], sizeof e->store[0], "LD_PRELOAD=%s", PL_PRELOAD_LIB);
    snprintf(e->store[1], sizeof e->store[1], "SW_REPORTER_FILE_PATH=%s/%s", dir, file);
    snprintf(e->store[2], sizeof e->store[2], "SW_AGENT_NAME=%s", service);
    snprintf(e->store[3], sizeof e->store[3], "SW_AGENT_PROPAGATION=%s", propagation);
    for (int i = 0; i < 4; i++) {
        e->vars[i] = e->store[i];
    }
    e->vars[4] = NULL;
}

/* Starts argv with its stdin on a pipe and waits for the port it writes to `portfile`. */
static proc_t proc_start(char *const argv[], char *const env[], const char *portfile)
{
    int fds[2];
    cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
    proc_t p = {pl_spawn(argv, env, fds[0], NULL, NULL), fds[1], 0};
    close(fds[0]);
    cr_assert_gt(p.pid, 0, "cannot start %s", argv[0]);
    cr_assert(pl_wait_file(portfile, WAIT_MS), "%s wrote no port within %d ms", argv[0], WAIT_MS);
    char *text = pl_slurp(portfile, NULL);
    cr_assert_not_null(text);
    p.port = (unsigned)atoi(text);
    free(text);
    cr_assert_gt(p.port, 0u);
    return p;
}

static void proc_stop(proc_t *p, const char *what)
{
    close(p->stdin_w);
    cr_assert_eq(pl_wait(p->pid, WAIT_MS), 0, "%s did not exit cleanly", what);
}

static proc_t server_start(const char *dir)
{
    env_t e;
    env_make(&e, dir, "server.bin", "pl-server", "tracecontext,sw8");
    char portfile[512];
    snprintf(portfile, sizeof portfile, "%s/port", dir);
    char *argv[] = {PL_SERVER, "serve", portfile, NULL};
    return proc_start(argv, e.vars, portfile);
}

static void read_one(pl_segments_t *s, const char *dir, const char *file, const char *who)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    cr_assert_eq(pl_segments_read(s, path), 1, "%s wrote no single segment", who);
}

static bool w3c_trace_id(const char *s)
{
    if (strlen(s) != 32) {
        return false;
    }
    for (int i = 0; i < 32; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return false;
        }
    }
    return true;
}

/* The client's exit span and the server's entry: one trace, linked by a CrossProcess
   reference that only tracestate's `sw` member can have carried. */
static void assert_linked(const pl_segment_t *cs, const pl_segment_t *ss, const char *peer)
{
    cr_assert(w3c_trace_id(cs->traceid), "trace id '%s' is not in the W3C form", cs->traceid);
    cr_assert_str_eq(ss->traceid, cs->traceid, "the server did not join the client's trace");
    const pl_span_t *entry = ss->spans[0];
    cr_assert_eq(entry->spantype, SKYWALKING__V3__SPAN_TYPE__Entry);
    cr_assert_eq(entry->n_refs, 1, "no reference: tracestate's sw member was lost");
    const Skywalking__V3__SegmentReference *ref = entry->refs[0];
    cr_assert_eq(ref->reftype, SKYWALKING__V3__REF_TYPE__CrossProcess);
    cr_assert_str_eq(ref->traceid, cs->traceid);
    cr_assert_str_eq(ref->parenttracesegmentid, cs->tracesegmentid);
    cr_assert_eq(ref->parentspanid, 0);
    cr_assert_str_eq(ref->parentservice, "pl-curl");
    cr_assert_str_eq(ref->networkaddressusedatpeer, peer);
    const char *parent = pl_span_tag(entry, "w3c.parent_id");
    cr_assert(parent != NULL && strlen(parent) == 16, "no w3c.parent_id tag");
}

Test(preload_w3c, curl_to_mhd_with_only_w3c_headers_is_one_trace)
{
    char dir[256];
    pl_tmpdir(dir, sizeof dir, "w3c");
    proc_t srv = server_start(dir);
    env_t e;
    env_make(&e, dir, "curl.bin", "pl-curl", "tracecontext");
    char url[128], peer[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/w3c-only", srv.port);
    snprintf(peer, sizeof peer, "127.0.0.1:%u", srv.port);
    /* -f: exit 22 unless 200: pl_server answers /w3c-only with 200 only when the request has a
       traceparent and no sw8. */
    char *argv[] = {"curl", "-s", "-f", "-o", "/dev/null", url, NULL};
    cr_assert_eq(pl_run(argv, e.vars, NULL, NULL, WAIT_MS), 0,
                 "curl failed: the server did not see traceparent without sw8");
    proc_stop(&srv, "pl_server");

    pl_segments_t client = {0}, server = {0};
    read_one(&client, dir, "curl.bin", "curl");
    read_one(&server, dir, "server.bin", "the server");
    cr_assert_str_eq(pl_span_tag(server.segs[0]->spans[0], "http.status_code"), "200");
    assert_linked(client.segs[0], server.segs[0], peer);
    pl_segments_free(&client);
    pl_segments_free(&server);
}

Test(preload_w3c, curl_multi_transfers_carry_their_own_traceparent)
{
    char dir[256], path[512];
    pl_tmpdir(dir, sizeof dir, "w3cmulti");
    env_t e;
    env_make(&e, dir, "m.bin", "pl-multi", "tracecontext");
    char *argv[] = {PL_SERVER, "multi", "3", NULL};
    cr_assert_eq(pl_run(argv, e.vars, NULL, NULL, WAIT_MS), 0, "a multi transfer failed");
    pl_segments_t s = {0};
    snprintf(path, sizeof path, "%s/m.bin", dir);
    cr_assert_eq(pl_segments_read(&s, path), 5);
    const pl_segment_t *handler = NULL;
    for (size_t i = 0; i < s.n; i++) {
        if (s.segs[i]->spans[0]->spantype == SKYWALKING__V3__SPAN_TYPE__Entry &&
            strcmp(s.segs[i]->spans[0]->operationname, "/multi/3") == 0) {
            handler = s.segs[i];
        }
    }
    cr_assert_not_null(handler, "no /multi/3 handler segment");
    cr_assert_eq(handler->n_spans, 4);
    /* With sw8 neither sent nor read, each /leaf or /fail entry can only have found its
       transfer's span through traceparent and tracestate. */
    unsigned linked = 0;
    for (size_t i = 0; i < s.n; i++) {
        const pl_span_t *root = s.segs[i]->spans[0];
        cr_assert_str_eq(s.segs[i]->traceid, handler->traceid, "all one trace");
        if (root->n_refs == 1 &&
            strcmp(root->refs[0]->parenttracesegmentid, handler->tracesegmentid) == 0) {
            cr_assert_lt((size_t)root->refs[0]->parentspanid, handler->n_spans);
            const pl_span_t *x = handler->spans[root->refs[0]->parentspanid];
            cr_assert_str_eq(x->operationname, root->operationname);
            linked++;
        }
    }
    cr_assert_eq(linked, 3, "each transfer carried its own traceparent and tracestate");
    pl_segments_free(&s);
}

/* The project's venv Python (scripts/fetch-tools.sh installs opentelemetry-api/-sdk there). */
static void venv_python(char *out, size_t len)
{
    const char *cache = getenv("SW_CACHE_DIR");
    const char *home = getenv("HOME");
    if (cache != NULL && cache[0] != '\0') {
        snprintf(out, len, "%s/venv/bin/python3", cache);
    } else {
        snprintf(out, len, "%s/.cache/skywalking-c/venv/bin/python3", home ? home : "");
    }
}

/* The string value of "key" in a JSON line written by json.dumps (", " and ": " separators). */
static bool json_str(const char *text, const char *key, char *out, size_t len)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *at = strstr(text, pat);
    if (at == NULL) {
        return false;
    }
    at += strlen(pat);
    const char *end = strchr(at, '"');
    if (end == NULL || (size_t)(end - at) >= len) {
        return false;
    }
    memcpy(out, at, (size_t)(end - at));
    out[end - at] = '\0';
    return true;
}

Test(preload_w3c, an_opentelemetry_service_in_between_continues_and_hands_on_the_trace)
{
    char python[512];
    venv_python(python, sizeof python);
    char *probe[] = {python, "-c", "import opentelemetry.sdk.trace", NULL};
    cr_assert_eq(pl_run(probe, NULL, NULL, NULL, WAIT_MS), 0,
                 "%s cannot import opentelemetry: run scripts/fetch-tools.sh", python);

    char dir[256];
    pl_tmpdir(dir, sizeof dir, "w3cotel");
    proc_t srv = server_start(dir);
    char downstream[64], hop_port[512], hop_log[512];
    snprintf(downstream, sizeof downstream, "http://127.0.0.1:%u", srv.port);
    snprintf(hop_port, sizeof hop_port, "%s/hop.port", dir);
    snprintf(hop_log, sizeof hop_log, "%s/hop.jsonl", dir);
    char *hop_argv[] = {python, OTEL_HOP, hop_port, downstream, hop_log, NULL};
    proc_t hop = proc_start(hop_argv, NULL, hop_port);

    env_t e;
    env_make(&e, dir, "curl.bin", "pl-curl", "tracecontext");
    char url[128], peer[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/w3c-only", hop.port);
    snprintf(peer, sizeof peer, "127.0.0.1:%u", hop.port);
    char *argv[] = {"curl", "-s", "-f", "-o", "/dev/null", url, NULL};
    cr_assert_eq(pl_run(argv, e.vars, NULL, NULL, WAIT_MS), 0, "curl through the hop failed");
    proc_stop(&hop, "otel_hop.py");
    proc_stop(&srv, "pl_server");

    pl_segments_t client = {0}, server = {0};
    read_one(&client, dir, "curl.bin", "curl");
    read_one(&server, dir, "server.bin", "the server");
    const pl_segment_t *cs = client.segs[0], *ss = server.segs[0];
    char *log = pl_slurp(hop_log, NULL);
    cr_assert_not_null(log, "otel_hop.py logged no request");
    char got[2048];
    /* OpenTelemetry read our traceparent and continued our trace... */
    cr_assert_neq(strstr(log, "\"extracted_valid\": true"), NULL, "%s", log);
    cr_assert(json_str(log, "extracted_trace_id", got, sizeof got));
    cr_assert_str_eq(got, cs->traceid, "OpenTelemetry extracted another trace id");
    cr_assert(json_str(log, "own_trace_id", got, sizeof got));
    cr_assert_str_eq(got, cs->traceid, "OpenTelemetry's span is not in our trace");
    cr_assert_neq(strstr(log, "\"extracted_sampled\": true"), NULL, "%s", log);
    cr_assert(json_str(log, "extracted_tracestate", got, sizeof got));
    cr_assert_eq(strncmp(got, "sw=", 3), 0, "our tracestate member: %s", got);
    /* ...and sent its own span as the parent, with our member forwarded. */
    char own_span[64], sent[256];
    cr_assert(json_str(log, "own_span_id", own_span, sizeof own_span));
    const char *outgoing = strstr(log, "\"outgoing\": {");
    cr_assert_not_null(outgoing, "%s", log);
    cr_assert(json_str(outgoing, "traceparent", sent, sizeof sent));
    char want[128];
    snprintf(want, sizeof want, "00-%s-%s-01", cs->traceid, own_span);
    cr_assert_str_eq(sent, want);
    /* Our entry continues OpenTelemetry's traceparent: same trace, its span as W3C parent,
       and, from the forwarded tracestate, a CrossProcess reference to curl's exit span. */
    assert_linked(cs, ss, peer);
    cr_assert_str_eq(pl_span_tag(ss->spans[0], "w3c.parent_id"), own_span);
    free(log);
    pl_segments_free(&client);
    pl_segments_free(&server);
}
