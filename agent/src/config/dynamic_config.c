/*
 * dynamic_config.c - sampling, ignore list and span limit that change while the agent runs.
 * See dynamic_config.h for how each one is published.
 */
#include "swc_errbuf.h"
#include "dynamic_config.h"
#include "../util/locality.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "list.h"
#include "../segment/sampler.h"

typedef struct ignore_table ignore_table_t;
struct ignore_table {
    uint32_t count;
    struct {
        const char *text; /* into `list` */
        size_t len;
    } items[SW__IGNORE_MAX];
    ignore_table_t *retired_next;
    char list[SW_CONFIG_TEXT_MAX]; /* the comma list as given */
};

/* The published table (NULL: nothing is ignored). */
static _Atomic(ignore_table_t *) ignore_current;
static _Atomic uint32_t span_limit;

/* Writer state: the configuration discovery thread, sw_init and sw_shutdown, which never run
   at the same time (sw_shutdown stops the discovery thread before releasing). */
static ignore_table_t *retired;
static uint32_t retired_count;
static uint32_t span_capacity_run;
static int32_t startup_sample;
static uint32_t startup_span_limit;
static char startup_ignore[SW_CONFIG_TEXT_MAX];
static sw__sampler_t *run_sampler; /* the run's sampler (sw__agent.sampler) */

/* Builds a table for `list`. Returns 0 (table NULL for an empty list), SW_ECONFIG or
   SW_ENOMEM. `key` names the setting in messages. */
static int table_build(const char *key, const char *list, ignore_table_t **out, char *errbuf,
                       size_t errlen)
{
    *out = NULL;
    size_t len = strlen(list);
    if (len >= SW_CONFIG_TEXT_MAX) {
        swc__errbuf_printf(errbuf, errlen, "%s is longer than %d bytes", key,
                           SW_CONFIG_TEXT_MAX - 1);
        return SW_ECONFIG;
    }
    if (sw__config_text_check(key, SW__TEXT_LIST, list, len, errbuf, errlen) != 0) {
        return SW_ECONFIG;
    }
    ignore_table_t *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return SW_ENOMEM;
    }
    memcpy(t->list, list, len + 1);
    const char *cursor = t->list;
    size_t n;
    for (const char *item; (item = sw__list_next(&cursor, &n)) != NULL;) {
        if (t->count == SW__IGNORE_MAX) {
            swc__errbuf_printf(errbuf, errlen, "%s has more than %d entries", key, SW__IGNORE_MAX);
            free(t);
            return SW_ECONFIG;
        }
        t->items[t->count].text = item;
        t->items[t->count].len = n;
        t->count++;
    }
    if (t->count == 0) {
        free(t);
        return 0;
    }
    *out = t;
    return 0;
}

int sw__dyncfg_init(const sw_config_t *cfg, uint32_t span_capacity, sw__sampler_t *sampler,
                    char *errbuf, size_t errlen)
{
    ignore_table_t *t;
    int rc = table_build("SW_AGENT_IGNORE_SUFFIX", cfg->ignore_suffix, &t, errbuf, errlen);
    if (rc != 0) {
        return rc;
    }
    startup_sample = cfg->sample_n_per_3_secs;
    startup_span_limit = cfg->span_limit_per_segment;
    snprintf(startup_ignore, sizeof startup_ignore, "%s", cfg->ignore_suffix);
    span_capacity_run = span_capacity;
    run_sampler = sampler;
    retired = NULL;
    retired_count = 0;
    /* relaxed: sw_init publishes the whole agent state with its release store of sw__epoch. */
    atomic_store_explicit(&span_limit, cfg->span_limit_per_segment, memory_order_relaxed);
    atomic_store_explicit(&ignore_current, t, memory_order_relaxed);
    return 0;
}

void sw__dyncfg_release(void)
{
    free(atomic_exchange_explicit(&ignore_current, NULL, memory_order_acquire));
    while (retired != NULL) {
        ignore_table_t *next = retired->retired_next;
        free(retired);
        retired = next;
    }
    retired_count = 0;
}

void sw__dyncfg_forget(void)
{
    atomic_store_explicit(&ignore_current, NULL, memory_order_relaxed);
    retired = NULL;
    retired_count = 0;
}

