/*
 * config.c - the table of settings, defaults, and setting one value from text.
 */
#include "config.h"

#include <errno.h> /* program_invocation_short_name */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../segment/ids.h"
#include "../log/log.h"
#include "producer_config.h"
#include "swc_errbuf.h"

/* KIND_TEXT: no control byte but tab (a list blank); KIND_NAME: no control byte at all;
   KIND_SECRET: never printed, printable ASCII only (it is sent as a gRPC header value). */
typedef enum {
    KIND_TEXT,
    KIND_NAME,
    KIND_SECRET,
    KIND_INT32,
    KIND_UINT32,
    KIND_REPORTER,
    KIND_BOOL,
    KIND_PROPAGATION
} kind_t;

typedef struct key_desc {
    const char *name;
    kind_t kind;
    size_t offset;
    size_t size; /* KIND_TEXT: the array size */
    int64_t min, max;
} key_desc_t;

/* clang-format 14 and 18 lay this brace initializer out differently: */
/* clang-format off */
#define TEXT(name, field) \
    {name, KIND_TEXT, offsetof(sw_config_t, field), sizeof(((sw_config_t *)0)->field), 0, 0}
#define NUM(name, kind, field, lo, hi) {name, kind, offsetof(sw_config_t, field), 0, lo, hi}
/* clang-format on */

