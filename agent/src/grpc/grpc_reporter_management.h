/*
 * grpc_reporter_management.h - the gRPC reporter's management thread (internal): it tells the
 * collector who this process is and that it is alive, through skywalking.v3.ManagementService:
 *
 *   at start            reportInstanceProperties, then keepAlive
 *   every period        keepAlive (SW_AGENT_HEARTBEAT_PERIOD seconds)
 *   every 10th period   reportInstanceProperties first (also whenever it has not yet been
 *                       accepted)
 *
 * The thread owns its own connection (so a slow management call never delays segments), sleeps
 * on a condition variable with a monotonic timeout, and is woken by stop(), which also cancels
 * a call in flight. Commands in the answers go to the shared notices.
 */
#ifndef SW_GRPC_GRPC_REPORTER_MANAGEMENT_H
#define SW_GRPC_GRPC_REPORTER_MANAGEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "grpc_reporter_commands.h"
#include "skywalking.h"

/* Heartbeats between two reportInstanceProperties. */
#define SW_GRPC_PROPERTIES_EVERY 10

typedef struct sw__grpc_management sw__grpc_management_t;

/*
 * Packs the properties and ping messages for cfg (resolved names), opens a connection and
 * starts the thread. `notices` must outlive the thread. Returns 0 and *out; SW_ECONFIG (bad
 * address list or TLS file, message in errbuf), SW_ENOMEM or SW_ETHREAD; nothing is left
 * running on error. Any thread.
 */
int sw__grpc_management_start(const sw_config_t *cfg, sw__grpc_notices_t *notices,
                              sw__grpc_management_t **out, char *errbuf, size_t errlen);

/*
 * Wakes the thread, cancels its call in flight, joins it and frees everything. Blocks until
 * the thread ends (promptly: a cancelled call ends at once). Idempotent on NULL.
 */
void sw__grpc_management_stop(sw__grpc_management_t *m);

#endif /* SW_GRPC_GRPC_REPORTER_MANAGEMENT_H */
