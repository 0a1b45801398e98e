/*
 * profiler.c - the profiler's two threads: fetching tasks and sampling one. See profiler.h.
 */
#include "profiler.h"

#include <grpc/grpc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../config/config.h"
#include "../grpc/grpc_reporter_call.h"
#include "../grpc/grpc_reporter_channel.h"
#include "../grpc/grpc_reporter_commands.h"
#include "../log/log.h"
#include "../util/periodic.h"
#include "profile.pb-c.h"
#include "profile_snapshot.h"
#include "profile_task.h"
#include "swc_errbuf.h"

#define METHOD_TASKS  "/skywalking.v3.ProfileTask/getProfileTaskCommands"
#define METHOD_FINISH "/skywalking.v3.ProfileTask/reportTaskFinish"
/* Task records, reused in turn: a record is published to the span path only while its task
   samples, and rewritten only three tasks (three minutes at least) later, long after any
   application thread that read the pointer has compared its endpoint. */
#define TASK_RING 4
/* Task ids remembered, so that a task sent again is refused. */
#define SEEN_MAX 16

struct sw__profiler {
    /* Immutable after start. */
    sw__profile_sender_t sender; /* the sampling thread's (profile_snapshot.h) */
    sw__grpc_notices_t notices;
    char service[SW_CONFIG_NAME_MAX];
    char instance[SW_CONFIG_NAME_MAX];
    char token[SW_CONFIG_NAME_MAX];
    uint32_t timeout_ms;
    int64_t check_interval_ms;
    sw__grpc_cancel_t fetch_cancel;
    sw__periodic_t *fetch_thread;

    /* The fetch thread's. */
    sw__grpc_conn_t *fetch_conn;
    int64_t last_create_ms;
    sw__profile_task_t tasks[TASK_RING];
    unsigned next_task;
    char seen[SEEN_MAX][SW__PROFILE_TASK_ID_MAX];
    unsigned seen_next;
    const sw__profile_task_t *running; /* its sampling thread runs */
    const sw__profile_task_t *waiting; /* starts when `running` is done */
    sw__periodic_t *sample_thread;

    /* The sampling thread's (one at a time; the fetch thread starts it after setting these). */
    bool started, done_local;
    /* Set by the sampling thread when its task is over (release); the fetch thread's acquire
       load then joins it. */
    _Atomic bool done;
};

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the sampling thread ----------------------------------------------------------------- */

static void task_over(sw__profiler_t *p, const sw__profile_task_t *t, bool sampled)
{
    if (sampled) {
        sw__profile_sampler_stop(sw__profile_sender_add, &p->sender);
        sw__profile_signal_restore();
    }
    sw__profile_sender_flush(&p->sender);
    sw__profile_sender_finish(&p->sender, t->task_id);
    p->done_local = true;
    char esc[SW__LOG_ESCAPED_SIZE];
    sw__log(SW_LOG_INFO, "profile task '%s' finished: %llu snapshots sent, %llu dropped",
            SW__LOG_ESC(esc, t->task_id), (unsigned long long)p->sender.sent,
            (unsigned long long)p->sender.dropped);
    /* release: everything above before the fetch thread joins us (acquire). */
    atomic_store_explicit(&p->done, true, memory_order_release);
}

static void sample_run(void *arg)
{
    sw__profiler_t *p = arg;
    const sw__profile_task_t *t = p->running;
    if (p->done_local) {
        return;
    }
    int64_t now = wall_ms();
    if (now < t->start_ms) {
        return;
    }
    char esc[SW__LOG_ESCAPED_SIZE], eesc[SW__LOG_ESCAPED_SIZE];
    if (!p->started) {
        p->started = true;
        if (sw__profile_signal_install() != 0) {
            sw__log(SW_LOG_ERROR,
                    "profile task '%s' not run: the program has its own handler for signal "
                    "SIGRTMIN+6, which the profiler needs; it is left alone",
                    SW__LOG_ESC(esc, t->task_id));
            task_over(p, t, false);
            return;
        }
        sw__profile_sampler_start(t);
        sw__log(SW_LOG_INFO, "profile task '%s' started: endpoint '%s', every %u ms after %u ms",
                SW__LOG_ESC(esc, t->task_id), SW__LOG_ESC(eesc, t->endpoint), t->dump_period_ms,
                t->min_duration_ms);
    }
    if (now >= t->end_ms) {
        task_over(p, t, true);
        return;
    }
    sw__profile_sampler_tick(now, sw__profile_sender_add, &p->sender);
    sw__profile_sender_maybe_flush(&p->sender, now);
}

