/*
 * grpc_reporter.c - the gRPC reporter object: report/flush/close and its accounting.
 */
#include "grpc_reporter.h"

#include <grpc/grpc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../config/config.h"
#include "cds.h"
#include "grpc_loss.h"
#include "grpc_reporter_call.h"
#include "grpc_reporter_channel.h"
#include "grpc_reporter_commands.h"
#include "grpc_reporter_logs.h"
#include "grpc_reporter_management.h"
#include "swc_errbuf.h"

#define METHOD_COLLECT "/skywalking.v3.TraceSegmentReportService/collect"
#define METHOD_METERS  "/skywalking.v3.MeterReportService/collect"

typedef struct grpc_reporter {
    sw__reporter_t base;
    sw__grpc_conn_t *conn; /* consumer thread only (close() after the consumer stopped) */
    sw__grpc_management_t *management;
    sw__grpc_logs_t *logs;      /* the log sender thread's (grpc_reporter_logs.h) */
    sw__grpc_notices_t notices; /* shared with the management thread; has its own lock */
    uint32_t timeout_ms;
    char token[SW_CONFIG_NAME_MAX]; /* read-only after create */
    sw__grpc_conn_t *meter_conn;    /* the meter thread's own (report_meters) */
    sw__grpc_cancel_t meter_cancel; /* fired by shutdown_begin: a meter stream ends at once */
    sw__cds_t *cds;                 /* configuration discovery, NULL when off */
    sw__grpc_loss_t loss;           /* the consumer thread's, like conn (grpc_loss.h) */
} grpc_reporter_t;

/* Adds the outcome of `count` records. release: partner of sw_stats' acquire loads
   (reporter.h). */
static void outcome_count(sw__reporter_t *self, size_t count, bool ok)
{
    atomic_fetch_add_explicit(ok ? &self->counters->reported : &self->counters->failed, count,
                              memory_order_release);
}

static void grpc_report(sw__reporter_t *self, const sw__report_record_t *records, size_t count)
{
    grpc_reporter_t *r = (grpc_reporter_t *)self;
    /* While the connection backs off this fails at once, so the consumer keeps draining. */
    grpc_status_code status = sw__grpc_stream_run(r->conn, &r->notices, METHOD_COLLECT, "collect",
                                                  records, count, r->token, r->timeout_ms);
    outcome_count(self, count, status == GRPC_STATUS_OK);
    (void)sw__grpc_loss_note(&r->loss, status, count, sw__grpc_conn_target(r->conn));
}

/* One MeterReportService/collect stream per period. Meter thread only. */
static int grpc_report_meters(sw__reporter_t *self, const sw__report_record_t *items, size_t count)
{
    grpc_reporter_t *r = (grpc_reporter_t *)self;
    grpc_channel *ch = sw__grpc_conn_acquire(r->meter_conn);
    if (ch == NULL) {
        return SW_EIO; /* backing off */
    }
    sw__grpc_result_t res;
    sw__grpc_call_run(ch, sw__grpc_conn_queue(r->meter_conn), METHOD_METERS, items, count, r->token,
                      r->timeout_ms, &r->meter_cancel, &res);
    sw__grpc_conn_outcome(r->meter_conn, res.status, res.details);
    if (res.status == GRPC_STATUS_OK && res.response != NULL) {
        (void)sw__grpc_notices_commands(&r->notices, res.response, res.response_len,
                                        "MeterReportService/collect");
    } else if (res.status != GRPC_STATUS_OK && res.status != GRPC_STATUS_CANCELLED) {
        (void)sw__grpc_notices_status(&r->notices, res.status, res.details,
                                      "MeterReportService/collect",
                                      sw__grpc_conn_target(r->meter_conn), r->token[0] != '\0');
    }
    free(res.response);
    return res.status == GRPC_STATUS_OK ? 0 : SW_EIO;
}

static void grpc_shutdown_begin(sw__reporter_t *self)
{
    grpc_reporter_t *r = (grpc_reporter_t *)self;
    sw__grpc_cancel_fire(&r->meter_cancel);
}

static int grpc_flush(sw__reporter_t *self)
{
    (void)self; /* every batch is sent and answered inside report(): nothing is buffered */
    return 0;
}

static void grpc_report_logs(sw__reporter_t *self, const sw__report_record_t *records, size_t count,
                             sw__report_counters_t *outcomes)
{
    sw__grpc_logs_send(((grpc_reporter_t *)self)->logs, records, count, outcomes);
}

