/*
 * grpc_reporter_channel.c - addresses, channel, fail over and backoff of the gRPC reporter.
 */
#include "grpc_reporter_channel.h"

#include <errno.h>
#include <grpc/grpc_security.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../config/list.h"
#include "../log/log.h"
#include "swc_clock.h"
#include "swc_errbuf.h"

struct sw__grpc_conn {
    /* Everything below belongs to the one thread using the connection (see the header). */
    char *addresses[SW_GRPC_ADDRESSES_MAX];
    size_t address_count;
    size_t current;
    const char *role;
    grpc_channel_credentials *creds;
    grpc_channel *channel; /* to addresses[current], or NULL */
    grpc_completion_queue *queue;
    uint32_t failures_in_row; /* calls that ended UNAVAILABLE/DEADLINE since the last OK */
    uint32_t backoff_ms;      /* the next backoff to apply */
    uint64_t retry_at_ms;     /* monotonic; acquire returns NULL before it */
    uint64_t jitter_state;
    bool down;        /* the last outcome was a connection failure (for transition logs) */
    bool tls;         /* SW_AGENT_SSL */
    bool client_cert; /* mutual TLS: a client certificate is presented */
    int answer_max;   /* GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH of its channels */
};

/* Whether the warning about a token sent without TLS was logged (process-wide: once).
   Relaxed: only the exchange matters. */
static _Atomic bool clear_token_logged;

/* Whether the hint about a missing client certificate was logged in this run (process-wide:
   every connection of the reporter fails the same way, the user needs to read it once).
   Relaxed: only the exchange matters. Cleared when the "segments" connection is created. */
static _Atomic bool client_cert_hint_logged;

/* Returns ms scaled by a pseudo-random factor in [0.8, 1.2) (xorshift64). */
static uint32_t jitter(sw__grpc_conn_t *c, uint32_t ms)
{
    uint64_t x = c->jitter_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c->jitter_state = x;
    return (uint32_t)((uint64_t)ms * (800u + x % 400u) / 1000u);
}

/* Checks the address list (sw__address_list_check: an empty item is an error like any bad
   one) and splits it into c->addresses. */
static int addresses_parse(sw__grpc_conn_t *c, const char *list, char *errbuf, size_t errlen)
{
    if (sw__address_list_check("SW_AGENT_COLLECTOR_BACKEND_SERVICES", list, errbuf, errlen) != 0) {
        return SW_ECONFIG;
    }
    const char *cursor = list;
    size_t len;
    for (const char *p; (p = sw__list_item_next(&cursor, &len)) != NULL;) {
        if (c->address_count == SW_GRPC_ADDRESSES_MAX) {
            swc__errbuf_printf(errbuf, errlen,
                               "SW_AGENT_COLLECTOR_BACKEND_SERVICES: more than %d addresses",
                               SW_GRPC_ADDRESSES_MAX);
            return SW_ECONFIG;
        }
        char *a = strndup(p, len);
        if (a == NULL) {
            return SW_ENOMEM;
        }
        c->addresses[c->address_count++] = a;
    }
    return 0;
}

static int credentials_create(sw__grpc_conn_t *c, const sw_config_t *cfg, char *errbuf,
                              size_t errlen)
{
    if (!cfg->grpc_ssl) {
        if (cfg->authentication[0] != '\0' &&
            !atomic_exchange_explicit(&clear_token_logged, true, memory_order_relaxed)) {
            sw__log(SW_LOG_WARN,
                    "gRPC: SW_AGENT_AUTHENTICATION is sent without TLS, readable by anyone on "
                    "the path to the collector; set SW_AGENT_SSL=true (logged once)");
        }
        c->creds = grpc_insecure_credentials_create();
        return c->creds ? 0 : SW_ENOMEM;
    }
    char *roots = NULL;
    if (cfg->grpc_ssl_ca_file[0] != '\0') {
        int rc = sw__config_ca_read(cfg->grpc_ssl_ca_file, &roots, errbuf, errlen);
        if (rc != 0) {
            return rc;
        }
    }
    /* Mutual TLS: the client certificate (SW_AGENT_SSL_KEY_PATH, SW_AGENT_SSL_CERT_CHAIN_PATH). */
    char *key = NULL, *chain = NULL;
    int rc = sw__config_client_cert_read(cfg, &key, &chain, errbuf, errlen);
    if (rc != 0) {
        free(roots);
        return rc;
    }
    grpc_ssl_pem_key_cert_pair pair = {.private_key = key, .cert_chain = chain};
    c->client_cert = key != NULL;
    /* NULL roots: gRPC's default roots (GRPC_DEFAULT_SSL_ROOTS_FILE_PATH or its bundle). */
    c->creds = grpc_ssl_credentials_create(roots, key != NULL ? &pair : NULL, NULL, NULL);
    free(roots); /* copied by gRPC, as are the key and the chain */
    sw__config_secret_free(key);
    free(chain);
    c->tls = true;
    if (c->creds == NULL) {
        swc__errbuf_printf(errbuf, errlen, "SW_AGENT_SSL: gRPC could not create TLS credentials");
        return SW_ECONFIG;
    }
    return 0;
}

