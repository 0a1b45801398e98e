/*
 * evl_redis.c - attach in an event loop with the preload library: a program that links
 * libskywalking.so and serves /up/<i> with an evhttp server traced with request contexts
 * (evl.c). In each request's callback it begins a local span under the request's entry span,
 * attaches the context (sw_context_attach) and makes a synchronous hiredis call: with
 * libskywalking-preload.so preloaded, the call becomes a Redis exit span of that request, under
 * the attached span (preload_hiredis.c), because the program's sw_* calls and the plugin record
 * into the same agent (the preload exports the API). It drives itself with <requests>
 * concurrent requests from a libevent client on the main thread, stops, shuts the agent down
 * and prints one line on stdout:
 *   answered=A ok=K max_in_flight=M errors=E finished=F reported=R dropped=D failed=X open=O
 *
 * Usage: evl_redis <redis port> <requests>. The agent's settings come from the environment
 * (sw_config_load: SW_AGENT_NAME, SW_REPORTER_FILE_PATH, ...). Exit status 0 when it ran;
 * the test judges the line and the segments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "eventloop/evl.h"
#include "skywalking.h"

/* The Redis connection, used on the server's thread only (created before it starts). */
static redisContext *redis;
static int work_errors; /* server thread; read after evl_server_stop */

static void redis_work(evl_request_t *r)
{
    char op[64];
    snprintf(op, sizeof op, "cache/%d", r->index);
    sw_span_ref_t local;
    if (sw_span_ref_begin_local(r->entry, op, &local) != SW_OK) {
        work_errors++;
    }
    sw_attach_t saved;
    int rc = sw_context_attach(local, &saved);
    if (rc != SW_OK) {
        work_errors++;
    }
    redisReply *reply = redisCommand(redis, "INCR evl:%d", r->index);
    if (rc == SW_OK || rc == SW_ENOTRACED) {
        if (sw_context_detach(&saved) != SW_OK) {
            work_errors++;
        }
    }
    bool ok = reply != NULL && reply->type == REDIS_REPLY_INTEGER;
    if (reply != NULL) {
        freeReplyObject(reply);
    }
    if (sw_span_ref_end(local) != SW_OK) {
        work_errors++;
    }
    evl_upstream_reply(r, ok ? 200 : 502, ok ? "ok" : "redis failed");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: evl_redis <redis port> <requests>\n");
        return 2;
    }
    int n = atoi(argv[2]);
    char err[768] = "";
    sw_config_t cfg;
    sw_config_init(&cfg);
    if (n <= 0 || sw_config_load(&cfg, err, sizeof err) != 0 || sw_init(&cfg) != SW_OK) {
        fprintf(stderr, "evl_redis: bad request count or agent start: %s\n", err);
        return 2;
    }
    redis = redisConnect("127.0.0.1", atoi(argv[1]));
    if (redis == NULL || redis->err) {
        fprintf(stderr, "evl_redis: redisConnect: %s\n", redis ? redis->errstr : "no memory");
        return 2;
    }
    evl_upstream_t up;
    evl_client_req_t *reqs = calloc((size_t)n, sizeof *reqs);
    if (reqs == NULL || !evl_upstream_init(&up, n, redis_work, NULL)) {
        fprintf(stderr, "evl_redis: out of memory\n");
        return 2;
    }
    evl_server_t *server = evl_server_start(evl_upstream_handle, &up, err, sizeof err);
    if (server == NULL) {
        fprintf(stderr, "evl_redis: %s\n", err);
        return 2;
    }
    for (int i = 0; i < n; i++) {
        snprintf(reqs[i].path, sizeof reqs[i].path, "/up/%d", i);
    }
    int answered = evl_client_run(evl_server_port(server), reqs, n, 120000);
    evl_server_stop(server);
    int ok = 0;
    for (int i = 0; i < n; i++) {
        ok += reqs[i].status == 200;
    }
    redisFree(redis);
    (void)sw_shutdown();
    sw_stats_t st;
    sw_stats(&st);
    printf("answered=%d ok=%d max_in_flight=%d errors=%d finished=%llu reported=%llu "
           "dropped=%llu failed=%llu open=%llu\n",
           answered, ok, up.max_in_flight,
           work_errors + up.bad_requests + up.begin_errors + up.end_errors,
           (unsigned long long)st.segments_finished, (unsigned long long)st.segments_reported,
           (unsigned long long)st.segments_dropped, (unsigned long long)st.segments_failed,
           (unsigned long long)st.contexts_open);
    evl_upstream_free(&up);
    free(reqs);
    return 0;
}
