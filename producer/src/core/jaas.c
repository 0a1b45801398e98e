/*
 * jaas.c - sasl.jaas.config and the SASL credentials of a conf (see jaas.h).
 */
#include "core/jaas.h"

#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/conf.h"

static int jaas_fail(char *errbuf, size_t errlen, const char *why, size_t offset)
{
    if (errbuf && errlen > 0) {
        snprintf(errbuf, errlen, "sasl.jaas.config: %s at offset %zu (the value is not shown)", why,
                 offset);
    }
    return KP_ECONF;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t skip_space(const char *s, size_t i)
{
    while (s[i] && is_space(s[i])) {
        i++;
    }
    return i;
}

/* True when the token [s, s+n) is `cls` or its last dotted component. */
static bool class_is(const char *s, size_t n, const char *cls)
{
    size_t cn = strlen(cls);
    const char *last = strrchr(cls, '.');
    size_t ln = strlen(last + 1);
    return (n == cn && memcmp(s, cls, n) == 0) || (n == ln && memcmp(s, last + 1, n) == 0);
}

static int parse_entry(const char *text, int mechanism, char *user, size_t user_len, char *pass,
                       size_t pass_len, char *errbuf, size_t errlen)
{
    user[0] = pass[0] = '\0';
    bool have_user = false, have_pass = false;
    size_t i = skip_space(text, 0), start = i;
    while (text[i] && !is_space(text[i]) && text[i] != ';') {
        i++;
    }
    const char *want = mechanism == KP__SASL_PLAIN
                           ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                           : "org.apache.kafka.common.security.scram.ScramLoginModule";
    if (!class_is(text + start, i - start, want)) {
        if (errbuf && errlen > 0) {
            snprintf(errbuf, errlen,
                     "sasl.jaas.config: the login module is not %s, which sasl.mechanism needs "
                     "(the value is not shown)",
                     want);
        }
        return KP_ECONF;
    }
    i = skip_space(text, i);
    start = i;
    while (text[i] && !is_space(text[i]) && text[i] != ';') {
        i++;
    }
    static const char *const flags[] = {"required", "requisite", "sufficient", "optional"};
    bool flag_ok = false;
    for (size_t f = 0; f < 4; f++) {
        flag_ok |= i - start == strlen(flags[f]) && memcmp(text + start, flags[f], i - start) == 0;
    }
    if (!flag_ok) {
        return jaas_fail(errbuf, errlen,
                         "expected required, requisite, sufficient or optional after the class",
                         start);
    }
    for (;;) {
        i = skip_space(text, i);
        if (text[i] == ';') {
            if (text[skip_space(text, i + 1)] != '\0') {
                return jaas_fail(errbuf, errlen, "text after the closing ';'", i + 1);
            }
            break;
        }
        if (text[i] == '\0') {
            return jaas_fail(errbuf, errlen, "missing the closing ';'", i);
        }
        start = i;
        while ((text[i] >= 'a' && text[i] <= 'z') || (text[i] >= 'A' && text[i] <= 'Z') ||
               (text[i] >= '0' && text[i] <= '9') || text[i] == '_' || text[i] == '.' ||
               text[i] == '-') {
            i++;
        }
        size_t name_len = i - start;
        const char *name = text + start;
        i = skip_space(text, i);
        if (name_len == 0 || text[i] != '=') {
            return jaas_fail(errbuf, errlen, "expected name=value", start);
        }
        i = skip_space(text, i + 1);
        char *dst = NULL;
        size_t cap = 0;
        if (name_len == 8 && memcmp(name, "username", 8) == 0) {
            dst = user, cap = user_len, have_user = true;
        } else if (name_len == 8 && memcmp(name, "password", 8) == 0) {
            dst = pass, cap = pass_len, have_pass = true;
        }
        size_t o = 0;
        bool quoted = text[i] == '"';
        size_t vstart = i;
        if (quoted) {
            i++;
        }
        for (;;) {
            char c = text[i];
            if (c == '\0') {
                if (quoted) {
                    return jaas_fail(errbuf, errlen, "unterminated quoted value", vstart);
                }
                break;
            }
            if (quoted && c == '"') {
                i++;
                break;
            }
            if (!quoted && (is_space(c) || c == ';' || c == '"')) {
                break;
            }
            if (quoted && c == '\\') {
                if (text[i + 1] == '\0') {
                    return jaas_fail(errbuf, errlen, "unterminated quoted value", vstart);
                }
                c = text[++i];
            }
            if (dst) {
                if (o + 1 >= cap) {
                    return jaas_fail(errbuf, errlen, "value too long", vstart);
                }
                dst[o++] = c;
            }
            i++;
        }
        if (!quoted && i == vstart) {
            return jaas_fail(errbuf, errlen, "missing value", vstart);
        }
        if (dst) {
            dst[o] = '\0';
        }
    }
    if (!have_user || !have_pass || user[0] == '\0') {
        if (errbuf && errlen > 0) {
            snprintf(errbuf, errlen,
                     "sasl.jaas.config: needs username=\"...\" and password=\"...\" options (the "
                     "value is not shown)");
        }
        return KP_ECONF;
    }
    return 0;
}

int kp__jaas_parse(const char *text, int mechanism, char *user, size_t user_len, char *pass,
                   size_t pass_len, char *errbuf, size_t errlen)
{
    int rc = parse_entry(text, mechanism, user, user_len, pass, pass_len, errbuf, errlen);
    if (rc != 0) { /* nothing half-parsed is left behind, least of all a password */
        OPENSSL_cleanse(user, user_len);
        OPENSSL_cleanse(pass, pass_len);
    }
    return rc;
}
