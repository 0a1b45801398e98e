/*
 * cds.c - fetchConfigurations and applying a ConfigurationDiscoveryCommand. See cds.h.
 */
#include "swc_errbuf.h"
#include "cds.h"

#include <grpc/grpc.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../config/dynamic_config.h"
#include "../log/log.h"
#include "command.pb-c.h"
#include "configuration_discovery.pb-c.h"
#include "grpc_reporter_call.h"
#include "grpc_reporter_channel.h"
#include "../util/periodic.h"

#define METHOD_FETCH "/skywalking.v3.ConfigurationDiscoveryService/fetchConfigurations"

struct sw__cds {
    /* Immutable after start. */
    sw__grpc_notices_t *notices;
    char service[SW_CONFIG_NAME_MAX];
    char token[SW_CONFIG_NAME_MAX];
    uint32_t timeout_ms;
    sw__grpc_cancel_t cancel; /* lets stop() cancel the fetch in flight */
    sw__periodic_t *thread;

    /* CDS thread only. */
    sw__grpc_conn_t *conn;
    char uuid[SW_CDS_UUID_MAX];
};

/* A setting the OAP may change: its key and its setter (config/dynamic_config.h). */
typedef struct setting {
    const char *key;
    int (*set)(const char *value, char *errbuf, size_t errlen);
} setting_t;

static const setting_t settings[] = {
    {"agent.sample_n_per_3_secs", sw__dyncfg_set_sample},
    {"agent.ignore_suffix", sw__dyncfg_set_ignore_suffix},
    {"agent.span_limit_per_segment", sw__dyncfg_set_span_limit},
};
#define SETTINGS_COUNT (sizeof settings / sizeof settings[0])

/* Applies one command's key/values; returns the settings applied. */
static int command_apply(char *last_uuid, const Skywalking__V3__Command *cmd)
{
    const char *uuid = NULL;
    const char *values[SETTINGS_COUNT] = {NULL};
    for (size_t i = 0; i < cmd->n_args; i++) {
        const char *key = cmd->args[i]->key ? cmd->args[i]->key : "";
        const char *value = cmd->args[i]->value ? cmd->args[i]->value : "";
        if (strcmp(key, "UUID") == 0) {
            uuid = value;
            continue;
        }
        if (strcmp(key, "SerialNumber") == 0) {
            continue;
        }
        size_t k = 0;
        while (k < SETTINGS_COUNT && strcmp(settings[k].key, key) != 0) {
            k++;
        }
        if (k == SETTINGS_COUNT) {
            char esc[SW__LOG_ESCAPED_SIZE];
            sw__log(SW_LOG_DEBUG,
                    "configuration discovery: key '%s' is not one this agent knows; "
                    "ignored",
                    SW__LOG_ESC(esc, key));
            continue;
        }
        values[k] = value;
    }
    if (uuid == NULL || uuid[0] == '\0' || strncmp(uuid, last_uuid, SW_CDS_UUID_MAX - 1) == 0) {
        return 0; /* no configuration, or the one already applied */
    }
    int applied = 0;
    for (size_t k = 0; k < SETTINGS_COUNT; k++) {
        char err[384] = "";
        int rc = settings[k].set(values[k], err, sizeof err);
        if (rc == 0) {
            applied++;
            continue;
        }
        char esc[SW__LOG_ESCAPED_SIZE], uesc[SW__LOG_ESCAPED_SIZE];
        sw__log(SW_LOG_WARN,
                "configuration discovery: %s='%s' (UUID %s) ignored: %s; the setting keeps its "
                "current value",
                settings[k].key, SW__LOG_ESC(esc, values[k] != NULL ? values[k] : ""),
                SW__LOG_ESC(uesc, uuid), err);
    }
    size_t n = strlen(uuid);
    if (n >= SW_CDS_UUID_MAX) {
        n = SW_CDS_UUID_MAX - 1; /* a longer UUID is remembered (and sent back) cut */
    }
    memcpy(last_uuid, uuid, n);
    last_uuid[n] = '\0';
    char uesc[SW__LOG_ESCAPED_SIZE];
    sw__log(SW_LOG_INFO, "configuration discovery: applied configuration %s",
            SW__LOG_ESC(uesc, last_uuid));
    return applied;
}