static const key_desc_t keys[] = {
    {"SW_AGENT_NAME", KIND_NAME, offsetof(sw_config_t, service_name),
     sizeof(((sw_config_t *)0)->service_name), 0, 0},
    {"SW_AGENT_INSTANCE_NAME", KIND_NAME, offsetof(sw_config_t, instance_name),
     sizeof(((sw_config_t *)0)->instance_name), 0, 0},
    NUM("SW_AGENT_SAMPLE", KIND_INT32, sample_n_per_3_secs, INT32_MIN, INT32_MAX),
    NUM("SW_AGENT_SPAN_LIMIT", KIND_UINT32, span_limit_per_segment, 1, 10000),
    NUM("SW_AGENT_SEGMENT_ARENA_BYTES", KIND_UINT32, segment_arena_bytes, 1024, 1 << 24),
    TEXT("SW_AGENT_IGNORE_SUFFIX", ignore_suffix),
    TEXT("SW_AGENT_COLLECTOR_BACKEND_SERVICES", backend_services),
    {"SW_AGENT_AUTHENTICATION", KIND_SECRET, offsetof(sw_config_t, authentication),
     sizeof(((sw_config_t *)0)->authentication), 0, 0},
    TEXT("SW_KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap_servers),
    TEXT("SW_KAFKA_NAMESPACE", kafka_namespace),
    TEXT("SW_KAFKA_PRODUCER_CONFIG", kafka_producer_config),
    TEXT("SW_KAFKA_TOPIC_SEGMENT", kafka_topic_segment),
    TEXT("SW_KAFKA_TOPIC_MANAGEMENT", kafka_topic_management),
    NUM("SW_AGENT_HEARTBEAT_PERIOD", KIND_UINT32, heartbeat_period_s, 1, 86400),
    NUM("SW_AGENT_GRPC_TIMEOUT_MS", KIND_UINT32, grpc_timeout_ms, 100, 600000),
    {"SW_AGENT_SSL", KIND_BOOL, offsetof(sw_config_t, grpc_ssl), 0, 0, 0},
    TEXT("SW_AGENT_SSL_CA_FILE", grpc_ssl_ca_file),
    {"SW_REPORTER", KIND_REPORTER, offsetof(sw_config_t, reporter),
     sizeof(((sw_config_t *)0)->reporter), 0, 0},
    TEXT("SW_REPORTER_FILE_PATH", file_path),
    NUM("SW_BUFFER_CHANNEL_SIZE", KIND_UINT32, buffer_channel_size, 1, 1024),
    NUM("SW_BUFFER_BUFFER_SIZE", KIND_UINT32, buffer_buffer_size, 1, 1 << 20),
    NUM("SW_AGENT_MAX_SEGMENTS", KIND_UINT32, max_segments, 0, 1 << 24),
    {"SW_AGENT_PROPAGATION", KIND_PROPAGATION, offsetof(sw_config_t, propagation), 0, 0, 0},
    NUM("SW_METER_REPORT_INTERVAL", KIND_UINT32, meter_report_interval_s, 0, 86400),
    NUM("SW_AGENT_CDS_INTERVAL", KIND_UINT32, cds_interval_s, 0, 86400),
    TEXT("SW_KAFKA_TOPIC_METER", kafka_topic_meter),
    /* Application logs and gRPC mutual TLS. */
    NUM("SW_LOG_MAX_MESSAGE_SIZE", KIND_UINT32, log_max_message_size, 16, 1 << 20),
    NUM("SW_LOG_QUEUE_SIZE", KIND_UINT32, log_queue_size, 1, 1 << 20),
    TEXT("SW_KAFKA_TOPIC_LOGGING", kafka_topic_logging),
    TEXT("SW_AGENT_SSL_KEY_PATH", grpc_ssl_key_path),
    TEXT("SW_AGENT_SSL_CERT_CHAIN_PATH", grpc_ssl_cert_chain_path),
    /* The preload library's plugins (agent/preload/preload_db.h, preload_syslog.c). */
    NUM("SW_PLUGIN_SQL_BODY_MAX_LENGTH", KIND_UINT32, plugin_sql_body_max_length, 0,
        SW__PLUGIN_SQL_BODY_MAX),
    {"SW_PLUGIN_SQL_PARAMETERS", KIND_BOOL, offsetof(sw_config_t, plugin_sql_parameters), 0, 0, 0},
    {"SW_PLUGIN_REDIS_TRACE_KEY", KIND_BOOL, offsetof(sw_config_t, plugin_redis_trace_key), 0, 0,
     0},
    {"SW_PLUGIN_SYSLOG", KIND_BOOL, offsetof(sw_config_t, plugin_syslog), 0, 0, 0},
    NUM("SW_BUFFER_CONSUME_CYCLE_MS", KIND_UINT32, buffer_consume_cycle_ms, 1, 60000),
    /* The crash flight recorder (agent/src/crash). */
    {"SW_AGENT_CRASH_RECORDER", KIND_BOOL, offsetof(sw_config_t, crash_recorder), 0, 0, 0},
    TEXT("SW_AGENT_CRASH_DIR", crash_dir),

    /* Trace profiling (agent/src/profile). */
    {"SW_AGENT_PROFILE_ACTIVE", KIND_BOOL, offsetof(sw_config_t, profile_active), 0, 0, 0},
    NUM("SW_AGENT_PROFILE_CHECK_INTERVAL", KIND_UINT32, profile_check_interval_s, 1, 86400),
    NUM("SW_AGENT_PROFILE_MAX_PARALLEL", KIND_UINT32, profile_max_parallel, 1, 64),
    NUM("SW_AGENT_PROFILE_DUMP_MAX_STACK_DEPTH", KIND_UINT32, profile_dump_max_stack_depth, 1,
        4096),
};

size_t sw__config_key_count(void)
{
    return sizeof keys / sizeof keys[0];
}

const char *sw__config_key_name(size_t i)
{
    return i < sw__config_key_count() ? keys[i].name : NULL;
}

void sw_config_init(sw_config_t *cfg)
{
    if (cfg == NULL) {
        return;
    }
    memset(cfg, 0, sizeof *cfg);
    cfg->sample_n_per_3_secs = -1;
    cfg->span_limit_per_segment = 300;
    cfg->segment_arena_bytes = 16384;
    cfg->buffer_channel_size = 5;
    cfg->buffer_buffer_size = 300;
    /* How long the consumers (segments, logs) with nothing to do nap (dc_consume). Each timed
       wake-up costs the process CPU time, so a longer nap costs less per segment at modest
       rates: tests/bench/rate_bench.c prints the agent's whole cost per segment with this
       500 ms and with the Java DataCarrier's 20 ms. A half-full channel still wakes the
       consumer at once. */
    cfg->buffer_consume_cycle_ms = 500;
    cfg->heartbeat_period_s = 30;
    cfg->grpc_timeout_ms = 10000;
    cfg->meter_report_interval_s = 20;
    cfg->cds_interval_s = 20;
    cfg->log_max_message_size = 10240;
    cfg->log_queue_size = 1024;
    cfg->plugin_sql_body_max_length = SW__PLUGIN_SQL_BODY_DEFAULT;
    cfg->plugin_redis_trace_key = true;
    cfg->crash_recorder = true;

    /* The Java agent's profile.active, collector.get_profile_task_interval,
       profile.max_parallel and profile.dump_max_stack_depth. */
    cfg->profile_active = true;
    cfg->profile_check_interval_s = 20;
    cfg->profile_max_parallel = 5;
    cfg->profile_dump_max_stack_depth = 500;
    snprintf(cfg->file_path, sizeof cfg->file_path, "skywalking-segments.bin");
}

static const key_desc_t *key_find(const char *key)
{
    for (size_t i = 0; i < sw__config_key_count(); i++) {
        if (strcmp(keys[i].name, key) == 0) {
            return &keys[i];
        }
    }
    return NULL;
}

/* Parses an optionally signed decimal of exactly len bytes within [min, max]. */
static bool number_parse(const char *s, size_t len, int64_t min, int64_t max, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (len > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == len || len - i > 12) {
        return false;
    }
    int64_t v = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (s[i] - '0');
    }
    v = neg ? -v : v;
    if (v < min || v > max) {
        return false;
    }
    *out = v;
    return true;
}

