/*
 * profile_snapshot.c - ThreadSnapshot messages and the collectSnapshot stream. See
 * profile_snapshot.h.
 */
#include "profile_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../config/config.h"
#include "../log/log.h"
#include "profile.pb-c.h"

#define METHOD_SNAPSHOT "/skywalking.v3.ProfileTask/collectSnapshot"
#define METHOD_FINISH   "/skywalking.v3.ProfileTask/reportTaskFinish"

int sw__profile_sender_init(sw__profile_sender_t *s, const sw_config_t *cfg,
                            sw__grpc_notices_t *notices, uint32_t depth, char *errbuf,
                            size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->notices = notices;
    s->depth = depth;
    snprintf(s->service, sizeof s->service, "%s", cfg->service_name);
    snprintf(s->instance, sizeof s->instance, "%s", cfg->instance_name);
    memcpy(s->token, cfg->authentication, sizeof s->token);
    s->token[sizeof s->token - 1] = '\0';
    s->timeout_ms = cfg->grpc_timeout_ms ? cfg->grpc_timeout_ms : 10000;
    sw__grpc_cancel_init(&s->cancel);
    s->text = malloc((size_t)depth * SW__PROFILE_FRAME_MAX);
    s->sigs = malloc((size_t)depth * sizeof(char *));
    if (s->text == NULL || s->sigs == NULL ||
        sw__symbolizer_create(SW__PROFILE_SYMBOLIZER_BYTES, &s->symbolizer) != 0) {
        return SW_ENOMEM;
    }
    return sw__grpc_conn_create(cfg, "profile snapshots", &s->conn, errbuf, errlen);
}

static void queue_clear(sw__profile_sender_t *s)
{
    for (size_t i = 0; i < s->queued; i++) {
        free((void *)s->queue[i].data);
    }
    s->queued = 0;
}

void sw__profile_sender_destroy(sw__profile_sender_t *s)
{
    queue_clear(s);
    sw__grpc_conn_destroy(s->conn);
    sw__grpc_cancel_destroy(&s->cancel);
    sw__symbolizer_destroy(s->symbolizer);
    free(s->text);
    free(s->sigs);
    sw__config_secret_wipe(s->token, sizeof s->token);
}

void sw__profile_sender_reset(sw__profile_sender_t *s, const char *task_id)
{
    queue_clear(s);
    snprintf(s->task_id, sizeof s->task_id, "%s", task_id);
    s->sent = 0;
    s->dropped = 0;
    s->last_flush_ms = 0;
    sw__grpc_cancel_destroy(&s->cancel);
    sw__grpc_cancel_init(&s->cancel);
}

void sw__profile_sender_cancel(sw__profile_sender_t *s)
{
    sw__grpc_cancel_fire(&s->cancel);
}

void sw__profile_sender_add(const sw__profile_sample_t *sample, void *arg)
{
    sw__profile_sender_t *s = arg;
    if (s->queued == SW__PROFILE_QUEUE_MAX) {
        s->dropped++;
        return;
    }
    uint32_t n = sample->depth < s->depth ? sample->depth : s->depth;
    /* frames[0] is the innermost (the interrupted pc); the rest are return addresses, looked up
       one byte back so that a call at the end of a function names that function and line. */
    for (uint32_t i = 0; i < n; i++) {
        uintptr_t addr = i == 0 ? sample->frames[0] : sample->frames[i] - 1;
        char *text = s->text + (size_t)i * SW__PROFILE_FRAME_MAX;
        sw__symbolizer_addr(s->symbolizer, addr, text, SW__PROFILE_FRAME_MAX);
        s->sigs[n - 1 - i] = text; /* outermost first */
    }
    Skywalking__V3__ThreadStack stack = SKYWALKING__V3__THREAD_STACK__INIT;
    stack.n_codesignatures = n;
    stack.codesignatures = s->sigs;
    Skywalking__V3__ThreadSnapshot snap = SKYWALKING__V3__THREAD_SNAPSHOT__INIT;
    snap.taskid = s->task_id;
    snap.tracesegmentid = (char *)sample->segment_id;
    snap.time = sample->time_ms;
    snap.sequence = sample->sequence;
    snap.stack = &stack;
    size_t len = skywalking__v3__thread_snapshot__get_packed_size(&snap);
    uint8_t *buf = malloc(len != 0 ? len : 1);
    if (buf == NULL) {
        s->dropped++;
        return;
    }
    skywalking__v3__thread_snapshot__pack(&snap, buf);
    s->queue[s->queued++] = (sw__report_record_t){.segment_id = NULL, .data = buf, .len = len};
}

