/*
 * fuzz_cds.c - configuration discovery (agent/src/report/cds.c) on any bytes as if from a
 * collector: sw__cds_apply parses them as skywalking.v3.Commands or refuses them (-1), applies
 * what a ConfigurationDiscoveryCommand holds, and afterwards the remembered UUID is a
 * NUL-terminated string within SW_CDS_UUID_MAX, the dynamic settings are within their bounds,
 * and every message logged is one line of printable text within the log's bounds. Each input
 * starts from the startup values and an empty UUID.
 *
 * The same bytes as an answer of ProfileTask/getProfileTaskCommands
 * (agent/src/profile/profile_task.c): sw__profile_tasks_parse refuses them (-1) or returns at
 * most `max` tasks, each with every argument within the bounds profile_task.h gives (a 0 or
 * negative dump period, a huge count, garbage and a missing endpoint are refused and logged),
 * its strings NUL-terminated, and the last CreateTime never lowered.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/dynamic_config.h"
#include "segment/sampler.h"
#include "fuzz_log_check.h"
#include "log/log.h"
#include "grpc/cds.h"
#include "profile/profile_task.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SPAN_CAPACITY 300

static sw__sampler_t sampler; /* the run's sampler that agent.sample_n_per_3_secs changes */

static void startup(void)
{
    sw_set_log_handler(fuzz_log_line_check, NULL);
    sw_config_t cfg;
    sw_config_init(&cfg);
    snprintf(cfg.ignore_suffix, sizeof cfg.ignore_suffix, ".startup");
    char err[256];
    sw__sampler_init(&sampler, cfg.sample_n_per_3_secs);
    if (sw__dyncfg_init(&cfg, SPAN_CAPACITY, &sampler, err, sizeof err) != 0) {
        abort();
    }
}

/* The profile task checks on the same bytes (see the top of this file). */
static void profile_tasks_check(const uint8_t *data, size_t size)
{
    sw__profile_task_t tasks[3];
    int64_t last = 5;
    const int64_t now = INT64_C(1700000000000);
    int n = sw__profile_tasks_parse(data, size, now, tasks, 3, &last);
    if (n < -1 || n > 3 || last < 5) {
        abort();
    }
    for (int i = 0; i < n; i++) {
        const sw__profile_task_t *t = &tasks[i];
        if (memchr(t->task_id, '\0', sizeof t->task_id) == NULL || t->task_id[0] == '\0' ||
            memchr(t->endpoint, '\0', sizeof t->endpoint) == NULL || t->endpoint[0] == '\0' ||
            t->duration_min < SW__PROFILE_DURATION_MIN ||
            t->duration_min > SW__PROFILE_DURATION_MAX ||
            t->dump_period_ms < SW__PROFILE_DUMP_MIN_MS ||
            t->dump_period_ms > SW__PROFILE_DUMP_MAX_MS || t->max_sampling_count < 1 ||
            t->max_sampling_count > SW__PROFILE_SAMPLING_MAX ||
            t->min_duration_ms > SW__PROFILE_THRESHOLD_MAX || t->start_ms < 0 ||
            t->end_ms != t->start_ms + (int64_t)t->duration_min * 60000 || t->end_ms <= now) {
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    if (!once) {
        startup();
        once = 1;
    }
    sw__log_reset(0); /* every input may log, not only the first few */
    char uuid[SW_CDS_UUID_MAX] = "";
    int applied = sw__cds_apply(uuid, data, size);
    if (applied < -1 || applied > 3 * 1000000) {
        abort();
    }
    if (memchr(uuid, '\0', sizeof uuid) == NULL) {
        abort();
    }
    int32_t sample;
    uint32_t limit;
    char ignore[SW_CONFIG_TEXT_MAX + 1];
    sw__dyncfg_current(&sample, &limit, ignore, sizeof ignore);
    if (limit < 1 || limit > 10000 || memchr(ignore, '\0', sizeof ignore) == NULL) {
        abort();
    }
    /* Back to the startup values (a command without the keys restores them): the next input
       starts where this one did, and the ignore list's replacements are not used up. */
    char err[256];
    if (sw__dyncfg_set_sample(NULL, err, sizeof err) != 0 ||
        sw__dyncfg_set_span_limit(NULL, err, sizeof err) != 0) {
        abort();
    }
    (void)sw__dyncfg_ignored("GET /x.startup");
    profile_tasks_check(data, size);
    return 0;
}
