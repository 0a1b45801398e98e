/*
 * grpc_reporter_commands.c - Commands parsing and once-per-thing notices of the gRPC reporter.
 */
#include "grpc_reporter_commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.pb-c.h"
#include "../log/log.h"
#include "grpc_reporter_call.h"

void sw__grpc_notices_init(sw__grpc_notices_t *n)
{
    memset(n, 0, sizeof *n);
    pthread_mutex_init(&n->lock, NULL);
}

void sw__grpc_notices_destroy(sw__grpc_notices_t *n)
{
    for (size_t i = 0; i < n->seen_count; i++) {
        free(n->seen[i]);
    }
    pthread_mutex_destroy(&n->lock);
}

/* Formats "k=v, k=v" of a command's arguments into buf, each key and value escaped and capped
   (they come from the collector); truncated to fit. */
static void args_format(const Skywalking__V3__Command *c, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < c->n_args && at + 1 < len; i++) {
        const Skywalking__V3__KeyStringValuePair *kv = c->args[i];
        char k[64], v[96];
        int w = snprintf(buf + at, len - at, "%s%s=%s", i ? ", " : "", SW__LOG_ESC(k, kv->key),
                         SW__LOG_ESC(v, kv->value));
        if (w < 0 || (size_t)w >= len - at) {
            break;
        }
        at += (size_t)w;
    }
}

/* Logs one command if its name is new. Called with n->lock held. */
static void command_note(sw__grpc_notices_t *n, const Skywalking__V3__Command *c,
                         const char *origin)
{
    const char *name = c->command ? c->command : "";
    for (size_t i = 0; i < n->seen_count; i++) {
        if (strcmp(n->seen[i], name) == 0) {
            return;
        }
    }
    if (n->seen_count == SW_GRPC_COMMANDS_SEEN_MAX) {
        if (!n->overflow_logged) {
            sw__log(SW_LOG_WARN,
                    "gRPC: the collector sent more than %d distinct commands; further ones are "
                    "not logged",
                    SW_GRPC_COMMANDS_SEEN_MAX);
        }
        n->overflow_logged = true;
        return;
    }
    char *copy = strdup(name);
    if (copy == NULL) {
        return;
    }
    n->seen[n->seen_count++] = copy;
    char args[384], esc[SW__LOG_ESCAPED_SIZE];
    args_format(c, args, sizeof args);
    sw__log(SW_LOG_INFO,
            "gRPC: the collector answered %s with command '%s' (%s); this agent does not act on "
            "it (logged once per command)",
            origin, SW__LOG_ESC(esc, name), args[0] ? args : "no arguments");
}

int sw__grpc_notices_commands(sw__grpc_notices_t *n, const uint8_t *data, size_t len,
                              const char *origin)
{
    Skywalking__V3__Commands *cmds = skywalking__v3__commands__unpack(NULL, len, data);
    pthread_mutex_lock(&n->lock);
    int count = -1;
    if (cmds == NULL) {
        if (!n->malformed_logged) {
            sw__log(SW_LOG_WARN,
                    "gRPC: the collector's answer to %s (%zu bytes) is not a "
                    "skywalking.v3.Commands message; ignored (logged once)",
                    origin, len);
        }
        n->malformed_logged = true;
    } else {
        for (size_t i = 0; i < cmds->n_commands; i++) {
            command_note(n, cmds->commands[i], origin);
        }
        count = (int)cmds->n_commands;
    }
    pthread_mutex_unlock(&n->lock);
    if (cmds != NULL) {
        skywalking__v3__commands__free_unpacked(cmds, NULL);
    }
    return count;
}

bool sw__grpc_notices_status(sw__grpc_notices_t *n, grpc_status_code status, const char *details,
                             const char *origin, const char *target, bool token_sent)
{
    if (status == GRPC_STATUS_OK || status == GRPC_STATUS_UNAVAILABLE ||
        status == GRPC_STATUS_DEADLINE_EXCEEDED || (int)status < 0 || (int)status >= 32) {
        return false;
    }
    pthread_mutex_lock(&n->lock);
    bool first = (n->statuses_logged & (1u << status)) == 0;
    n->statuses_logged |= 1u << status;
    pthread_mutex_unlock(&n->lock);
    if (!first) {
        return false;
    }
    char esc[SW__LOG_ESCAPED_SIZE];
    SW__LOG_ESC(esc, details != NULL ? details : "");
    if (status == GRPC_STATUS_UNAUTHENTICATED || status == GRPC_STATUS_PERMISSION_DENIED) {
        sw__log(SW_LOG_ERROR,
                "gRPC: collector %s rejected %s with %s (%s): %s. Segments are counted as failed "
                "while the collector rejects the agent (logged once)",
                target, origin, sw__grpc_status_name(status), esc,
                token_sent ? "the token is wrong; check SW_AGENT_AUTHENTICATION"
                           : "no token was sent; set SW_AGENT_AUTHENTICATION");
    } else {
        sw__log(SW_LOG_WARN,
                "gRPC: collector %s failed %s with %s (%s); the data is counted as failed "
                "(logged once per status)",
                target, origin, sw__grpc_status_name(status), esc);
    }
    return true;
}