int sw__grpc_conn_create(const sw_config_t *cfg, const char *role, sw__grpc_conn_t **out,
                         char *errbuf, size_t errlen)
{
    sw__grpc_conn_t *c = calloc(1, sizeof *c);
    if (c == NULL) {
        return SW_ENOMEM;
    }
    c->role = role;
    c->answer_max =
        strcmp(role, "configuration discovery") == 0 || strcmp(role, "profile tasks") == 0
            ? SW_GRPC_CDS_ANSWER_MAX
            : SW_GRPC_ANSWER_MAX;
    if (strcmp(role, "segments") == 0) {
        atomic_store_explicit(&client_cert_hint_logged, false, memory_order_relaxed);
    }
    c->backoff_ms = SW_GRPC_BACKOFF_INITIAL_MS;
    c->jitter_state = ((uint64_t)swc__monotonic_ms() << 1 | 1) ^ (uint64_t)(uintptr_t)c;
    int rc = addresses_parse(c, cfg->backend_services, errbuf, errlen);
    if (rc == 0) {
        rc = credentials_create(c, cfg, errbuf, errlen);
    }
    if (rc == 0) {
        c->queue = grpc_completion_queue_create_for_pluck(NULL);
        if (c->queue == NULL) {
            rc = SW_ENOMEM;
        }
    }
    if (rc != 0) {
        sw__grpc_conn_destroy(c);
        return rc;
    }
    *out = c;
    return 0;
}

static grpc_channel *channel_open(sw__grpc_conn_t *c)
{
    /* A private subchannel pool: a new channel after a failure really reconnects instead of
       inheriting a shared subchannel's backoff. Retries off: one attempt per call, so every
       outcome maps to exactly one delivery or none. Answers capped (SW_GRPC_ANSWER_MAX). */
    grpc_arg args[] = {
        {.type = GRPC_ARG_INTEGER,
         .key = (char *)GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL,
         .value.integer = 1},
        {.type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_ENABLE_RETRIES, .value.integer = 0},
        {.type = GRPC_ARG_INTEGER,
         .key = (char *)GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
         .value.integer = SW_GRPC_BACKOFF_INITIAL_MS},
        {.type = GRPC_ARG_INTEGER,
         .key = (char *)GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
         .value.integer = SW_GRPC_BACKOFF_MAX_MS},
        {.type = GRPC_ARG_INTEGER,
         .key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
         .value.integer = c->answer_max},
    };
    grpc_channel_args ca = {.num_args = sizeof args / sizeof args[0], .args = args};
    return grpc_channel_create(c->addresses[c->current], c->creds, &ca);
}

grpc_channel *sw__grpc_conn_acquire(sw__grpc_conn_t *c)
{
    if (c->retry_at_ms != 0 && (uint64_t)swc__monotonic_ms() < c->retry_at_ms) {
        return NULL;
    }
    if (c->channel == NULL) {
        c->channel = channel_open(c);
        if (c->channel == NULL) {
            return NULL;
        }
    }
    if (grpc_channel_check_connectivity_state(c->channel, 1) == GRPC_CHANNEL_TRANSIENT_FAILURE) {
        sw__grpc_conn_outcome(c, GRPC_STATUS_UNAVAILABLE, "channel in TRANSIENT_FAILURE");
        return NULL;
    }
    return c->channel;
}