SW__HOT bool sw__dyncfg_ignored(const char *op)
{
    /* acquire: partner of the release exchange in sw__dyncfg_set_ignore_suffix; the table's
       contents written before it are visible through the pointer. */
    const ignore_table_t *t = atomic_load_explicit(&ignore_current, memory_order_acquire);
    if (t == NULL || op == NULL) {
        return false;
    }
    size_t n = strlen(op);
    for (uint32_t i = 0; i < t->count; i++) {
        size_t k = t->items[i].len;
        if (n >= k && memcmp(op + n - k, t->items[i].text, k) == 0) {
            return true;
        }
    }
    return false;
}

SW__HOT uint32_t sw__dyncfg_span_limit(void)
{
    return atomic_load_explicit(&span_limit, memory_order_relaxed);
}

/* A decimal integer within [min, max] (surrounding blanks allowed). */
static bool integer_parse(const char *s, long long min, long long max, long long *out)
{
    while (*s == ' ' || *s == '\t') {
        s++;
    }
    if (*s == '\0') {
        return false;
    }
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    while (*end == ' ' || *end == '\t') {
        end++;
    }
    if (errno != 0 || *end != '\0' || v < min || v > max) {
        return false;
    }
    *out = v;
    return true;
}

int sw__dyncfg_set_sample(const char *value, char *errbuf, size_t errlen)
{
    long long v = startup_sample;
    if (value != NULL && !integer_parse(value, INT32_MIN, INT32_MAX, &v)) {
        swc__errbuf_printf(errbuf, errlen,
                           "agent.sample_n_per_3_secs must be an integer (<= 0: sample all)");
        return SW_ECONFIG;
    }
    sw__sampler_set(run_sampler, (int32_t)v);
    return 0;
}

int sw__dyncfg_set_span_limit(const char *value, char *errbuf, size_t errlen)
{
    long long v = startup_span_limit;
    if (value != NULL && !integer_parse(value, 1, 10000, &v)) {
        swc__errbuf_printf(errbuf, errlen, "agent.span_limit_per_segment must be 1..10000");
        return SW_ECONFIG;
    }
    if (v > (long long)span_capacity_run) {
        /* Segment blocks hold SW_AGENT_SPAN_LIMIT spans: a higher limit would need new blocks. */
        swc__errbuf_printf(errbuf, errlen,
                           "agent.span_limit_per_segment %lld is above SW_AGENT_SPAN_LIMIT (%u), "
                           "which sizes the segment blocks; raise that setting to allow it",
                           v, span_capacity_run);
        return SW_ECONFIG;
    }
    atomic_store_explicit(&span_limit, (uint32_t)v, memory_order_relaxed);
    return 0;
}

int sw__dyncfg_set_ignore_suffix(const char *value, char *errbuf, size_t errlen)
{
    const char *list = value != NULL ? value : startup_ignore;
    const ignore_table_t *cur = atomic_load_explicit(&ignore_current, memory_order_relaxed);
    if (strcmp(cur != NULL ? cur->list : "", list) == 0) {
        return 0; /* unchanged */
    }
    if (retired_count == SW__IGNORE_TABLES_MAX) {
        swc__errbuf_printf(errbuf, errlen,
                           "agent.ignore_suffix changed %d times in this run; further changes are "
                           "refused (each replaced list is kept until sw_shutdown)",
                           SW__IGNORE_TABLES_MAX);
        return SW_ELIMIT;
    }
    ignore_table_t *t;
    int rc = table_build("agent.ignore_suffix", list, &t, errbuf, errlen);
    if (rc != 0) {
        return rc;
    }
    /* release: publishes the table's contents; partner: the acquire load in
       sw__dyncfg_ignored. acquire: we own the old table's memory from here on. */
    ignore_table_t *old = atomic_exchange_explicit(&ignore_current, t, memory_order_acq_rel);
    if (old != NULL) {
        old->retired_next = retired;
        retired = old;
        retired_count++;
    }
    return 0;
}

void sw__dyncfg_current(int32_t *sample, uint32_t *limit, char *ignore, size_t ignore_len)
{
    if (sample != NULL) {
        *sample = sw__sampler_n(run_sampler);
    }
    if (limit != NULL) {
        *limit = sw__dyncfg_span_limit();
    }
    if (ignore != NULL && ignore_len != 0) {
        /* Safe from any thread: a table stays allocated until sw_shutdown. */
        const ignore_table_t *t = atomic_load_explicit(&ignore_current, memory_order_acquire);
        snprintf(ignore, ignore_len, "%s", t != NULL ? t->list : "");
    }
}
