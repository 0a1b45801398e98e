/*
 * profile_snapshot.h - samples to ThreadSnapshot messages, and their stream to the OAP
 * (internal): the sampling thread's half of the profiler.
 *
 * A sample's frames are symbolized here (symbol/symbolizer.h; the return addresses as
 * address - 1), cut to SW_AGENT_PROFILE_DUMP_MAX_STACK_DEPTH, and written outermost first, the
 * running function last, as the Java agent orders its code signatures. The packed messages wait
 * in a bounded queue (SW__PROFILE_QUEUE_MAX; more are dropped and counted) for one
 * collectSnapshot stream per flush.
 *
 * Threads: the sampling thread only (one task's at a time); cancel from the stopping thread.
 */
#ifndef SW_PROFILE_PROFILE_SNAPSHOT_H
#define SW_PROFILE_PROFILE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../grpc/grpc_reporter_call.h"
#include "../grpc/grpc_reporter_channel.h"
#include "../grpc/grpc_reporter_commands.h"
#include "../report/reporter.h"
#include "../symbol/symbolizer.h"
#include "profile_sampler.h"
#include "profile_task.h"
#include "skywalking.h"

/* Snapshots waiting to be sent, at most (the Java agent's profile.snapshot_transport_buffer_size).
 */
#define SW__PROFILE_QUEUE_MAX 500
/* What the symbolizer may keep (modules, symbol tables, DWARF, frame strings). */
#define SW__PROFILE_SYMBOLIZER_BYTES (64u << 20)
/* Bytes of one frame string kept (longer ones are cut). */
#define SW__PROFILE_FRAME_MAX 256
/* Snapshots that trigger a flush, and the longest a snapshot waits (ms). */
#define SW__PROFILE_FLUSH_COUNT 32
#define SW__PROFILE_FLUSH_MS    1000

typedef struct sw__profile_sender {
    sw__grpc_conn_t *conn;
    sw__grpc_notices_t *notices;
    sw__symbolizer_t *symbolizer;
    sw__grpc_cancel_t cancel; /* fired by the stopping thread */
    char service[SW_CONFIG_NAME_MAX];
    char instance[SW_CONFIG_NAME_MAX];
    char token[SW_CONFIG_NAME_MAX];
    uint32_t timeout_ms;
    uint32_t depth;
    char *text;  /* depth frames of SW__PROFILE_FRAME_MAX bytes */
    char **sigs; /* depth pointers into text, outermost first */
    char task_id[SW__PROFILE_TASK_ID_MAX];
    sw__report_record_t queue[SW__PROFILE_QUEUE_MAX];
    size_t queued;
    int64_t last_flush_ms;
    uint64_t sent, dropped; /* this task's snapshots */
} sw__profile_sender_t;

/* Opens its connection and symbolizer for cfg; frames of at most `depth`. Returns 0,
   SW_ECONFIG (errbuf), SW_ENOMEM. */
int sw__profile_sender_init(sw__profile_sender_t *s, const sw_config_t *cfg,
                            sw__grpc_notices_t *notices, uint32_t depth, char *errbuf,
                            size_t errlen);
void sw__profile_sender_destroy(sw__profile_sender_t *s);

/* Before a task's sampling thread starts: its id, counters zero, the cancel re-armed. */
void sw__profile_sender_reset(sw__profile_sender_t *s, const char *task_id);

/* Symbolizes one sample into a queued ThreadSnapshot (a sampler callback; arg is the sender). */
void sw__profile_sender_add(const sw__profile_sample_t *sample, void *arg);

/* Sends the queue when it holds SW__PROFILE_FLUSH_COUNT or waited SW__PROFILE_FLUSH_MS. */
void sw__profile_sender_maybe_flush(sw__profile_sender_t *s, int64_t now_ms);

/* Sends the queue (one collectSnapshot stream); on failure the snapshots are dropped, counted. */
void sw__profile_sender_flush(sw__profile_sender_t *s);

/* reportTaskFinish for `task_id`. */
void sw__profile_sender_finish(sw__profile_sender_t *s, const char *task_id);

/* Cancels a call in flight and every later one until the next reset. Any thread. */
void sw__profile_sender_cancel(sw__profile_sender_t *s);

/* Whether a failed profile call's status is the profiler's to log (the reporter logs a rejected
   token). */
bool sw__profile_status_worth_logging(grpc_status_code status);

#endif /* SW_PROFILE_PROFILE_SNAPSHOT_H */
