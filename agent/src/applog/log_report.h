/*
 * log_report.h - the application-log and event path to the OAP (internal):
 *
 *   app thread: sw_log / sw_log_kv / the syslog hook (core/app_log.c)
 *       encode LogData on the calling thread into one malloc'd item,
 *       dc_produce(item) --"sw-logs" DataCarrier (IF_POSSIBLE, SW_LOG_QUEUE_SIZE slots)-->
 *   log sender thread (the carrier's one consumer):
 *       reporter->report_logs(batch)    gRPC LogReportService/collect, or Kafka skywalking-logs
 *       reporter->report_events(batch)  gRPC EventService/collect (Start, Shutdown)
 *
 * This is not the agent's diagnostics path (agent/src/log, sw__log): that one only ever
 * writes to the host's stderr or log handler. Nothing here calls sw__log on an application
 * thread.
 *
 * Lifetime: sw__log_pipeline_start is called by sw__pipeline_start once the reporter is open;
 * when the reporter has a log path (report_logs) it starts the sender and queues the Start
 * event, otherwise lines are refused with SW_ENOTSUP.
 * sw__log_pipeline_stop, called before the reporter is closed, makes new lines fail with
 * SW_ESTATE, waits for the callers already inside sw__log_pipeline_produce (they never block,
 * so the wait is short), drains the queue, sends the Shutdown event and frees everything.
 * An application thread may call sw__log_pipeline_produce at any time, also while the
 * pipeline stops (the `users` count in log_report.c makes that safe).
 *
 * Accounting (sw_stats logs_*): every item produced while running counts as recorded, and
 * exactly once as reported, dropped or failed by the time sw__log_pipeline_stop returns.
 */
#ifndef SW_APPLOG_LOG_REPORT_H
#define SW_APPLOG_LOG_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "../encode/pb_reverse.h"
#include "../report/reporter.h"
#include "skywalking.h"

typedef enum { SW__LOG_ITEM_LOG = 0, SW__LOG_ITEM_EVENT = 1 } sw__log_item_kind_t;

/* One queued message: packed LogData or Event bytes in the same allocation. */
typedef struct sw__log_item {
    uint32_t kind; /* sw__log_item_kind_t */
    uint32_t len;
    const uint8_t *data; /* inside this allocation */
} sw__log_item_t;

/* Completes an item whose message the reverse writer `w` wrote just below `end` (the end of
   the writer's area inside the item's allocation): sets kind, data and len. When the writer
   overflowed (its caller's size bound was wrong) frees the item and returns NULL. */
sw__log_item_t *sw__log_item_finish(sw__log_item_t *it, const sw__pbr_t *w, const uint8_t *end,
                                    uint32_t kind);

/* What an application thread needs to encode a line: read-only while the pipeline runs. */
typedef struct sw__log_settings {
    const char *service;
    const char *instance;
    uint32_t max_message_size;
} sw__log_settings_t;

/*
 * Creates the carrier, starts the log sender thread and queues the Start event. `cfg` and
 * `reporter` must outlive the pipeline (until sw__log_pipeline_stop). Returns 0, SW_ENOMEM,
 * SW_ETHREAD or SW_ECONFIG (message in errbuf); nothing is left running on error.
 */
int sw__log_pipeline_start(const sw_config_t *cfg, sw__reporter_t *reporter, char *errbuf,
                           size_t errlen);

/* Drains, sends the Shutdown event, stops the thread and frees (see above). Blocks until the
   sender is joined: bounded by the reporter's timeouts. Idempotent. sw_shutdown's thread. */
void sw__log_pipeline_stop(void);

/*
 * Hands one item over. `build` is called with the settings while the pipeline is guaranteed
 * to stay alive, and returns a malloc'd item (NULL: out of memory, counted as dropped) and
 * sets *truncated. Returns 0; SW_ESTATE (no pipeline: build is not called, nothing counted);
 * SW_ELIMIT (queue full) or SW_ENOMEM (counted recorded and dropped). Never blocks. Any
 * thread.
 */
int sw__log_pipeline_produce(sw__log_item_t *(*build)(const sw__log_settings_t *s, void *arg,
                                                      bool *truncated),
                             void *arg);

/* In a forked child (sw__agent_after_fork_child): abandons the parent's pipeline, so sw_log
   says SW_ESTATE until the child's own sw_init. Child only, single-threaded. */
void sw__log_pipeline_after_fork_child(void);

/* Adds the logs_* counters of the current or last run to *st. Any thread. */
void sw__log_report_stats(sw_stats_t *st);

/*
 * Packs a Start or Shutdown Event (event_report.c) for cfg's service and instance into a new
 * item: uuid v4, name, type Normal, message, parameter OPTS (the agent's settings that differ
 * from the defaults, secrets not shown; Start only), startTime, endTime (ms), layer GENERAL.
 * Returns NULL when out of memory.
 */
sw__log_item_t *sw__event_item_new(const sw_config_t *cfg, bool start, int64_t start_ms,
                                   int64_t end_ms);

/* When this process started (ms since the epoch, from /proc/self/stat and the boot time),
   or the current time when that cannot be read. Any thread. */
int64_t sw__process_start_ms(void);

#endif /* SW_APPLOG_LOG_REPORT_H */