int sw__config_text_check(const char *key, sw__text_rule_t rule, const char *value, size_t len,
                          char *errbuf, size_t errlen)
{
    bool secret = rule == SW__TEXT_SECRET;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)value[i];
        if (secret && (c < 0x20 || c > 0x7e)) {
            swc__errbuf_printf(errbuf, errlen,
                               "%s holds a byte outside printable ASCII at offset %zu (the value "
                               "is secret and not shown)",
                               key, i);
            return SW_ECONFIG;
        }
        if ((c < 0x20 && !(c == '\t' && rule == SW__TEXT_LIST)) || c == 0x7f) {
            swc__errbuf_printf(errbuf, errlen,
                               "%s contains a control character (byte 0x%02x at offset %zu)", key,
                               c, i);
            return SW_ECONFIG;
        }
    }
    return 0;
}

static sw__text_rule_t text_rule(kind_t kind)
{
    return kind == KIND_SECRET ? SW__TEXT_SECRET
           : kind == KIND_TEXT ? SW__TEXT_LIST
                               : SW__TEXT_NAME;
}

/* The first bytes of a rejected value, escaped, for a message; "(not shown)" for a secret. */
static const char *value_shown(char *buf, size_t size, const char *key, const char *value,
                               size_t len)
{
    if (sw__config_name_is_secret(key)) {
        return "(not shown)";
    }
    return sw__log_escape(buf, size, value != NULL ? value : "", value != NULL ? len : 0);
}

/* One item of SW_AGENT_PROPAGATION, blanks around it ignored: 1 sw8, 2 tracecontext, 0 other. */
static int propagation_item(const char *s, size_t n)
{
    while (n > 0 && (s[0] == ' ' || s[0] == '\t')) {
        s++;
        n--;
    }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) {
        n--;
    }
    if (n == 3 && memcmp(s, "sw8", 3) == 0) {
        return 1;
    }
    if (n == 12 && memcmp(s, "tracecontext", 12) == 0) {
        return 2;
    }
    return 0;
}

