/*
 * grpc_reporter.c - the gRPC reporter object: report/flush/close and its accounting.
 */
#include "grpc_reporter.h"

#include <grpc/grpc.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "grpc_reporter_call.h"
#include "grpc_reporter_channel.h"
#include "grpc_reporter_commands.h"
#include "grpc_reporter_management.h"
#include "swc_errbuf.h"

#define METHOD_COLLECT "/skywalking.v3.TraceSegmentReportService/collect"

typedef struct grpc_reporter {
    sw__reporter_t base;
    sw__grpc_conn_t *conn; /* consumer thread only (close() after the consumer stopped) */
    sw__grpc_management_t *management;
    sw__grpc_notices_t notices; /* shared with the management thread; has its own lock */
    uint32_t timeout_ms;
    char token[SW_CONFIG_NAME_MAX]; /* read-only after create */
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
    grpc_channel *ch = sw__grpc_conn_acquire(r->conn);
    if (ch == NULL) { /* backing off: fail fast, the consumer keeps draining */
        outcome_count(self, count, false);
        return;
    }
    sw__grpc_result_t res;
    sw__grpc_call_run(ch, sw__grpc_conn_queue(r->conn), METHOD_COLLECT, records, count, r->token,
                      r->timeout_ms, NULL, &res);
    sw__grpc_conn_outcome(r->conn, res.status, res.details);
    if (res.status == GRPC_STATUS_OK) {
        if (res.response != NULL) {
            (void)sw__grpc_notices_commands(&r->notices, res.response, res.response_len, "collect");
        }
    } else {
        (void)sw__grpc_notices_status(&r->notices, res.status, res.details, "collect",
                                      sw__grpc_conn_target(r->conn), r->token[0] != '\0');
    }
    free(res.response);
    outcome_count(self, count, res.status == GRPC_STATUS_OK);
}

static int grpc_flush(sw__reporter_t *self)
{
    (void)self; /* every batch is sent and answered inside report(): nothing is buffered */
    return 0;
}

static void reporter_free(grpc_reporter_t *r)
{
    sw__grpc_management_stop(r->management);
    sw__grpc_conn_destroy(r->conn);
    sw__grpc_notices_destroy(&r->notices);
    free(r);
    grpc_shutdown(); /* pairs with grpc_init in create */
}

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
    grpc_reporter_t *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return SW_ENOMEM;
    }
    grpc_init(); /* reference counted; released by grpc_shutdown in reporter_free */
    sw__grpc_notices_init(&r->notices);
    r->timeout_ms = cfg->grpc_timeout_ms ? cfg->grpc_timeout_ms : 10000;
    memcpy(r->token, cfg->authentication, sizeof r->token);
    r->token[sizeof r->token - 1] = '\0';
    int rc = sw__grpc_conn_create(cfg, "segments", &r->conn, errbuf, errlen);
    if (rc == 0) {
        rc = sw__grpc_management_start(cfg, &r->notices, &r->management, errbuf, errlen);
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
    *out = &r->base;
    return 0;
}
