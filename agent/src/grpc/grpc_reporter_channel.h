/*
 * grpc_reporter_channel.h - the gRPC reporter's connection to the collector (internal): the
 * list of SW_AGENT_COLLECTOR_BACKEND_SERVICES addresses, the channel to the current one, fail
 * over to the next address on UNAVAILABLE, and an exponential, jittered backoff once every
 * address failed in a row.
 *
 * While the connection is backing off, or gRPC says the channel is in TRANSIENT_FAILURE,
 * sw__grpc_conn_acquire returns NULL at once: the caller fails its batch fast instead of
 * blocking, so the DataCarrier keeps draining and every segment is still counted.
 *
 * Threads: a connection is used by one thread at a time (the reporter gives the consumer
 * thread and the management thread one connection each); nothing in it is shared, so it has
 * no lock. State changes (down, back up) are logged (sw__log) once per transition.
 */
#ifndef SW_GRPC_GRPC_REPORTER_CHANNEL_H
#define SW_GRPC_GRPC_REPORTER_CHANNEL_H

#include <grpc/grpc.h>
#include <grpc/status.h>
#include <stdbool.h>
#include <stddef.h>

#include "skywalking.h"

/* Backoff after every address failed in a row: starts here, doubles, capped (ms). */
#define SW_GRPC_BACKOFF_INITIAL_MS 100
#define SW_GRPC_BACKOFF_MAX_MS     5000
/* The largest answer the agent takes from the collector (GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
   gRPC's default is 4 MiB): every answer is a Commands message. A real OAP answers collect,
   InstanceProperties and keepAlive with no command or a few short ones; a configuration
   discovery answer carries the service's dynamic settings (the agent uses three, each at most
   SW_CONFIG_TEXT_MAX bytes), and so may a getProfileTaskCommands answer (role "profile tasks":
   a few tasks of nine short arguments each). A larger answer fails its call with
   RESOURCE_EXHAUSTED: a
   hostile or broken collector cannot make the agent allocate and parse megabytes. */
#define SW_GRPC_ANSWER_MAX     4096
#define SW_GRPC_CDS_ANSWER_MAX 16384
/* Most addresses taken from SW_AGENT_COLLECTOR_BACKEND_SERVICES. */
#define SW_GRPC_ADDRESSES_MAX 16

typedef struct sw__grpc_conn sw__grpc_conn_t;

/*
 * Parses cfg->backend_services ("host:port[,host:port...]") and prepares the credentials
 * (TLS when cfg->grpc_ssl, with the PEM roots read from cfg->grpc_ssl_ca_file when set).
 * `role` names the user in log lines ("segments", "management"); the roles "configuration
 * discovery" and "profile tasks" may receive answers of SW_GRPC_CDS_ANSWER_MAX bytes, every other
 * one SW_GRPC_ANSWER_MAX. A token (cfg->authentication) without TLS is warned about once per
 * process: it travels in clear text. Does not connect. Returns 0
 * and *out; SW_ECONFIG with a message naming the key in errbuf (empty list, an entry without
 * a port, too many entries, unreadable CA file); SW_ENOMEM. grpc_init() must have been called.
 * Any thread.
 */
int sw__grpc_conn_create(const sw_config_t *cfg, const char *role, sw__grpc_conn_t **out,
                         char *errbuf, size_t errlen);

/*
 * The channel to use for a call now, creating it for the current address if needed, or NULL
 * while backing off or while the channel is in TRANSIENT_FAILURE (then counted as a failure
 * for the backoff). Never blocks. The channel stays owned by the connection and is valid until
 * the next sw__grpc_conn_outcome or sw__grpc_conn_destroy.
 */
grpc_channel *sw__grpc_conn_acquire(sw__grpc_conn_t *c);

/*
 * Tells the connection how a call on the acquired channel ended. OK resets the backoff;
 * UNAVAILABLE and DEADLINE_EXCEEDED close the channel and move to the next address (with the
 * backoff once every address failed in a row); other codes leave the connection as it is.
 * `details` (may be NULL) goes into the log line.
 */
void sw__grpc_conn_outcome(sw__grpc_conn_t *c, grpc_status_code status, const char *details);

/* The current address ("host:port"). Valid until sw__grpc_conn_destroy. */
const char *sw__grpc_conn_target(const sw__grpc_conn_t *c);

/* The completion queue for calls of this connection (pluck type, owned by it). */
grpc_completion_queue *sw__grpc_conn_queue(const sw__grpc_conn_t *c);

/* Closes the channel and frees everything. No call of this connection may be in flight. */
void sw__grpc_conn_destroy(sw__grpc_conn_t *c);

#endif /* SW_GRPC_GRPC_REPORTER_CHANNEL_H */