static void sample_interrupt(void *arg)
{
    sw__profiler_t *p = arg;
    sw__profile_sender_cancel(&p->sender);
}

/* ---- the fetch thread -------------------------------------------------------------------- */

static void task_start(sw__profiler_t *p, const sw__profile_task_t *t)
{
    p->running = t;
    p->started = false;
    p->done_local = false;
    atomic_store_explicit(&p->done, false, memory_order_relaxed);
    sw__profile_sender_reset(&p->sender, t->task_id);
    if (sw__periodic_start("sw-prof-sample", t->dump_period_ms, SW__PERIODIC_AT_START, sample_run,
                           sample_interrupt, p, &p->sample_thread) != 0) {
        char esc[SW__LOG_ESCAPED_SIZE];
        sw__log(SW_LOG_ERROR, "profile task '%s' not run: cannot start its sampling thread",
                SW__LOG_ESC(esc, t->task_id));
        p->running = NULL;
        p->sample_thread = NULL;
    }
}

/* Joins the sampling thread of a task that is over; starts the waiting task. */
static void task_reap(sw__profiler_t *p)
{
    if (p->sample_thread != NULL && atomic_load_explicit(&p->done, memory_order_acquire)) {
        sw__periodic_stop(p->sample_thread);
        p->sample_thread = NULL;
        p->running = NULL;
    }
    /* A task starts its sampling thread one fetch period before its time, not earlier: the
       thread wakes every dump period. */
    if (p->running == NULL && p->waiting != NULL &&
        wall_ms() >= p->waiting->start_ms - p->check_interval_ms) {
        const sw__profile_task_t *w = p->waiting;
        p->waiting = NULL;
        task_start(p, w);
    }
}

static bool overlaps(const sw__profile_task_t *a, const sw__profile_task_t *b)
{
    return b != NULL && a->start_ms < b->end_ms && b->start_ms < a->end_ms;
}

/* Takes one checked task: refuses a repeated id, an overlap, a second waiting one; else it waits
   and task_reap starts it when nothing runs and its start is one fetch period away or less. */
static void task_take(sw__profiler_t *p, const sw__profile_task_t *t)
{
    char esc[SW__LOG_ESCAPED_SIZE];
    for (unsigned i = 0; i < SEEN_MAX; i++) {
        if (strcmp(p->seen[i], t->task_id) == 0) {
            sw__log(SW_LOG_WARN, "profile task '%s' refused: this task id was received before",
                    SW__LOG_ESC(esc, t->task_id));
            return;
        }
    }
    char *slot = p->seen[p->seen_next++ % SEEN_MAX];
    size_t n = strnlen(t->task_id, SW__PROFILE_TASK_ID_MAX - 1);
    memcpy(slot, t->task_id, n);
    slot[n] = '\0';
    const sw__profile_task_t *other = overlaps(t, p->running) ? p->running : p->waiting;
    if (overlaps(t, other)) {
        char oesc[SW__LOG_ESCAPED_SIZE];
        sw__log(SW_LOG_WARN, "profile task '%s' refused: its time overlaps task '%s'",
                SW__LOG_ESC(esc, t->task_id), SW__LOG_ESC(oesc, other->task_id));
        return;
    }
    if (p->waiting != NULL) {
        sw__log(SW_LOG_WARN, "profile task '%s' refused: another task is already waiting",
                SW__LOG_ESC(esc, t->task_id));
        return;
    }
    sw__profile_task_t *rec = &p->tasks[p->next_task++ % TASK_RING];
    *rec = *t;
    p->waiting = rec;
    task_reap(p); /* starts it now when nothing runs and its time is near */
}

