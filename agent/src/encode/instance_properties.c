/*
 * instance_properties.c - InstanceProperties and InstancePingPkg of this process, packed with
 * protobuf-c. See instance_properties.h for the property keys.
 */
#include "instance_properties.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../util/utf8.h"
#include "management.pb-c.h"

/* The CMake project version, passed by agent/CMakeLists.txt; a fallback keeps the file
   buildable on its own. */
#ifndef SW_AGENT_VERSION
#define SW_AGENT_VERSION "dev"
#endif

/* Fixed keys plus the addresses. */
#define PROPS_MAX (5 + SW_INSTANCE_IPV4_MAX)

typedef struct host_facts {
    char os_name[sizeof(((struct utsname *)0)->sysname)];
    char hostname[256];
    char pid[24];
    char ipv4[SW_INSTANCE_IPV4_MAX][INET_ADDRSTRLEN];
    size_t ipv4_count;
} host_facts_t;

/* Appends the IPv4 addresses of interfaces that are up: non-loopback ones when there are any,
   else the loopback ones. An error of getifaddrs leaves the list empty. */
static void ipv4_collect(host_facts_t *f)
{
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0) {
        return;
    }
    for (int want_loopback = 0; want_loopback < 2 && f->ipv4_count == 0; want_loopback++) {
        for (struct ifaddrs *it = list; it != NULL; it = it->ifa_next) {
            if (f->ipv4_count == SW_INSTANCE_IPV4_MAX) {
                break;
            }
            if (it->ifa_addr == NULL || it->ifa_addr->sa_family != AF_INET ||
                (it->ifa_flags & IFF_UP) == 0) {
                continue;
            }
            int loopback = (it->ifa_flags & IFF_LOOPBACK) != 0;
            if (loopback != want_loopback) {
                continue;
            }
            const struct sockaddr_in *sin = (const struct sockaddr_in *)(void *)it->ifa_addr;
            if (inet_ntop(AF_INET, &sin->sin_addr, f->ipv4[f->ipv4_count], INET_ADDRSTRLEN)) {
                f->ipv4_count++;
            }
        }
    }
    freeifaddrs(list);
}

static void host_facts_read(host_facts_t *f)
{
    memset(f, 0, sizeof *f);
    struct utsname u;
    snprintf(f->os_name, sizeof f->os_name, "%s", uname(&u) == 0 ? u.sysname : "Linux");
    if (gethostname(f->hostname, sizeof f->hostname - 1) != 0) {
        snprintf(f->hostname, sizeof f->hostname, "localhost");
    }
    f->hostname[sizeof f->hostname - 1] = '\0';
    /* Strings of the system: valid UTF-8 for the message's string fields (util/utf8.h). */
    sw__utf8_fix(f->hostname, strlen(f->hostname));
    sw__utf8_fix(f->os_name, strlen(f->os_name));
    snprintf(f->pid, sizeof f->pid, "%ld", (long)getpid());
    ipv4_collect(f);
}

/* Packs msg into a fresh allocation of exactly its packed size (at least 1 byte). */
static int message_pack(const ProtobufCMessage *msg, uint8_t **out, size_t *len)
{
    size_t size = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = malloc(size ? size : 1);
    if (buf == NULL) {
        return SW_ENOMEM;
    }
    *len = protobuf_c_message_pack(msg, buf);
    *out = buf;
    return 0;
}

int sw__instance_properties_pack(const sw_config_t *cfg, uint8_t **out, size_t *len)
{
    if (cfg == NULL || out == NULL || len == NULL) {
        return SW_EINVAL;
    }
    *out = NULL;
    *len = 0;
    host_facts_t f;
    host_facts_read(&f);

    Skywalking__V3__KeyStringValuePair kv[PROPS_MAX];
    Skywalking__V3__KeyStringValuePair *kvp[PROPS_MAX];
    size_t n = 0;
#define PROP(k, v)                                           \
    do {                                                     \
        skywalking__v3__key_string_value_pair__init(&kv[n]); \
        kv[n].key = (char *)(k);                             \
        kv[n].value = (char *)(v);                           \
        kvp[n] = &kv[n];                                     \
        n++;                                                 \
    } while (0)
    PROP("OS Name", f.os_name);
    PROP("hostname", f.hostname);
    for (size_t i = 0; i < f.ipv4_count; i++) {
        PROP("ipv4", f.ipv4[i]);
    }
    PROP("Process No.", f.pid);
    PROP("language", "C");
    PROP("agent_version", SW_AGENT_VERSION);
#undef PROP

    Skywalking__V3__InstanceProperties msg;
    skywalking__v3__instance_properties__init(&msg);
    msg.service = (char *)cfg->service_name;
    msg.serviceinstance = (char *)cfg->instance_name;
    msg.n_properties = n;
    msg.properties = kvp;
    msg.layer = (char *)"";
    return message_pack(&msg.base, out, len);
}

int sw__instance_ping_pack(const sw_config_t *cfg, uint8_t **out, size_t *len)
{
    if (cfg == NULL || out == NULL || len == NULL) {
        return SW_EINVAL;
    }
    *out = NULL;
    *len = 0;
    Skywalking__V3__InstancePingPkg msg;
    skywalking__v3__instance_ping_pkg__init(&msg);
    msg.service = (char *)cfg->service_name;
    msg.serviceinstance = (char *)cfg->instance_name;
    msg.layer = (char *)"";
    return message_pack(&msg.base, out, len);
}
