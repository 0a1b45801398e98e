/*
 * test_evhttp_preload.c - sw_context_attach with the preload library: evl_redis (a program
 * linking libskywalking.so, an evhttp server traced with request contexts) runs with
 * libskywalking-preload.so preloaded and makes a hiredis call to the test Redis in each
 * request's callback, with the request's context attached. Every request's Redis exit span must
 * be in that request's segment, under the attached span, for many interleaved requests: the
 * program's agent and the plugins' are one (the preload exports skywalking.h's API).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "preload/pl_support.h"

enum { N = 200 };

#define WAIT_MS 180000

static const pl_span_t *span_with_id(const pl_segment_t *seg, int32_t id)
{
    for (size_t k = 0; k < seg->n_spans; k++) {
        if (seg->spans[k]->spanid == id) {
            return seg->spans[k];
        }
    }
    return NULL;
}

static const pl_segment_t *segment_of(const pl_segments_t *s, const char *entry_op)
{
    const pl_segment_t *found = NULL;
    for (size_t k = 0; k < s->n; k++) {
        const pl_span_t *root = span_with_id(s->segs[k], 0);
        if (root != NULL && strcmp(root->operationname, entry_op) == 0) {
            cr_assert_null(found, "two segments begin with %s", entry_op);
            found = s->segs[k];
        }
    }
    cr_assert_not_null(found, "no segment begins with %s", entry_op);
    return found;
}

/* Request i's segment: entry /up/i (id 0), local cache/i under it, and the Redis exit span
   under the local one (the span attached when hiredis ran), nothing else. */
static void check_request(const pl_segments_t *s, int i, const char *redis_peer)
{
    char up_op[32], local_op[32];
    snprintf(up_op, sizeof up_op, "/up/%d", i);
    snprintf(local_op, sizeof local_op, "cache/%d", i);
    const pl_segment_t *seg = segment_of(s, up_op);
    cr_assert_eq(seg->n_spans, 3, "%s: %zu spans, expected entry, local and Redis exit", up_op,
                 seg->n_spans);
    const pl_span_t *entry = span_with_id(seg, 0), *local = NULL, *redis = NULL;
    for (size_t k = 0; k < seg->n_spans; k++) {
        const pl_span_t *sp = seg->spans[k];
        if (sp->spantype == SKYWALKING__V3__SPAN_TYPE__Local) {
            local = sp;
        } else if (sp->spantype == SKYWALKING__V3__SPAN_TYPE__Exit) {
            redis = sp;
        }
    }
    cr_assert_eq(entry->spantype, SKYWALKING__V3__SPAN_TYPE__Entry, "%s", up_op);
    cr_assert_eq(entry->parentspanid, -1, "%s", up_op);
    cr_assert_not_null(local, "%s: no local span", up_op);
    cr_assert_str_eq(local->operationname, local_op, "%s holds %s of another request", up_op,
                     local->operationname);
    cr_assert_eq(local->parentspanid, 0, "%s", up_op);
    cr_assert_not_null(redis, "%s: no Redis exit span in the request's segment", up_op);
    cr_assert_str_eq(redis->operationname, "Redis/incr", "%s: the exit span is %s", up_op,
                     redis->operationname);
    cr_assert_eq(redis->parentspanid, local->spanid,
                 "%s: the Redis span's parent is %d, the attached span is %d", up_op,
                 redis->parentspanid, local->spanid);
    cr_assert_eq(redis->componentid, 7, "%s: component Redis", up_op);
    cr_assert_eq(redis->spanlayer, SKYWALKING__V3__SPAN_LAYER__Cache, "%s", up_op);
    cr_assert_str_eq(redis->peer, redis_peer, "%s", up_op);
    char key[32];
    snprintf(key, sizeof key, "evl:%d", i);
    const char *tag = pl_span_tag(redis, "cache.key");
    cr_assert(tag == NULL || strcmp(tag, key) == 0, "%s: the Redis call of request %s", up_op, tag);
    cr_assert_not(redis->iserror, "%s", up_op);
}

Test(evhttp_preload, attached_context_gets_the_hiredis_exit_span, .timeout = 300)
{
    pl_db_servers_env();
    const char *redis_port = getenv("SW_TEST_REDIS_PORT");
    cr_assert_not_null(redis_port, "the db fixture wrote no SW_TEST_REDIS_PORT");
    char dir[256], file[512], out[512], errf[512], e[3][600], n_arg[16];
    pl_tmpdir(dir, sizeof dir, "evl-redis");
    snprintf(file, sizeof file, "%s/seg.bin", dir);
    snprintf(out, sizeof out, "%s/stdout", dir);
    snprintf(errf, sizeof errf, "%s/stderr", dir);
    snprintf(e[0], sizeof e[0], "LD_PRELOAD=%s", PL_PRELOAD_LIB);
    snprintf(e[1], sizeof e[1], "SW_REPORTER_FILE_PATH=%s", file);
    snprintf(e[2], sizeof e[2], "SW_AGENT_NAME=evl-redis");
    snprintf(n_arg, sizeof n_arg, "%d", N);
    char *env[] = {e[0], e[1], e[2], NULL};
    char *argv[] = {EVL_REDIS, (char *)redis_port, n_arg, NULL};
    int rc = pl_run(argv, env, out, errf, WAIT_MS);
    char *msg = pl_slurp(errf, NULL), *line = pl_slurp(out, NULL);
    cr_assert_eq(rc, 0, "evl_redis exited %d: %s", rc, msg != NULL ? msg : "");
    cr_assert_not_null(line, "evl_redis printed nothing");

    int answered, ok, max_in_flight, errors;
    unsigned long long finished, reported, dropped, failed, open;
    cr_assert_eq(sscanf(line,
                        "answered=%d ok=%d max_in_flight=%d errors=%d finished=%llu "
                        "reported=%llu dropped=%llu failed=%llu open=%llu",
                        &answered, &ok, &max_in_flight, &errors, &finished, &reported, &dropped,
                        &failed, &open),
                 9, "evl_redis printed: %s", line);
    cr_assert_eq(answered, N, "%d of %d requests answered: %s", answered, N, line);
    cr_assert_eq(ok, N, "%d of %d requests answered 200: %s", ok, N, line);
    cr_assert_eq(max_in_flight, N, "all requests open at once on the loop's thread: %s", line);
    cr_assert_eq(errors, 0, "sw_* calls failed in evl_redis: %s", line);
    cr_assert_eq(finished, reported + dropped + failed, "accounting: %s", line);
    cr_assert_eq(dropped + failed + open, 0, "%s", line);
    cr_assert_eq(reported, N, "one segment per request, no other: %s", line);

    pl_segments_t s = {0};
    cr_assert_eq(pl_segments_read(&s, file), N, "the file holds %zu segments, expected %d", s.n, N);
    char redis_peer[32];
    snprintf(redis_peer, sizeof redis_peer, "127.0.0.1:%s", redis_port);
    for (int i = 0; i < N; i++) {
        check_request(&s, i, redis_peer);
    }
    pl_segments_free(&s);
    free(msg);
    free(line);
}
