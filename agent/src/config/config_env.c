/*
 * config_env.c - settings from a config file's text and from the environment.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

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
    while (*n > 0 && is_space((*s)[*n - 1]))
        (*n)--;
}

/* Applies one line (without its newline). Returns 0 or SW_ECONFIG. */
static int line_apply(sw_config_t *cfg, const char *line, size_t n, const char *origin,
                      unsigned lineno, char *errbuf, size_t errlen)
{
    trim(&line, &n);
    if (n == 0 || line[0] == '#')
        return 0;
    const char *eq = memchr(line, '=', n);
    if (eq == NULL) {
        sw__errbuf_printf(errbuf, errlen, "%s:%u: expected KEY=value, got '%.*s'", origin, lineno,
                          (int)(n > 64 ? 64 : n), line);
        return SW_ECONFIG;
    }
    const char *key = line;
    size_t kn = (size_t)(eq - line);
    const char *value = eq + 1;
    size_t vn = n - kn - 1;
    trim(&key, &kn);
    trim(&value, &vn);
    if (kn == 0 || kn >= LINE_KEY_MAX || memchr(key, '\0', kn) != NULL) {
        sw__errbuf_printf(errbuf, errlen, "%s:%u: bad key '%.*s'", origin, lineno,
                          (int)(kn > 64 ? 64 : kn), key);
        return SW_ECONFIG;
    }
    char keybuf[LINE_KEY_MAX];
    memcpy(keybuf, key, kn);
    keybuf[kn] = '\0';
    char msg[512];
    int rc = sw__config_set_n(cfg, keybuf, value, vn, msg, sizeof msg);
    if (rc != 0)
        sw__errbuf_printf(errbuf, errlen, "%s:%u: %s", origin, lineno, msg);
    return rc;
}

int sw__config_parse_buffer(sw_config_t *cfg, const char *buf, size_t len, const char *origin,
                            char *errbuf, size_t errlen)
{
    if (origin == NULL)
        origin = "config";
    unsigned lineno = 1;
    size_t begin = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i != len && buf[i] != '\n')
            continue;
        int rc = line_apply(cfg, buf + begin, i - begin, origin, lineno, errbuf, errlen);
        if (rc != 0)
            return rc;
        lineno++;
        begin = i + 1;
    }
    return 0;
}

/* Reads a whole (small) file into a malloc'ed buffer. Returns 0 or SW_ECONFIG. */
static int file_read(const char *path, char **out, size_t *out_len, char *errbuf, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        sw__errbuf_printf(errbuf, errlen, "SW_AGENT_CONFIG: cannot open '%s': %s", path,
                          strerror(errno));
        return SW_ECONFIG;
    }
    char *buf = malloc(CONFIG_FILE_MAX);
    if (buf == NULL) {
        fclose(f);
        sw__errbuf_printf(errbuf, errlen, "SW_AGENT_CONFIG: out of memory");
        return SW_ECONFIG;
    }
    size_t n = fread(buf, 1, CONFIG_FILE_MAX, f);
    bool too_big = n == CONFIG_FILE_MAX && fgetc(f) != EOF;
    bool failed = ferror(f) != 0;
    fclose(f);
    if (too_big || failed) {
        free(buf);
        sw__errbuf_printf(errbuf, errlen, "SW_AGENT_CONFIG: '%s' %s", path,
                          too_big ? "is larger than 1 MiB" : "could not be read");
        return SW_ECONFIG;
    }
    *out = buf;
    *out_len = n;
    return 0;
}

int sw_config_load(sw_config_t *cfg, char *errbuf, size_t errlen)
{
    const char *path = getenv("SW_AGENT_CONFIG");
    if (path != NULL && path[0] != '\0') {
        char *text;
        size_t len;
        int rc = file_read(path, &text, &len, errbuf, errlen);
        if (rc != 0)
            return rc;
        rc = sw__config_parse_buffer(cfg, text, len, path, errbuf, errlen);
        free(text);
        if (rc != 0)
            return rc;
    }
    for (size_t i = 0; i < sw__config_key_count(); i++) {
        const char *name = sw__config_key_name(i);
        const char *value = getenv(name);
        if (value == NULL)
            continue;
        char msg[512];
        int rc = sw_config_set(cfg, name, value, msg, sizeof msg);
        if (rc != 0) {
            sw__errbuf_printf(errbuf, errlen, "environment: %s", msg);
            return rc;
        }
    }
    return 0;
}