/* "sw8", "tracecontext", "sw8,tracecontext" or "tracecontext,sw8" (sw_propagation_t). */
static bool propagation_parse(const char *s, size_t len, uint32_t *mode)
{
    const char *comma = len > 0 ? memchr(s, ',', len) : NULL;
    if (comma == NULL) {
        int a = propagation_item(s, len);
        *mode = a == 1 ? SW_PROPAGATION_SW8 : SW_PROPAGATION_TRACECONTEXT;
        return a != 0;
    }
    size_t first = (size_t)(comma - s);
    int a = propagation_item(s, first), b = propagation_item(comma + 1, len - first - 1);
    if (a == 0 || b == 0 || a == b) {
        return false;
    }
    *mode = a == 1 ? SW_PROPAGATION_SW8_TRACECONTEXT : SW_PROPAGATION_TRACECONTEXT_SW8;
    return true;
}

int sw__config_set_n(sw_config_t *cfg, const char *key, const char *value, size_t len, char *errbuf,
                     size_t errlen)
{
    if (cfg == NULL || key == NULL || (value == NULL && len > 0)) {
        swc__errbuf_printf(errbuf, errlen, "sw_config_set: NULL argument");
        return SW_EINVAL;
    }
    const key_desc_t *d = key_find(key);
    if (d == NULL) {
        char esc[80];
        swc__errbuf_printf(errbuf, errlen, "unknown key '%s'", SW__LOG_ESC(esc, key));
        return SW_ECONFIG;
    }
    char *field = (char *)cfg + d->offset;
    char shown[72];
    int64_t v;
    switch (d->kind) {
    case KIND_TEXT:
    case KIND_NAME:
    case KIND_SECRET:
        if (len >= d->size) {
            swc__errbuf_printf(errbuf, errlen, "value of %s is longer than %zu bytes", key,
                               d->size - 1);
            return SW_ECONFIG;
        }
        if (len > 0 && memchr(value, '\0', len) != NULL) {
            swc__errbuf_printf(errbuf, errlen, "value of %s contains a NUL byte", key);
            return SW_ECONFIG;
        }
        if (sw__config_text_check(key, text_rule(d->kind), value, len, errbuf, errlen) != 0) {
            return SW_ECONFIG;
        }
        if (len > 0) {
            memcpy(field, value, len);
        }
        field[len] = '\0';
        return 0;
    case KIND_INT32:
    case KIND_UINT32:
        if (!number_parse(value, len, d->min, d->max, &v)) {
            swc__errbuf_printf(errbuf, errlen, "%s must be an integer in %lld..%lld, got '%s'", key,
                               (long long)d->min, (long long)d->max,
                               value_shown(shown, sizeof shown, key, value, len));
            return SW_ECONFIG;
        }
        if (d->kind == KIND_INT32) {
            int32_t x = (int32_t)v;
            memcpy(field, &x, sizeof x);
        } else {
            uint32_t x = (uint32_t)v;
            memcpy(field, &x, sizeof x);
        }
        return 0;
    case KIND_BOOL: {
        bool yes =
            (len == 4 && strncasecmp(value, "true", 4) == 0) || (len == 1 && value[0] == '1');
        bool no =
            (len == 5 && strncasecmp(value, "false", 5) == 0) || (len == 1 && value[0] == '0');
        if (!yes && !no) {
            swc__errbuf_printf(errbuf, errlen, "%s must be true or false, got '%s'", key,
                               value_shown(shown, sizeof shown, key, value, len));
            return SW_ECONFIG;
        }
        memcpy(field, &yes, sizeof yes);
        return 0;
    }
    case KIND_REPORTER:
        if ((len == 4 && memcmp(value, "file", 4) == 0) ||
            (len == 5 && memcmp(value, "kafka", 5) == 0) ||
            (len == 4 && memcmp(value, "grpc", 4) == 0) || len == 0) {
            if (len > 0) {
                memcpy(field, value, len);
            }
            field[len] = '\0';
            return 0;
        }
        swc__errbuf_printf(errbuf, errlen, "%s must be file, kafka or grpc, got '%s'", key,
                           value_shown(shown, sizeof shown, key, value, len));
        return SW_ECONFIG;
    case KIND_PROPAGATION: {
        uint32_t mode;
        if (!propagation_parse(value, len, &mode)) {
            swc__errbuf_printf(errbuf, errlen,
                               "%s must be sw8, tracecontext, sw8,tracecontext or "
                               "tracecontext,sw8, got '%s'",
                               key, value_shown(shown, sizeof shown, key, value, len));
            return SW_ECONFIG;
        }
        memcpy(field, &mode, sizeof mode);
        return 0;
    }
    }
    return SW_ECONFIG;
}