static void fetch_run(void *arg)
{
    sw__profiler_t *p = arg;
    task_reap(p);
    grpc_channel *ch = sw__grpc_conn_acquire(p->fetch_conn);
    if (ch == NULL) {
        return; /* backing off */
    }
    Skywalking__V3__ProfileTaskCommandQuery q = SKYWALKING__V3__PROFILE_TASK_COMMAND_QUERY__INIT;
    q.service = p->service;
    q.serviceinstance = p->instance;
    q.lastcommandtime = p->last_create_ms;
    uint8_t buf[2 * SW_CONFIG_NAME_MAX + 32];
    size_t len = skywalking__v3__profile_task_command_query__pack(&q, buf);
    sw__report_record_t msg = {.segment_id = NULL, .data = buf, .len = len};
    sw__grpc_result_t res;
    sw__grpc_call_run(ch, sw__grpc_conn_queue(p->fetch_conn), METHOD_TASKS, &msg, 1, p->token,
                      p->timeout_ms, &p->fetch_cancel, &res);
    sw__grpc_conn_outcome(p->fetch_conn, res.status, res.details);
    if (res.status == GRPC_STATUS_OK && res.response != NULL) {
        sw__profile_task_t tasks[4];
        int n = sw__profile_tasks_parse(res.response, res.response_len, wall_ms(), tasks, 4,
                                        &p->last_create_ms);
        for (int i = 0; i < n; i++) {
            task_take(p, &tasks[i]);
        }
    } else if (sw__profile_status_worth_logging(res.status)) {
        (void)sw__grpc_notices_status(&p->notices, res.status, res.details,
                                      "getProfileTaskCommands", sw__grpc_conn_target(p->fetch_conn),
                                      p->token[0] != '\0');
    }
    free(res.response);
}

static void fetch_interrupt(void *arg)
{
    sw__profiler_t *p = arg;
    sw__grpc_cancel_fire(&p->fetch_cancel);
}

/* ---- start and stop ---------------------------------------------------------------------- */

static void profiler_free(sw__profiler_t *p)
{
    sw__grpc_conn_destroy(p->fetch_conn);
    sw__grpc_cancel_destroy(&p->fetch_cancel);
    sw__profile_sender_destroy(&p->sender);
    sw__grpc_notices_destroy(&p->notices);
    sw__config_secret_wipe(p->token, sizeof p->token);
    /* The slots stay for the next run (sw__profile_sampler_destroy says why). */
    free(p);
    grpc_shutdown(); /* pairs with grpc_init in start */
}

int sw__profiler_start(const sw_config_t *cfg, sw__profile_current_fn current, sw__profiler_t **out,
                       char *errbuf, size_t errlen)
{
    *out = NULL;
    if (!cfg->profile_active || strcmp(cfg->reporter, "grpc") != 0) {
        return 0;
    }
    int rc = sw__profile_sampler_init(cfg->profile_max_parallel, cfg->profile_dump_max_stack_depth,
                                      current);
    if (rc != 0) {
        swc__errbuf_printf(errbuf, errlen, "profiling: cannot allocate the sample buffers");
        return rc;
    }
    sw__profiler_t *p = calloc(1, sizeof *p);
    if (p == NULL) {
        return SW_ENOMEM;
    }
    grpc_init(); /* reference counted; released in profiler_free */
    snprintf(p->service, sizeof p->service, "%s", cfg->service_name);
    snprintf(p->instance, sizeof p->instance, "%s", cfg->instance_name);
    memcpy(p->token, cfg->authentication, sizeof p->token);
    p->token[sizeof p->token - 1] = '\0';
    p->timeout_ms = cfg->grpc_timeout_ms ? cfg->grpc_timeout_ms : 10000;
    p->check_interval_ms = (int64_t)cfg->profile_check_interval_s * 1000;
    sw__grpc_notices_init(&p->notices);
    sw__grpc_cancel_init(&p->fetch_cancel);
    rc = sw__profile_sender_init(&p->sender, cfg, &p->notices, cfg->profile_dump_max_stack_depth,
                                 errbuf, errlen);
    if (rc == 0) {
        rc = sw__grpc_conn_create(cfg, "profile tasks", &p->fetch_conn, errbuf, errlen);
    }
    if (rc == 0) {
        rc = sw__periodic_start("sw-profile", cfg->profile_check_interval_s * 1000u,
                                SW__PERIODIC_AT_START, fetch_run, fetch_interrupt, p,
                                &p->fetch_thread);
        if (rc != 0) {
            swc__errbuf_printf(errbuf, errlen, "cannot start the profiler's thread");
        }
    }
    if (rc != 0) {
        profiler_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

void sw__profiler_stop(sw__profiler_t *p)
{
    if (p == NULL) {
        return;
    }
    sw__periodic_stop(p->fetch_thread); /* no task starts from here on */
    if (p->sample_thread != NULL) {
        sw__periodic_stop(p->sample_thread);
        if (p->started && !p->done_local) {
            sw__profile_sampler_stop(NULL, NULL);
            sw__profile_signal_restore();
        }
    }
    profiler_free(p);
}

void sw__profiler_after_fork_child(void)
{
    atomic_store_explicit(&sw__profile_task_now, NULL, memory_order_relaxed);
}
