/*
 * cyg_config.c - parsing and matching the filters of the -finstrument-functions hooks.
 */
#include "cyg_config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/list.h"
#include "../log/log.h"
#include "skywalking.h"
#include "swc_errbuf.h"

int sw__cyg_list_parse(sw__cyg_list_t *list, const char *key, const char *text, char *errbuf,
                       size_t errlen)
{
    list->count = 0;
    const char *cursor = text; /* NULL (unset): no patterns */
    size_t n;
    for (const char *item; (item = sw__list_next(&cursor, &n)) != NULL;) {
        if (list->count == SW__CYG_PATTERNS_MAX) {
            swc__errbuf_printf(errbuf, errlen, "%s has more than %d patterns", key,
                               SW__CYG_PATTERNS_MAX);
            return SW_ECONFIG;
        }
        if (n >= SW__CYG_PATTERN_LEN) {
            char esc[48];
            swc__errbuf_printf(errbuf, errlen, "%s: pattern '%s' is longer than %d bytes", key,
                               sw__log_escape(esc, sizeof esc, item, n), SW__CYG_PATTERN_LEN - 1);
            return SW_ECONFIG;
        }
        memcpy(list->patterns[list->count], item, n);
        list->patterns[list->count][n] = '\0';
        list->count++;
    }
    return 0;
}

static int list_parse(sw__cyg_list_t *list, const char *key, char *errbuf, size_t errlen)
{
    return sw__cyg_list_parse(list, key, secure_getenv(key), errbuf, errlen);
}

static int duration_parse(uint64_t *ns, char *errbuf, size_t errlen)
{
    *ns = 0;
    const char *v = secure_getenv("SW_CYG_MIN_DURATION_US");
    if (v == NULL || *v == '\0') {
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long us = strtoull(v, &end, 10);
    /* At most an hour: anything longer is a typo, not a filter. */
    if (errno != 0 || *end != '\0' || v[0] == '-' || v[0] == '+' || us > 3600ull * 1000000ull) {
        char esc[80];
        swc__errbuf_printf(
            errbuf, errlen,
            "SW_CYG_MIN_DURATION_US='%s' is not a number of microseconds in 0..3600000000",
            sw__log_escape(esc, sizeof esc, v, strlen(v)));
        return SW_ECONFIG;
    }
    *ns = (uint64_t)us * 1000u;
    return 0;
}

int sw__cyg_config_load(sw__cyg_config_t *cfg, char *errbuf, size_t errlen)
{
    int rc = list_parse(&cfg->include, "SW_CYG_INCLUDE", errbuf, errlen);
    if (rc == 0) {
        rc = list_parse(&cfg->include_file, "SW_CYG_INCLUDE_FILE", errbuf, errlen);
    }
    if (rc == 0) {
        rc = list_parse(&cfg->exclude, "SW_CYG_EXCLUDE", errbuf, errlen);
    }
    if (rc == 0) {
        rc = list_parse(&cfg->exclude_file, "SW_CYG_EXCLUDE_FILE", errbuf, errlen);
    }
    if (rc == 0) {
        rc = duration_parse(&cfg->min_duration_ns, errbuf, errlen);
    }
    return rc;
}

static bool name_matches(const sw__cyg_list_t *list, const char *name)
{
    for (uint32_t i = 0; i < list->count; i++) {
        if (fnmatch(list->patterns[i], name, 0) == 0) {
            return true;
        }
    }
    return false;
}

/* A pattern with a '/' is matched against the whole path, others against the base name. */
static bool file_matches(const sw__cyg_list_t *list, const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash != NULL ? slash + 1 : path;
    for (uint32_t i = 0; i < list->count; i++) {
        const char *pat = list->patterns[i];
        const char *subject = strchr(pat, '/') != NULL ? path : base;
        if (fnmatch(pat, subject, 0) == 0) {
            return true;
        }
    }
    return false;
}

bool sw__cyg_config_traced(const sw__cyg_config_t *cfg, const char *name, const char *file)
{
    if (name_matches(&cfg->exclude, name) || file_matches(&cfg->exclude_file, file)) {
        return false;
    }
    if (cfg->include.count == 0 && cfg->include_file.count == 0) {
        return true;
    }
    return name_matches(&cfg->include, name) || file_matches(&cfg->include_file, file);
}
