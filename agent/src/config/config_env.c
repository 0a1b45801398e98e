/*
 * config_env.c - settings from a config file's text and from the environment.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "../log/log.h"
#include "config.h"
#include "file_open.h"
#include "swc_errbuf.h"

#define LINE_KEY_MAX    128
#define CONFIG_FILE_MAX (1u << 20)

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* Trims [*s, *s + *n) of surrounding spaces. */
static void trim(const char **s, size_t *n)
{
    while (*n > 0 && is_space(**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && is_space((*s)[*n - 1])) {
        (*n)--;
    }
}

/* Applies one line (without its newline). Returns 0 or SW_ECONFIG. */
static int line_apply(sw_config_t *cfg, const char *line, size_t n, const char *origin,
                      unsigned lineno, char *errbuf, size_t errlen)
{
    trim(&line, &n);
    if (n == 0 || line[0] == '#') {
        return 0;
    }
    const char *eq = memchr(line, '=', n);
    if (eq == NULL) {
        /* The line is not shown: it may be a secret, or a line of a file that is not ours. */
        swc__errbuf_printf(errbuf, errlen,
                           "%s:%u: expected KEY=value (the line, %zu bytes, is not shown)", origin,
                           lineno, n);
        return SW_ECONFIG;
    }
    const char *key = line;
    size_t kn = (size_t)(eq - line);
    const char *value = eq + 1;
    size_t vn = n - kn - 1;
    trim(&key, &kn);
    trim(&value, &vn);
    if (kn == 0 || kn >= LINE_KEY_MAX || memchr(key, '\0', kn) != NULL) {
        char esc[80];
        swc__errbuf_printf(errbuf, errlen, "%s:%u: bad key '%s'", origin, lineno,
                           sw__log_escape(esc, sizeof esc, key, kn));
        return SW_ECONFIG;
    }
    char keybuf[LINE_KEY_MAX];
    memcpy(keybuf, key, kn);
    keybuf[kn] = '\0';
    char msg[512];
    int rc = sw__config_set_n(cfg, keybuf, value, vn, msg, sizeof msg);
    if (rc != 0) {
        swc__errbuf_printf(errbuf, errlen, "%s:%u: %s", origin, lineno, msg);
    }
    return rc;
}

int sw__config_parse_buffer(sw_config_t *cfg, const char *buf, size_t len, const char *origin,
                            char *errbuf, size_t errlen)
{
    if (origin == NULL) {
        origin = "config";
    }
    unsigned lineno = 1;
    size_t begin = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i != len && buf[i] != '\n') {
            continue;
        }
        int rc = line_apply(cfg, buf + begin, i - begin, origin, lineno, errbuf, errlen);
        if (rc != 0) {
            return rc;
        }
        lineno++;
        begin = i + 1;
    }
    return 0;
}

bool sw__config_secure(void)
{
    return getauxval(AT_SECURE) != 0;
}

int sw_config_load(sw_config_t *cfg, char *errbuf, size_t errlen)
{
    if (cfg == NULL) {
        swc__errbuf_printf(errbuf, errlen, "sw_config_load: NULL cfg");
        return SW_EINVAL;
    }
    if (sw__config_secure()) {
        swc__errbuf_printf(errbuf, errlen,
                           "the process runs with elevated privileges (AT_SECURE: setuid, setgid "
                           "or file capabilities): the environment and SW_AGENT_CONFIG are not "
                           "read; the program must pass its configuration to sw_init");
        return SW_ECONFIG;
    }
    const char *path = secure_getenv("SW_AGENT_CONFIG");
    if (path != NULL && path[0] != '\0') {
        char *text;
        size_t len;
        int rc =
            sw__file_read("SW_AGENT_CONFIG", path, CONFIG_FILE_MAX, &text, &len, errbuf, errlen);
        if (rc != 0) {
            return rc;
        }
        char origin[SW__LOG_ESCAPED_SIZE];
        rc = sw__config_parse_buffer(cfg, text, len, SW__LOG_ESC(origin, path), errbuf, errlen);
        free(text);
        if (rc != 0) {
            return rc;
        }
    }
    for (size_t i = 0; i < sw__config_key_count(); i++) {
        const char *name = sw__config_key_name(i);
        const char *value = secure_getenv(name);
        if (value == NULL) {
            continue;
        }
        char msg[512];
        int rc = sw_config_set(cfg, name, value, msg, sizeof msg);
        if (rc != 0) {
            swc__errbuf_printf(errbuf, errlen, "environment: %s", msg);
            return rc;
        }
    }
    return 0;
}