bool sw__profile_status_worth_logging(grpc_status_code status)
{
    /* A rejected token is the reporter's to say (once, naming SW_AGENT_AUTHENTICATION): the
       profiler's calls carry the same token. */
    return status != GRPC_STATUS_OK && status != GRPC_STATUS_CANCELLED &&
           status != GRPC_STATUS_UNAUTHENTICATED && status != GRPC_STATUS_PERMISSION_DENIED;
}

/* One call on the sender's connection; returns whether it succeeded. */
static bool call(sw__profile_sender_t *s, const char *method, const char *origin,
                 const sw__report_record_t *msgs, size_t count)
{
    grpc_channel *ch = sw__grpc_conn_acquire(s->conn);
    if (ch == NULL) {
        return false; /* backing off */
    }
    sw__grpc_result_t res;
    sw__grpc_call_run(ch, sw__grpc_conn_queue(s->conn), method, msgs, count, s->token,
                      s->timeout_ms, &s->cancel, &res);
    sw__grpc_conn_outcome(s->conn, res.status, res.details);
    if (res.status == GRPC_STATUS_OK && res.response != NULL) {
        (void)sw__grpc_notices_commands(s->notices, res.response, res.response_len, origin);
    } else if (sw__profile_status_worth_logging(res.status)) {
        (void)sw__grpc_notices_status(s->notices, res.status, res.details, origin,
                                      sw__grpc_conn_target(s->conn), s->token[0] != '\0');
    }
    free(res.response);
    return res.status == GRPC_STATUS_OK;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sw__profile_sender_flush(sw__profile_sender_t *s)
{
    s->last_flush_ms = wall_ms();
    if (s->queued == 0) {
        return;
    }
    if (call(s, METHOD_SNAPSHOT, "collectSnapshot", s->queue, s->queued)) {
        s->sent += s->queued;
    } else {
        s->dropped += s->queued;
    }
    queue_clear(s);
}

void sw__profile_sender_maybe_flush(sw__profile_sender_t *s, int64_t now_ms)
{
    if (s->queued >= SW__PROFILE_FLUSH_COUNT ||
        (s->queued != 0 && now_ms - s->last_flush_ms >= SW__PROFILE_FLUSH_MS)) {
        sw__profile_sender_flush(s);
    }
}

void sw__profile_sender_finish(sw__profile_sender_t *s, const char *task_id)
{
    Skywalking__V3__ProfileTaskFinishReport r = SKYWALKING__V3__PROFILE_TASK_FINISH_REPORT__INIT;
    r.service = s->service;
    r.serviceinstance = s->instance;
    r.taskid = (char *)task_id;
    uint8_t buf[2 * SW_CONFIG_NAME_MAX + SW__PROFILE_TASK_ID_MAX + 32];
    size_t len = skywalking__v3__profile_task_finish_report__pack(&r, buf);
    sw__report_record_t msg = {.segment_id = NULL, .data = buf, .len = len};
    if (!call(s, METHOD_FINISH, "reportTaskFinish", &msg, 1)) {
        char esc[SW__LOG_ESCAPED_SIZE];
        sw__log(SW_LOG_WARN,
                "profile task '%s': reportTaskFinish failed; the OAP shows the task "
                "as unfinished on this instance",
                SW__LOG_ESC(esc, task_id));
    }
}
