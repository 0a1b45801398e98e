/*
 * producer_config.c - parsing SW_KAFKA_PRODUCER_CONFIG into a kp_conf (see producer_config.h).
 */
#include "producer_config.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../log/log.h"
#include "config.h"
#include "list.h"
#include "swc_errbuf.h"

#define PROPERTY_NAME_MAX 128

/* Whether s[0..n) has the shape of a property name: lower case, digits, dots and dashes
   ("acks", "linger.ms"). Copies it, NUL-terminated, into name[PROPERTY_NAME_MAX] when it does. */
static bool property_name_shaped(const char *s, size_t n, char *name)
{
    if (n == 0 || n >= PROPERTY_NAME_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) {
            return false;
        }
    }
    memcpy(name, s, n);
    name[n] = '\0';
    return true;
}

/* Whether an item without '=' may be shown: a dotted lower-case name (a property missing its
   value, "linger.ms") that does not name a secret. Anything else could be a bare secret. */
static bool looks_like_property(const char *s, size_t n)
{
    char name[PROPERTY_NAME_MAX];
    return memchr(s, '.', n) != NULL && property_name_shaped(s, n, name) &&
           !sw__config_name_is_secret(name);
}

static int property_apply(kp_conf_t *conf, const char *name, const char *value, char *errbuf,
                          size_t errlen)
{
    char key[PROPERTY_NAME_MAX + 32];
    snprintf(key, sizeof key, "SW_KAFKA_PRODUCER_CONFIG: %s", name);
    if (strcmp(name, "bootstrap.servers") == 0 &&
        sw__address_list_check(key, value, errbuf, errlen) != 0) {
        return SW_ECONFIG;
    }
    char msg[512];
    if (kp_conf_set(conf, name, value, msg, sizeof msg) == 0) {
        return 0;
    }
    if (sw__config_name_is_secret(name)) { /* kp's message may quote the value */
        swc__errbuf_printf(errbuf, errlen, "%s: unknown property or bad value (value not shown)",
                           key);
    } else {
        swc__errbuf_printf(errbuf, errlen, "SW_KAFKA_PRODUCER_CONFIG: %s", msg);
    }
    return SW_ECONFIG;
}

int sw__producer_config_apply(kp_conf_t *conf, const char *text, char *errbuf, size_t errlen)
{
    char name[PROPERTY_NAME_MAX] = "";
    char value[SW_CONFIG_TEXT_MAX] = "";
    size_t vlen = 0;
    unsigned position = 0;
    const char *cursor = text;
    size_t n;
    for (const char *piece; (piece = sw__list_next(&cursor, &n)) != NULL;) {
        position++;
        const char *eq = memchr(piece, '=', n);
        if (eq == NULL) { /* continues the previous value: a list such as a:9092,b:9092 */
            if (name[0] == '\0') {
                char shown[PROPERTY_NAME_MAX + 8] = "";
                if (looks_like_property(piece, n)) {
                    snprintf(shown, sizeof shown, " '%.*s'", (int)n, piece);
                }
                swc__errbuf_printf(errbuf, errlen,
                                   "SW_KAFKA_PRODUCER_CONFIG: item %u%s is not name=value%s",
                                   position, shown, shown[0] ? "" : " (not shown)");
                return SW_ECONFIG;
            }
            if (vlen + 1 + n >= sizeof value) {
                swc__errbuf_printf(errbuf, errlen,
                                   "SW_KAFKA_PRODUCER_CONFIG: %s: value is too long", name);
                return SW_ECONFIG;
            }
            value[vlen++] = ',';
            memcpy(value + vlen, piece, n);
            vlen += n;
            value[vlen] = '\0';
            continue;
        }
        if (name[0] != '\0' && property_apply(conf, name, value, errbuf, errlen) != 0) {
            return SW_ECONFIG;
        }
        const char *key = piece, *val = eq + 1;
        size_t kn = (size_t)(eq - piece), vn = n - kn - 1;
        sw__text_trim(&key, &kn);
        sw__text_trim(&val, &vn);
        if (kn == 0 || kn >= sizeof name || memchr(key, '\0', kn) != NULL) {
            char esc[80];
            swc__errbuf_printf(errbuf, errlen,
                               "SW_KAFKA_PRODUCER_CONFIG: item %u: bad property name '%s'",
                               position, sw__log_escape(esc, sizeof esc, key, kn));
            return SW_ECONFIG;
        }
        memcpy(name, key, kn);
        name[kn] = '\0';
        if (vn >= sizeof value) {
            swc__errbuf_printf(errbuf, errlen, "SW_KAFKA_PRODUCER_CONFIG: %s: value is too long",
                               name);
            return SW_ECONFIG;
        }
        memcpy(value, val, vn);
        value[vn] = '\0';
        vlen = vn;
    }
    if (name[0] != '\0' && property_apply(conf, name, value, errbuf, errlen) != 0) {
        return SW_ECONFIG;
    }
    return 0;
}

size_t sw__producer_config_describe(const char *text, char *out, size_t len)
{
    size_t used = 0;
    if (len == 0) {
        return 0;
    }
    out[0] = '\0';
    const char *cursor = text;
    size_t n;
    for (const char *piece; (piece = sw__list_next(&cursor, &n)) != NULL;) {
        const char *eq = memchr(piece, '=', n);
        if (eq == NULL) {
            continue; /* the rest of the previous value (a list such as a:9092,b:9092) */
        }
        const char *key = piece;
        size_t kn = (size_t)(eq - piece);
        sw__text_trim(&key, &kn);
        char name[PROPERTY_NAME_MAX];
        /* A name of another shape may be a piece of a secret holding a comma: "?". (A started
           agent has none: sw_init refused every name the producer does not know.) */
        bool shaped = property_name_shaped(key, kn, name);
        int w = snprintf(out + used, len - used, "%s%s%s", used ? "," : "", shaped ? name : "?",
                         shaped && sw__config_name_is_secret(name) ? "=(not shown)" : "");
        if (w < 0 || (size_t)w >= len - used) {
            out[used] = '\0'; /* whole names only */
            break;
        }
        used += (size_t)w;
    }
    return used;
}