int sw__cds_apply(char last_uuid[SW_CDS_UUID_MAX], const uint8_t *data, size_t len)
{
    Skywalking__V3__Commands *cmds = skywalking__v3__commands__unpack(NULL, len, data);
    if (cmds == NULL) {
        sw__log(SW_LOG_WARN,
                "configuration discovery: the answer (%zu bytes) is not a "
                "skywalking.v3.Commands message; ignored",
                len);
        return -1;
    }
    int applied = 0;
    for (size_t i = 0; i < cmds->n_commands; i++) {
        const Skywalking__V3__Command *cmd = cmds->commands[i];
        if (cmd->command != NULL && strcmp(cmd->command, SW_CDS_COMMAND) == 0) {
            applied += command_apply(last_uuid, cmd);
        }
    }
    skywalking__v3__commands__free_unpacked(cmds, NULL);
    return applied;
}

/* One fetch on the CDS thread. */
static void fetch_run(void *arg)
{
    sw__cds_t *c = arg;
    grpc_channel *ch = sw__grpc_conn_acquire(c->conn);
    if (ch == NULL) {
        return; /* backing off; the connection logs its transitions */
    }
    Skywalking__V3__ConfigurationSyncRequest req = SKYWALKING__V3__CONFIGURATION_SYNC_REQUEST__INIT;
    req.service = c->service;
    req.uuid = c->uuid;
    uint8_t buf[2 * SW_CONFIG_NAME_MAX + SW_CDS_UUID_MAX + 16];
    size_t len = skywalking__v3__configuration_sync_request__pack(&req, buf);
    sw__report_record_t msg = {.segment_id = NULL, .data = buf, .len = len};
    sw__grpc_result_t res;
    sw__grpc_call_run(ch, sw__grpc_conn_queue(c->conn), METHOD_FETCH, &msg, 1, c->token,
                      c->timeout_ms, &c->cancel, &res);
    sw__grpc_conn_outcome(c->conn, res.status, res.details);
    if (res.status == GRPC_STATUS_OK && res.response != NULL) {
        (void)sw__cds_apply(c->uuid, res.response, res.response_len);
    } else if (res.status != GRPC_STATUS_OK && res.status != GRPC_STATUS_CANCELLED) {
        (void)sw__grpc_notices_status(c->notices, res.status, res.details, "fetchConfigurations",
                                      sw__grpc_conn_target(c->conn), c->token[0] != '\0');
    }
    free(res.response);
}

static void fetch_interrupt(void *arg)
{
    sw__cds_t *c = arg;
    sw__grpc_cancel_fire(&c->cancel);
}

static void cds_free(sw__cds_t *c)
{
    sw__grpc_conn_destroy(c->conn);
    sw__grpc_cancel_destroy(&c->cancel);
    sw__config_secret_wipe(c->token, sizeof c->token);
    free(c);
}

int sw__cds_start(const sw_config_t *cfg, sw__grpc_notices_t *notices, sw__cds_t **out,
                  char *errbuf, size_t errlen)
{
    sw__cds_t *c = calloc(1, sizeof *c);
    if (c == NULL) {
        return SW_ENOMEM;
    }
    c->notices = notices;
    memcpy(c->service, cfg->service_name, sizeof c->service);
    c->service[sizeof c->service - 1] = '\0';
    memcpy(c->token, cfg->authentication, sizeof c->token);
    c->token[sizeof c->token - 1] = '\0';
    c->timeout_ms = cfg->grpc_timeout_ms ? cfg->grpc_timeout_ms : 10000;
    sw__grpc_cancel_init(&c->cancel);
    int rc = sw__grpc_conn_create(cfg, "configuration discovery", &c->conn, errbuf, errlen);
    if (rc == 0) {
        rc = sw__periodic_start("sw-cds", cfg->cds_interval_s * 1000u, SW__PERIODIC_AFTER_A_PERIOD,
                                fetch_run, fetch_interrupt, c, &c->thread);
        if (rc != 0) {
            swc__errbuf_printf(errbuf, errlen, "cannot start the configuration discovery thread");
        }
    }
    if (rc != 0) {
        cds_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void sw__cds_stop(sw__cds_t *c)
{
    if (c == NULL) {
        return;
    }
    sw__periodic_stop(c->thread);
    cds_free(c);
}
