/*
 * profile_task.c - ProfileTaskQuery commands to tasks, refusing the hostile ones. See
 * profile_task.h.
 */
#include "profile_task.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../log/log.h"
#include "command.pb-c.h"

/* One argument's text and the task's fields being filled. */
typedef struct raw_task {
    const char *task_id, *endpoint, *duration, *threshold, *dump, *count, *start, *create;
} raw_task_t;

/* A plain decimal (optional '-') within [lo, hi]; false otherwise. */
static bool parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (s == NULL || *s == '\0') {
        return false;
    }
    bool neg = *s == '-';
    s += neg;
    if (*s == '\0' || strlen(s) > 18) {
        return false; /* 18 digits never overflow int64 */
    }
    int64_t v = 0;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9') {
            return false;
        }
        v = v * 10 + (*s - '0');
    }
    v = neg ? -v : v;
    if (v < lo || v > hi) {
        return false;
    }
    *out = v;
    return true;
}

static void refuse(const char *task_id, const char *why, const char *value)
{
    char tesc[SW__LOG_ESCAPED_SIZE], vesc[SW__LOG_ESCAPED_SIZE];
    sw__log(SW_LOG_WARN, "profile task '%s' refused: %s%s%s%s", SW__LOG_ESC(tesc, task_id), why,
            value != NULL ? " (got '" : "", value != NULL ? SW__LOG_ESC(vesc, value) : "",
            value != NULL ? "')" : "");
}

/* Copies `s` into dst (cap bytes) when it is non-empty and fits. */
static bool copy_text(char *dst, size_t cap, const char *s)
{
    size_t n = s != NULL ? strlen(s) : 0;
    if (n == 0 || n >= cap) {
        return false;
    }
    memcpy(dst, s, n + 1);
    return true;
}

typedef struct num_arg {
    const char *name;
    const char *text;
    int64_t lo, hi;
    const char *range; /* for the log line */
} num_arg_t;

/* Checks one task; fills *t and returns true, or logs why not. */
static bool task_check(const raw_task_t *r, int64_t now_ms, sw__profile_task_t *t)
{
    const char *id = r->task_id != NULL ? r->task_id : "";
    if (!copy_text(t->task_id, sizeof t->task_id, r->task_id)) {
        refuse(id, "TaskId missing, empty or longer than 127 bytes", NULL);
        return false;
    }
    if (!copy_text(t->endpoint, sizeof t->endpoint, r->endpoint)) {
        refuse(id, "EndpointName missing, empty or longer than 255 bytes", r->endpoint);
        return false;
    }
    const num_arg_t nums[] = {
        {"Duration", r->duration, SW__PROFILE_DURATION_MIN, SW__PROFILE_DURATION_MAX,
         "1..15 minutes"},
        {"MinDurationThreshold", r->threshold, 0, SW__PROFILE_THRESHOLD_MAX, "0..3600000 ms"},
        {"DumpPeriod", r->dump, SW__PROFILE_DUMP_MIN_MS, SW__PROFILE_DUMP_MAX_MS, "10..60000 ms"},
        {"MaxSamplingCount", r->count, 1, SW__PROFILE_SAMPLING_MAX, "1..10"},
        {"StartTime", r->start, 0, INT64_C(999999999999999999), "ms since the epoch"},
        {"CreateTime", r->create, 0, INT64_C(999999999999999999), "ms since the epoch"},
    };
    int64_t v[6];
    for (size_t i = 0; i < 6; i++) {
        if (!parse_int(nums[i].text, nums[i].lo, nums[i].hi, &v[i])) {
            char why[96];
            snprintf(why, sizeof why, "%s must be an integer in %s", nums[i].name, nums[i].range);
            refuse(id, why, nums[i].text != NULL ? nums[i].text : "(missing)");
            return false;
        }
    }
    t->duration_min = (uint32_t)v[0];
    t->min_duration_ms = (uint32_t)v[1];
    t->dump_period_ms = (uint32_t)v[2];
    t->max_sampling_count = (uint32_t)v[3];
    t->start_ms = v[4];
    t->create_ms = v[5];
    t->end_ms = t->start_ms + (int64_t)t->duration_min * 60000;
    if (t->end_ms <= now_ms) {
        refuse(id, "its time (StartTime + Duration) is already over", NULL);
        return false;
    }
    return true;
}

/* Reads the args of one ProfileTaskQuery command. */
static void raw_read(const Skywalking__V3__Command *cmd, raw_task_t *r, const char **create)
{
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < cmd->n_args; i++) {
        const char *k = cmd->args[i]->key != NULL ? cmd->args[i]->key : "";
        const char *v = cmd->args[i]->value != NULL ? cmd->args[i]->value : "";
        const char **slot = strcmp(k, "TaskId") == 0                 ? &r->task_id
                            : strcmp(k, "EndpointName") == 0         ? &r->endpoint
                            : strcmp(k, "Duration") == 0             ? &r->duration
                            : strcmp(k, "MinDurationThreshold") == 0 ? &r->threshold
                            : strcmp(k, "DumpPeriod") == 0           ? &r->dump
                            : strcmp(k, "MaxSamplingCount") == 0     ? &r->count
                            : strcmp(k, "StartTime") == 0            ? &r->start
                            : strcmp(k, "CreateTime") == 0           ? &r->create
                                                                     : NULL;
        if (slot != NULL) {
            *slot = v; /* a repeated key: the last one counts */
        }
    }
    *create = r->create;
}

int sw__profile_tasks_parse(const uint8_t *data, size_t len, int64_t now_ms,
                            sw__profile_task_t *out, size_t max, int64_t *last_create_ms)
{
    Skywalking__V3__Commands *cmds = skywalking__v3__commands__unpack(NULL, len, data);
    if (cmds == NULL) {
        sw__log(SW_LOG_WARN,
                "profile: the answer of getProfileTaskCommands (%zu bytes) is not a "
                "skywalking.v3.Commands message; ignored",
                len);
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < cmds->n_commands; i++) {
        const Skywalking__V3__Command *cmd = cmds->commands[i];
        if (cmd->command == NULL || strcmp(cmd->command, SW__PROFILE_COMMAND) != 0) {
            continue;
        }
        raw_task_t r;
        const char *create = NULL;
        raw_read(cmd, &r, &create);
        int64_t c;
        if (parse_int(create, 0, INT64_C(999999999999999999), &c) && c > *last_create_ms) {
            *last_create_ms = c;
        }
        sw__profile_task_t t;
        memset(&t, 0, sizeof t);
        if (!task_check(&r, now_ms, &t)) {
            continue;
        }
        if (n == max) {
            refuse(t.task_id, "more tasks in one answer than this agent takes at once", NULL);
            continue;
        }
        out[n++] = t;
    }
    skywalking__v3__commands__free_unpacked(cmds, NULL);
    return (int)n;
}
