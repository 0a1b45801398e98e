/*
 * instance_properties.h - who this process is, as the OAP's management service expects it
 * (internal): the packed SkyWalking v3 `InstanceProperties` (sent when a reporter starts and
 * then periodically) and `InstancePingPkg` (the keep-alive). Shared by the Kafka reporter
 * (topic skywalking-managements) and the gRPC reporter (ManagementService).
 *
 * The properties are the ones SkyWalking's own agents send, under the same keys, so that the
 * OAP UI shows them the same way:
 *
 *   key            value
 *   "OS Name"      uname(2) sysname, e.g. "Linux"
 *   "hostname"     gethostname(2)
 *   "ipv4"         one entry per IPv4 address of an interface that is up (getifaddrs(3)),
 *                  non-loopback first; loopback addresses only when there is no other
 *   "Process No."  the process id in decimal
 *   "language"     "C"
 *   "agent_version" the skywalking-c version (the CMake project version)
 *
 * `layer` is left empty (like the Java, Python and Go agents): the OAP then derives the
 * layer itself (GENERAL for a language agent).
 *
 * All functions are pure apart from reading the host facts above; they may run on any thread
 * and never block on the network.
 */
#ifndef SW_ENCODE_INSTANCE_PROPERTIES_H
#define SW_ENCODE_INSTANCE_PROPERTIES_H

#include <stddef.h>
#include <stdint.h>

#include "skywalking.h"

/* The period of the heartbeats (properties and pings), SW_AGENT_HEARTBEAT_PERIOD, in ms; 30 s
   for a hand-filled configuration that left it 0. */
static inline uint32_t sw__heartbeat_ms(const sw_config_t *cfg)
{
    return (cfg->heartbeat_period_s != 0 ? cfg->heartbeat_period_s : 30) * 1000u;
}

/* The most "ipv4" entries reported (the rest are left out). */
#define SW_INSTANCE_IPV4_MAX 16

/*
 * Packs the InstanceProperties of this process for cfg's service_name and instance_name
 * (which must be resolved, e.g. by sw_init). Returns 0 with *out (malloc'd; the caller frees it
 * with free()) and *len, or SW_EINVAL (NULL argument) / SW_ENOMEM (then *out is NULL).
 */
int sw__instance_properties_pack(const sw_config_t *cfg, uint8_t **out, size_t *len);

/*
 * Packs the InstancePingPkg (service, serviceInstance, empty layer) for cfg. Same contract as
 * sw__instance_properties_pack.
 */
int sw__instance_ping_pack(const sw_config_t *cfg, uint8_t **out, size_t *len);

#endif /* SW_ENCODE_INSTANCE_PROPERTIES_H */
