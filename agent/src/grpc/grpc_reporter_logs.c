/*
 * grpc_reporter_logs.c - LogReportService/collect and EventService/collect calls of the gRPC
 * reporter. See grpc_reporter_logs.h.
 */
#include "grpc_reporter_logs.h"

#include <grpc/grpc.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "grpc_reporter_call.h"
#include "grpc_reporter_channel.h"

#define METHOD_LOGS   "/skywalking.v3.LogReportService/collect"
#define METHOD_EVENTS "/skywalking.v3.EventService/collect"

struct sw__grpc_logs {
    sw__grpc_conn_t *conn; /* the log sender's own; only it touches it */
    sw__grpc_notices_t *notices;
    uint32_t timeout_ms;
    char token[SW_CONFIG_NAME_MAX]; /* read-only after create */
};

int sw__grpc_logs_create(const sw_config_t *cfg, sw__grpc_notices_t *notices, sw__grpc_logs_t **out,
                         char *errbuf, size_t errlen)
{
    sw__grpc_logs_t *l = calloc(1, sizeof *l);
    if (l == NULL) {
        return SW_ENOMEM;
    }
    l->notices = notices;
    l->timeout_ms = cfg->grpc_timeout_ms ? cfg->grpc_timeout_ms : 10000;
    memcpy(l->token, cfg->authentication, sizeof l->token);
    l->token[sizeof l->token - 1] = '\0';
    int rc = sw__grpc_conn_create(cfg, "logs", &l->conn, errbuf, errlen);
    if (rc != 0) {
        sw__config_secret_wipe(l->token, sizeof l->token);
        free(l);
        return rc;
    }
    *out = l;
    return 0;
}

grpc_status_code sw__grpc_stream_run(sw__grpc_conn_t *conn, sw__grpc_notices_t *notices,
                                     const char *method, const char *origin,
                                     const sw__report_record_t *records, size_t count,
                                     const char *token, uint32_t timeout_ms)
{
    grpc_channel *ch = sw__grpc_conn_acquire(conn);
    if (ch == NULL) { /* backing off: fail fast, the caller keeps draining */
        return GRPC_STATUS_UNAVAILABLE;
    }
    sw__grpc_result_t res;
    sw__grpc_call_run(ch, sw__grpc_conn_queue(conn), method, records, count, token, timeout_ms,
                      NULL, &res);
    sw__grpc_conn_outcome(conn, res.status, res.details);
    if (res.status == GRPC_STATUS_OK) {
        if (res.response != NULL) {
            (void)sw__grpc_notices_commands(notices, res.response, res.response_len, origin);
        }
    } else {
        (void)sw__grpc_notices_status(notices, res.status, res.details, origin,
                                      sw__grpc_conn_target(conn), token[0] != '\0');
    }
    free(res.response);
    return res.status;
}

static bool stream_run(sw__grpc_logs_t *l, const char *method, const char *origin,
                       const sw__report_record_t *records, size_t count)
{
    return sw__grpc_stream_run(l->conn, l->notices, method, origin, records, count, l->token,
                               l->timeout_ms) == GRPC_STATUS_OK;
}

void sw__grpc_logs_send(sw__grpc_logs_t *l, const sw__report_record_t *records, size_t count,
                        sw__report_counters_t *outcomes)
{
    bool ok = stream_run(l, METHOD_LOGS, "LogReportService/collect", records, count);
    /* release: partner of sw_stats' acquire loads (reporter.h). */
    atomic_fetch_add_explicit(ok ? &outcomes->reported : &outcomes->failed, count,
                              memory_order_release);
}

int sw__grpc_events_send(sw__grpc_logs_t *l, const sw__report_record_t *records, size_t count)
{
    return stream_run(l, METHOD_EVENTS, "EventService/collect", records, count) ? 0 : SW_EIO;
}

void sw__grpc_logs_destroy(sw__grpc_logs_t *l)
{
    if (l == NULL) {
        return;
    }
    sw__grpc_conn_destroy(l->conn);
    sw__config_secret_wipe(l->token, sizeof l->token);
    free(l);
}
