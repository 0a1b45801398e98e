/*
 * cyg_config.h - the filters of the -finstrument-functions hooks (internal).
 *
 * Read once from the environment, on the first instrumented call after sw_init:
 *
 *   SW_CYG_INCLUDE          comma list of fnmatch(3) patterns on the function's name
 *                           (demangled when possible); when it or SW_CYG_INCLUDE_FILE is set,
 *                           only matching functions are traced
 *   SW_CYG_INCLUDE_FILE     comma list of patterns on the path of the executable or shared
 *                           object that holds the function (a pattern without '/' matches the
 *                           base name)
 *   SW_CYG_EXCLUDE          names never traced (wins over the include lists)
 *   SW_CYG_EXCLUDE_FILE     objects never traced
 *   SW_CYG_MIN_DURATION_US  a span shorter than this many microseconds is not kept unless a
 *                           kept span, tag or reference hangs under it (default 0: keep all)
 *
 * A function without a symbol (not exported: link with -rdynamic) is named
 * "<object base name>+0x<offset>" and matched by that name.
 */
#ifndef SW_INSTRUMENT_CYG_CONFIG_H
#define SW_INSTRUMENT_CYG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW__CYG_PATTERNS_MAX 32
#define SW__CYG_PATTERN_LEN  256

typedef struct sw__cyg_list {
    uint32_t count;
    char patterns[SW__CYG_PATTERNS_MAX][SW__CYG_PATTERN_LEN];
} sw__cyg_list_t;

typedef struct sw__cyg_config {
    sw__cyg_list_t include, include_file, exclude, exclude_file;
    uint64_t min_duration_ns;
} sw__cyg_config_t;

/*
 * Fills `cfg` from the environment. Returns 0, or SW_ECONFIG with a message naming the variable
 * in errbuf (then `cfg` must not be used). Any thread; pure apart from secure_getenv (in a
 * process with elevated privileges, AT_SECURE, nothing is read: the defaults apply).
 */
int sw__cyg_config_load(sw__cyg_config_t *cfg, char *errbuf, size_t errlen);

/*
 * Splits the comma list `text` (NULL: empty) of the setting `key` into `list`: at most
 * SW__CYG_PATTERNS_MAX patterns of less than SW__CYG_PATTERN_LEN bytes, empty items skipped.
 * Returns 0, or SW_ECONFIG with a message naming key (the pattern escaped and cut). Pure.
 */
int sw__cyg_list_parse(sw__cyg_list_t *list, const char *key, const char *text, char *errbuf,
                       size_t errlen);

/* Whether a function named `name` in the object at `file` is traced under `cfg`. */
bool sw__cyg_config_traced(const sw__cyg_config_t *cfg, const char *name, const char *file);

#endif /* SW_INSTRUMENT_CYG_CONFIG_H */
