/*
 * address_list.c - host:port lists (SW_AGENT_COLLECTOR_BACKEND_SERVICES,
 * SW_KAFKA_BOOTSTRAP_SERVERS, the producer's bootstrap.servers): sw__address_list_check
 * (config.h). Used by the whole-configuration checks and by the producer properties, which
 * is why it stands apart from both.
 */
#include <stdbool.h>
#include <stddef.h>

#include "../log/log.h"
#include "config.h"
#include "list.h"
#include "swc_errbuf.h"

/* A host name, as the producer's connection stores it (less than 256 bytes). */
#define HOST_MAX 255

static bool host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_' || c == ':' || c == '[' || c == ']';
}

/* Whether s[0..len) is host:port with a host of host_char and a port in 1..65535. */
static bool address_valid(const char *s, size_t len)
{
    const char *colon = NULL;
    for (size_t i = 0; i < len; i++) {
        if (!host_char(s[i])) {
            return false;
        }
        if (s[i] == ':') {
            colon = s + i;
        }
    }
    if (colon == NULL || colon == s || (size_t)(colon - s) > HOST_MAX) {
        return false;
    }
    size_t digits = len - (size_t)(colon + 1 - s);
    if (digits == 0 || digits > 5) {
        return false;
    }
    unsigned port = 0;
    for (size_t i = 0; i < digits; i++) {
        char ch = colon[1 + i];
        if (ch < '0' || ch > '9') {
            return false;
        }
        port = port * 10 + (unsigned)(ch - '0');
    }
    return port >= 1 && port <= 65535;
}

int sw__address_list_check(const char *key, const char *list, char *errbuf, size_t errlen)
{
    const char *cursor = list;
    size_t len;
    unsigned count = 0;
    for (const char *p; (p = sw__list_item_next(&cursor, &len)) != NULL;) {
        if (!address_valid(p, len)) {
            char esc[SW__LOG_ESCAPED_SIZE];
            swc__errbuf_printf(errbuf, errlen,
                               "%s: '%s' is not host:port (expected host:port[,host:port...])", key,
                               sw__log_escape(esc, sizeof esc, p, len));
            return SW_ECONFIG;
        }
        count++;
    }
    if (count == 0) {
        swc__errbuf_printf(errbuf, errlen, "%s: no address", key);
        return SW_ECONFIG;
    }
    return 0;
}
