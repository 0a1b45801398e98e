/*
 * grpc_reporter_management.c - InstanceProperties and keep-alives over ManagementService.
 */
#include "grpc_reporter_management.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "grpc_reporter_call.h"
#include "grpc_reporter_channel.h"
#include "../encode/instance_properties.h"
#include "../util/periodic.h"
#include "swc_errbuf.h"

#define METHOD_PROPERTIES "/skywalking.v3.ManagementService/reportInstanceProperties"
#define METHOD_PING       "/skywalking.v3.ManagementService/keepAlive"

struct sw__grpc_management {
    /* Set before the thread starts, read-only afterwards. */
    sw__grpc_notices_t *notices;
    sw__grpc_conn_t *conn; /* the management thread's own; only it touches it */
    char token[SW_CONFIG_NAME_MAX];
    uint32_t timeout_ms;
    uint8_t *properties; /* packed InstanceProperties */
    size_t properties_len;
    uint8_t *ping; /* packed InstancePingPkg */
    size_t ping_len;

    sw__grpc_cancel_t cancel; /* lets stop() cancel the call in flight */
    sw__periodic_t *thread;

    /* The management thread's own. */
    uint64_t ticks;
    bool properties_accepted;
};

/* One management call; returns true on OK. Management thread only. */
static bool management_call(sw__grpc_management_t *m, const char *method, const uint8_t *data,
                            size_t len, const char *origin)
{
    grpc_channel *ch = sw__grpc_conn_acquire(m->conn);
    sw__grpc_result_t res;
    if (ch == NULL) {
        res.status = GRPC_STATUS_UNAVAILABLE;
    } else {
        sw__report_record_t msg = {.segment_id = NULL, .data = data, .len = len};
        sw__grpc_call_run(ch, sw__grpc_conn_queue(m->conn), method, &msg, 1, m->token,
                          m->timeout_ms, &m->cancel, &res);
        sw__grpc_conn_outcome(m->conn, res.status, res.details);
        if (res.status == GRPC_STATUS_OK && res.response != NULL) {
            (void)sw__grpc_notices_commands(m->notices, res.response, res.response_len, origin);
        } else if (res.status != GRPC_STATUS_OK && res.status != GRPC_STATUS_CANCELLED) {
            (void)sw__grpc_notices_status(m->notices, res.status, res.details, origin,
                                          sw__grpc_conn_target(m->conn), m->token[0] != '\0');
        }
        free(res.response);
    }
    return res.status == GRPC_STATUS_OK;
}

/* One heartbeat (management thread, at start and every period): InstanceProperties until the
   OAP accepted them and with every SW_GRPC_PROPERTIES_EVERY-th beat, then a keep-alive. */
static void management_tick(void *arg)
{
    sw__grpc_management_t *m = arg;
    if (!m->properties_accepted || m->ticks % SW_GRPC_PROPERTIES_EVERY == 0) {
        m->properties_accepted = management_call(m, METHOD_PROPERTIES, m->properties,
                                                 m->properties_len, "reportInstanceProperties");
    }
    (void)management_call(m, METHOD_PING, m->ping, m->ping_len, "keepAlive");
    m->ticks++;
}

static void management_interrupt(void *arg)
{
    sw__grpc_management_t *m = arg;
    sw__grpc_cancel_fire(&m->cancel);
}

static void management_free(sw__grpc_management_t *m)
{
    sw__grpc_conn_destroy(m->conn);
    free(m->properties);
    free(m->ping);
    sw__grpc_cancel_destroy(&m->cancel);
    sw__config_secret_wipe(m->token, sizeof m->token);
    free(m);
}

int sw__grpc_management_start(const sw_config_t *cfg, sw__grpc_notices_t *notices,
                              sw__grpc_management_t **out, char *errbuf, size_t errlen)
{
    sw__grpc_management_t *m = calloc(1, sizeof *m);
    if (m == NULL) {
        return SW_ENOMEM;
    }
    m->notices = notices;
    m->timeout_ms = cfg->grpc_timeout_ms ? cfg->grpc_timeout_ms : 10000;
    memcpy(m->token, cfg->authentication, sizeof m->token);
    m->token[sizeof m->token - 1] = '\0';
    sw__grpc_cancel_init(&m->cancel);
    int rc = sw__instance_properties_pack(cfg, &m->properties, &m->properties_len);
    if (rc == 0) {
        rc = sw__instance_ping_pack(cfg, &m->ping, &m->ping_len);
    }
    if (rc == 0) {
        rc = sw__grpc_conn_create(cfg, "management", &m->conn, errbuf, errlen);
    }
    if (rc == 0) {
        rc = sw__periodic_start("sw-grpc-mgmt", sw__heartbeat_ms(cfg), SW__PERIODIC_AT_START,
                                management_tick, management_interrupt, m, &m->thread);
        if (rc != 0) {
            swc__errbuf_printf(errbuf, errlen, "cannot start the gRPC management thread");
        }
    }
    if (rc != 0) {
        management_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

void sw__grpc_management_stop(sw__grpc_management_t *m)
{
    if (m == NULL) {
        return;
    }
    sw__periodic_stop(m->thread); /* cancels a call in flight (management_interrupt), joins */
    management_free(m);
}