int sw_config_set(sw_config_t *cfg, const char *key, const char *value, char *errbuf, size_t errlen)
{
    return sw__config_set_n(cfg, key, value, value == NULL ? 0 : strlen(value), errbuf, errlen);
}

int sw__config_finalize(sw_config_t *cfg, char *errbuf, size_t errlen)
{
    /* A programmatic config may hold unterminated arrays: terminate every text field. */
    for (size_t i = 0; i < sw__config_key_count(); i++) {
        if (keys[i].kind == KIND_TEXT || keys[i].kind == KIND_NAME || keys[i].kind == KIND_SECRET ||
            keys[i].kind == KIND_REPORTER) {
            char *text = (char *)cfg + keys[i].offset;
            text[keys[i].size - 1] = '\0';
            /* A programmatic config did not pass through sw_config_set: check it here. */
            if (sw__config_text_check(keys[i].name, text_rule(keys[i].kind), text, strlen(text),
                                      errbuf, errlen) != 0) {
                return SW_ECONFIG;
            }
        }
    }
    if (cfg->service_name[0] == '\0') {
        const char *prog = program_invocation_short_name;
        snprintf(cfg->service_name, sizeof cfg->service_name, "%s",
                 prog != NULL && prog[0] != '\0' ? prog : "c-service");
    }
    if (cfg->instance_name[0] == '\0') {
        char host[128];
        if (gethostname(host, sizeof host) != 0) {
            snprintf(host, sizeof host, "localhost");
        }
        host[sizeof host - 1] = '\0';
        sw__ids_seed();
        snprintf(cfg->instance_name, sizeof cfg->instance_name, "%s@%s", sw__ids_process_uuid(),
                 host);
    }
    if (cfg->reporter[0] == '\0') {
        const char *r = cfg->kafka_bootstrap_servers[0] ? "kafka"
                        : cfg->backend_services[0]      ? "grpc"
                                                        : "file";
        snprintf(cfg->reporter, sizeof cfg->reporter, "%s", r);
    }
    if (strcmp(cfg->reporter, "file") == 0 && cfg->file_path[0] == '\0') {
        swc__errbuf_printf(errbuf, errlen, "SW_REPORTER_FILE_PATH is empty");
        return SW_ECONFIG;
    }
    if (cfg->span_limit_per_segment < 1 || cfg->span_limit_per_segment > 10000) {
        swc__errbuf_printf(errbuf, errlen, "SW_AGENT_SPAN_LIMIT must be in 1..10000, got %u",
                           cfg->span_limit_per_segment);
        return SW_ECONFIG;
    }
    if (cfg->segment_arena_bytes < 1024 || cfg->segment_arena_bytes > (1u << 24)) {
        swc__errbuf_printf(errbuf, errlen,
                           "SW_AGENT_SEGMENT_ARENA_BYTES must be in 1024..16777216, got %u",
                           cfg->segment_arena_bytes);
        return SW_ECONFIG;
    }
    if (cfg->buffer_channel_size < 1 || cfg->buffer_channel_size > 1024 ||
        cfg->buffer_buffer_size < 1 || cfg->buffer_buffer_size > (1u << 20)) {
        swc__errbuf_printf(errbuf, errlen,
                           "SW_BUFFER_CHANNEL_SIZE must be in 1..1024 and SW_BUFFER_BUFFER_SIZE "
                           "in 1..1048576 (got %u and %u)",
                           cfg->buffer_channel_size, cfg->buffer_buffer_size);
        return SW_ECONFIG;
    }
    if (cfg->buffer_consume_cycle_ms < 1 || cfg->buffer_consume_cycle_ms > 60000) {
        swc__errbuf_printf(errbuf, errlen, "SW_BUFFER_CONSUME_CYCLE_MS must be in 1..60000, got %u",
                           cfg->buffer_consume_cycle_ms);
        return SW_ECONFIG;
    }
    if (cfg->propagation > SW_PROPAGATION_TRACECONTEXT_SW8) {
        swc__errbuf_printf(errbuf, errlen,
                           "SW_AGENT_PROPAGATION must be one of sw_propagation_t (0..3), got %u",
                           cfg->propagation);
        return SW_ECONFIG;
    }
    if (cfg->max_segments > (1u << 24)) {
        swc__errbuf_printf(errbuf, errlen,
                           "SW_AGENT_MAX_SEGMENTS must be in 0..16777216 (0: derived), got %u",
                           cfg->max_segments);
        return SW_ECONFIG;
    }
    if (cfg->log_max_message_size < 16 || cfg->log_max_message_size > (1u << 20) ||
        cfg->log_queue_size < 1 || cfg->log_queue_size > (1u << 20)) {
        swc__errbuf_printf(errbuf, errlen,
                           "SW_LOG_MAX_MESSAGE_SIZE must be in 16..1048576 and SW_LOG_QUEUE_SIZE "
                           "in 1..1048576 (got %u and %u)",
                           cfg->log_max_message_size, cfg->log_queue_size);
        return SW_ECONFIG;
    }
    return sw__config_check(cfg, errbuf, errlen);
}