static int grpc_report_events(sw__reporter_t *self, const sw__report_record_t *records,
                              size_t count)
{
    return sw__grpc_events_send(((grpc_reporter_t *)self)->logs, records, count);
}

static void reporter_free(grpc_reporter_t *r)
{
    sw__grpc_logs_destroy(r->logs);
    sw__grpc_management_stop(r->management);
    sw__cds_stop(r->cds);
    sw__grpc_conn_destroy(r->conn);
    sw__grpc_conn_destroy(r->meter_conn);
    sw__grpc_cancel_destroy(&r->meter_cancel);
    sw__grpc_notices_destroy(&r->notices);
    sw__config_secret_wipe(r->token, sizeof r->token);
    free(r);
    grpc_shutdown(); /* pairs with grpc_init in create */
}

/* The process that last called grpc_init here (0: none). A forked child inherits it with the
   parent's gRPC state; written and read by sw_init only (its lifecycle lock held). */
static pid_t grpc_owner;

static void grpc_close(sw__reporter_t *self)
{
    reporter_free((grpc_reporter_t *)self);
}

int sw__grpc_reporter_create(const sw_config_t *cfg, sw__report_counters_t *counters,
                             sw__reporter_t **out, char *errbuf, size_t errlen)
{
    if (cfg->backend_services[0] == '\0') {
        swc__errbuf_printf(errbuf, errlen,
                           "SW_REPORTER=grpc needs SW_AGENT_COLLECTOR_BACKEND_SERVICES "
                           "(e.g. 127.0.0.1:11800)");
        return SW_ECONFIG;
    }
    if (grpc_owner != 0 && grpc_owner != getpid() && grpc_is_initialized()) {
        /* gRPC core's threads (timers, executor, event engine) do not exist in a forked child,
           and its epoll set is shared with the parent: a child that used it could hang, and
           could make the parent read events of the child's sockets (and crash). gRPC's own fork
           support does not help with Debian's gRPC 1.51: grpc_prefork skips its work while
           another thread is inside gRPC (the reporter's threads wait in calls), and even with
           every agent thread held out of gRPC around fork (GRPC_ENABLE_FORK_SUPPORT=1, the
           handlers called by their C++ names) the event engine's fork handlers are compiled
           out, so a child's new channels never connect (tried: DEADLINE_EXCEEDED). */
        swc__errbuf_printf(errbuf, errlen,
                           "SW_REPORTER=grpc: this process was forked from one whose agent runs "
                           "gRPC, which cannot be used after fork; a forked child of a traced "
                           "process can report with SW_REPORTER=kafka or file");
        return SW_ENOTSUP;
    }
    grpc_reporter_t *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return SW_ENOMEM;
    }
    grpc_init(); /* reference counted; released by grpc_shutdown in reporter_free */
    grpc_owner = getpid();
    sw__grpc_notices_init(&r->notices);
    r->timeout_ms = cfg->grpc_timeout_ms ? cfg->grpc_timeout_ms : 10000;
    memcpy(r->token, cfg->authentication, sizeof r->token);
    r->token[sizeof r->token - 1] = '\0';
    sw__grpc_cancel_init(&r->meter_cancel);
    int rc = sw__grpc_conn_create(cfg, "segments", &r->conn, errbuf, errlen);
    if (rc == 0) {
        rc = sw__grpc_management_start(cfg, &r->notices, &r->management, errbuf, errlen);
    }
    if (rc == 0) {
        rc = sw__grpc_conn_create(cfg, "meters", &r->meter_conn, errbuf, errlen);
    }
    if (rc == 0 && cfg->cds_interval_s != 0) {
        rc = sw__cds_start(cfg, &r->notices, &r->cds, errbuf, errlen);
    }
    if (rc == 0) {
        rc = sw__grpc_logs_create(cfg, &r->notices, &r->logs, errbuf, errlen);
    }
    if (rc != 0) {
        reporter_free(r);
        return rc;
    }
    r->base.name = "grpc";
    r->base.counters = counters;
    r->base.report = grpc_report;
    r->base.flush = grpc_flush;
    r->base.close = grpc_close;
    r->base.shutdown_begin = grpc_shutdown_begin;
    r->base.report_meters = grpc_report_meters;
    r->base.report_logs = grpc_report_logs;
    r->base.report_events = grpc_report_events;
    *out = &r->base;
    return 0;
}
