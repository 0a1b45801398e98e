/*
 * fuzz_cds.c - configuration discovery (agent/src/report/cds.c) on any bytes as if from a
 * collector: sw__cds_apply parses them as skywalking.v3.Commands or refuses them (-1), applies
 * what a ConfigurationDiscoveryCommand holds, and afterwards the remembered UUID is a
 * NUL-terminated string within SW_CDS_UUID_MAX, the dynamic settings are within their bounds,
 * and every message logged is one line of printable text within the log's bounds. Each input
 * starts from the startup values and an empty UUID.
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
    return 0;
}
