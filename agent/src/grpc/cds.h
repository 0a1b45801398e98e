/*
 * cds.h - dynamic configuration from the OAP (internal): every SW_AGENT_CDS_INTERVAL seconds
 * a thread of its own ("sw-cds") calls skywalking.v3.ConfigurationDiscoveryService/
 * fetchConfigurations with {service, uuid of the last configuration applied} on its own gRPC
 * connection. The answer is Commands; a command "ConfigurationDiscoveryCommand" carries the
 * args SerialNumber, UUID, then one key/value per setting, as the Java agent reads them:
 *
 *   - a UUID equal to the last one applied (or empty) changes nothing;
 *   - with a new UUID, each setting the agent knows (agent.sample_n_per_3_secs,
 *     agent.ignore_suffix, agent.span_limit_per_segment) takes the value given, or goes back
 *     to its value at sw_init when the command leaves it out (the Java agent's DELETE);
 *   - a bad value is logged (escaped) and ignored: the setting keeps its current value;
 *   - a key the agent does not know is ignored (logged at debug level);
 *   - the UUID is then remembered and sent with the next fetch.
 *
 * How the values change under running application threads: config/dynamic_config.h. gRPC
 * reporter only (nothing flows back to an agent over Kafka).
 */
#ifndef SW_GRPC_CDS_H
#define SW_GRPC_CDS_H

#include <stddef.h>
#include <stdint.h>

#include "grpc_reporter_commands.h"
#include "skywalking.h"

#define SW_CDS_COMMAND  "ConfigurationDiscoveryCommand"
#define SW_CDS_UUID_MAX 128

typedef struct sw__cds sw__cds_t;

/*
 * Opens a connection for cfg and starts the thread (period cfg->cds_interval_s, not 0).
 * `notices` (statuses worth logging once) must outlive it. Returns 0 and *out; SW_ECONFIG
 * (message in errbuf), SW_ENOMEM or SW_ETHREAD; nothing is left running on error.
 * grpc_init() must have run.
 */
int sw__cds_start(const sw_config_t *cfg, sw__grpc_notices_t *notices, sw__cds_t **out,
                  char *errbuf, size_t errlen);

/* Cancels a fetch in flight, joins the thread, frees everything. NULL: no-op. */
void sw__cds_stop(sw__cds_t *c);

/*
 * Applies one packed Commands answer as described above to the running agent; `last_uuid`
 * holds the UUID last applied ("" at first) and is updated. Returns the number of settings
 * applied (0 when nothing was: no command, same UUID), or -1 when `data` is not a Commands
 * message. One thread at a time (the CDS thread; the unit tests call it directly).
 */
int sw__cds_apply(char last_uuid[SW_CDS_UUID_MAX], const uint8_t *data, size_t len);

#endif /* SW_GRPC_CDS_H */