size_t sw__config_describe(const sw_config_t *cfg, char *buf, size_t len)
{
    sw_config_t defaults;
    sw_config_init(&defaults);
    size_t used = 0;
    if (len == 0) {
        return 0;
    }
    buf[0] = '\0';
    for (size_t i = 0; i < sw__config_key_count(); i++) {
        const key_desc_t *d = &keys[i];
        const char *field = (const char *)cfg + d->offset;
        const char *dflt = (const char *)&defaults + d->offset;
        char value[256];
        bool text = d->kind == KIND_TEXT || d->kind == KIND_NAME || d->kind == KIND_SECRET ||
                    d->kind == KIND_REPORTER;
        if (text ? strcmp(field, dflt) == 0
                 : memcmp(field, dflt, d->kind == KIND_BOOL ? sizeof(bool) : 4) == 0) {
            continue;
        }
        if (sw__config_name_is_secret(d->name) || (text && strstr(field, "-----BEGIN") != NULL)) {
            /* A PEM block can only be key material pasted where a path belongs. */
            snprintf(value, sizeof value, "(not shown)");
        } else if (d->offset == offsetof(sw_config_t, kafka_producer_config)) {
            /* Its values may hold secrets under any name: the property names only. */
            char names[sizeof value - 2];
            (void)sw__producer_config_describe(field, names, sizeof names);
            snprintf(value, sizeof value, "[%s]", names);
        } else if (text) {
            sw__log_escape(value, sizeof value, field, strlen(field));
        } else if (d->kind == KIND_BOOL) {
            snprintf(value, sizeof value, "%s",
                     *(const bool *)(const void *)field ? "true" : "false");
        } else if (d->kind == KIND_INT32) {
            int32_t v;
            memcpy(&v, field, sizeof v);
            snprintf(value, sizeof value, "%ld", (long)v);
        } else {
            uint32_t v;
            memcpy(&v, field, sizeof v);
            snprintf(value, sizeof value, "%lu", (unsigned long)v);
        }
        int n = snprintf(buf + used, len - used, "%s%s=%s", used ? " " : "", d->name, value);
        if (n < 0 || (size_t)n >= len - used) {
            buf[used] = '\0'; /* whole entries only */
            break;
        }
        used += (size_t)n;
    }
    return used;
}