void sw__grpc_conn_outcome(sw__grpc_conn_t *c, grpc_status_code status, const char *details)
{
    if (status == GRPC_STATUS_OK) {
        if (c->down) {
            sw__log(SW_LOG_INFO, "gRPC %s: collector %s is reachable again", c->role,
                    c->addresses[c->current]);
        }
        c->down = false;
        c->failures_in_row = 0;
        c->backoff_ms = SW_GRPC_BACKOFF_INITIAL_MS;
        c->retry_at_ms = 0;
        return;
    }
    if (status != GRPC_STATUS_UNAVAILABLE && status != GRPC_STATUS_DEADLINE_EXCEEDED) {
        return;
    }
    const char *failed = c->addresses[c->current];
    if (c->channel != NULL) {
        grpc_channel_destroy(c->channel);
        c->channel = NULL;
    }
    c->failures_in_row++;
    c->current = (c->current + 1) % c->address_count;
    if (c->failures_in_row % c->address_count == 0) { /* a whole round failed: back off */
        c->retry_at_ms = (uint64_t)swc__monotonic_ms() + jitter(c, c->backoff_ms);
        c->backoff_ms = c->backoff_ms >= SW_GRPC_BACKOFF_MAX_MS / 2 ? SW_GRPC_BACKOFF_MAX_MS
                                                                    : c->backoff_ms * 2;
    } else {
        c->retry_at_ms = 0;
    }
    if (!c->down) {
        char esc[SW__LOG_ESCAPED_SIZE];
        sw__log(SW_LOG_WARN,
                "gRPC %s: collector %s unavailable (%s%s%s); retrying %s with backoff up to %d "
                "ms; data meanwhile is counted as failed",
                c->role, failed,
                status == GRPC_STATUS_UNAVAILABLE ? "UNAVAILABLE" : "DEADLINE_EXCEEDED",
                details && details[0] ? ": " : "", details ? SW__LOG_ESC(esc, details) : "",
                c->address_count > 1 ? "the next address" : "it", SW_GRPC_BACKOFF_MAX_MS);
    }
    c->down = true;
    /* A collector that requires client certificates closes the connection in or right after
       the handshake ("Socket closed", "handshake failed"); a collector that is down refuses
       the TCP connection, and a hung one times out: neither is worth the hint. */
    bool refused_in_tls = status == GRPC_STATUS_UNAVAILABLE &&
                          (details == NULL || strstr(details, "Connection refused") == NULL);
    if (c->tls && !c->client_cert && refused_in_tls &&
        !atomic_exchange_explicit(&client_cert_hint_logged, true, memory_order_relaxed)) {
        sw__log(SW_LOG_WARN,
                "gRPC over TLS: collector %s refused or dropped the connection; if it requires "
                "client certificates (mutual TLS), set SW_AGENT_SSL_KEY_PATH and "
                "SW_AGENT_SSL_CERT_CHAIN_PATH",
                failed);
    }
}

const char *sw__grpc_conn_target(const sw__grpc_conn_t *c)
{
    return c->addresses[c->current];
}

grpc_completion_queue *sw__grpc_conn_queue(const sw__grpc_conn_t *c)
{
    return c->queue;
}

void sw__grpc_conn_destroy(sw__grpc_conn_t *c)
{
    if (c == NULL) {
        return;
    }
    if (c->channel != NULL) {
        grpc_channel_destroy(c->channel);
    }
    if (c->queue != NULL) {
        /* Every batch of this connection was plucked: the queue is empty and shuts down now. */
        grpc_completion_queue_shutdown(c->queue);
        while (grpc_completion_queue_pluck(c->queue, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL)
                   .type != GRPC_QUEUE_SHUTDOWN) {
        }
        grpc_completion_queue_destroy(c->queue);
    }
    if (c->creds != NULL) {
        grpc_channel_credentials_release(c->creds);
    }
    for (size_t i = 0; i < c->address_count; i++) {
        free(c->addresses[i]);
    }
    free(c);
}
