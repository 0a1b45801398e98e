/*
 * grpc_reporter_logs.h - the gRPC reporter's log and event calls (internal):
 *
 *   logs    one skywalking.v3.LogReportService/collect client stream per batch of LogData;
 *           status OK counts the batch as reported, anything else as failed
 *   events  one skywalking.v3.EventService/collect client stream per batch of Event (Start,
 *           Shutdown); a failure is logged (once per status code, with the other notices)
 *
 * Both run on the log sender thread (applog/log_report.h) over a connection of their own
 * (role "logs"), so a slow log call never delays segments or the heartbeat; the connection
 * fails over and backs off like the others (grpc_reporter_channel.h): while it backs off, a
 * batch fails at once instead of blocking the sender.
 */
#ifndef SW_GRPC_GRPC_REPORTER_LOGS_H
#define SW_GRPC_GRPC_REPORTER_LOGS_H

#include <stddef.h>

#include "grpc_reporter_channel.h"
#include "grpc_reporter_commands.h"
#include "../report/reporter.h"
#include "skywalking.h"

typedef struct sw__grpc_logs sw__grpc_logs_t;

/*
 * One client stream of records[0..count) on `conn` (the segment and log reporters' shared
 * step): the channel (none while the connection backs off: UNAVAILABLE at once, no call),
 * the call under timeout_ms with `token` as `authentication` when non-empty, the outcome for
 * the connection's failover, the answer's Commands or a bad status to `notices` under
 * `origin`. Returns the status. Blocks the calling thread for the call; the thread that owns
 * `conn` only.
 */
grpc_status_code sw__grpc_stream_run(sw__grpc_conn_t *conn, sw__grpc_notices_t *notices,
                                     const char *method, const char *origin,
                                     const sw__report_record_t *records, size_t count,
                                     const char *token, uint32_t timeout_ms);

/* Opens the "logs" connection. `notices` must outlive it. Returns 0 and *out, SW_ECONFIG
   (message in errbuf) or SW_ENOMEM. grpc_init() must have been called. */
int sw__grpc_logs_create(const sw_config_t *cfg, sw__grpc_notices_t *notices, sw__grpc_logs_t **out,
                         char *errbuf, size_t errlen);

/* Sends LogData records, counting each once in *outcomes. Log sender thread only. */
void sw__grpc_logs_send(sw__grpc_logs_t *l, const sw__report_record_t *records, size_t count,
                        sw__report_counters_t *outcomes);

/* Sends Event records. Returns 0 (status OK) or SW_EIO. Log sender thread only (or
   sw_shutdown's after it was joined). */
int sw__grpc_events_send(sw__grpc_logs_t *l, const sw__report_record_t *records, size_t count);

/* Frees everything; no call may be in flight. NULL is fine. */
void sw__grpc_logs_destroy(sw__grpc_logs_t *l);

#endif /* SW_GRPC_GRPC_REPORTER_LOGS_H */
