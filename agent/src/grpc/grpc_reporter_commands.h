/*
 * grpc_reporter_commands.h - what the collector tells the gRPC reporter, shown to the user
 * once (internal): the Commands of a response (parsed with protobuf-c; this agent acts on none
 * of them, so each distinct command name is logged (sw__log) the first time it arrives), and
 * the notable call statuses (a rejected token, other errors), each logged once per code.
 *
 * Threads: the consumer thread and the management thread report here concurrently; the state
 * is protected by `lock`. Logging happens at most once per distinct thing, so it never floods.
 */
#ifndef SW_GRPC_GRPC_REPORTER_COMMANDS_H
#define SW_GRPC_GRPC_REPORTER_COMMANDS_H

#include <grpc/status.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Distinct command names remembered; more are logged once as "further commands". */
#define SW_GRPC_COMMANDS_SEEN_MAX 16

typedef struct sw__grpc_notices {
    pthread_mutex_t lock;
    /* Everything below is protected by lock. */
    char *seen[SW_GRPC_COMMANDS_SEEN_MAX]; /* command names already logged (malloc'd) */
    size_t seen_count;
    bool overflow_logged;
    bool malformed_logged;
    uint32_t statuses_logged; /* bit n: status code n was logged */
} sw__grpc_notices_t;

void sw__grpc_notices_init(sw__grpc_notices_t *n);
void sw__grpc_notices_destroy(sw__grpc_notices_t *n);

/*
 * Parses a packed skywalking.v3.Commands (`len` bytes; an empty message has no command) that
 * answered `origin` (e.g. "collect") and logs each command name not seen before. Returns the
 * number of commands in the message, or -1 when it is not a Commands message (logged once).
 * Any thread.
 */
int sw__grpc_notices_commands(sw__grpc_notices_t *n, const uint8_t *data, size_t len,
                              const char *origin);

/*
 * Logs a failed call's status the first time its code appears. UNAUTHENTICATED and
 * PERMISSION_DENIED name SW_AGENT_AUTHENTICATION and say whether a token was sent.
 * UNAVAILABLE and DEADLINE_EXCEEDED are left to the connection's transition log. Returns true
 * when this call logged. Any thread.
 */
bool sw__grpc_notices_status(sw__grpc_notices_t *n, grpc_status_code status, const char *details,
                             const char *origin, const char *target, bool token_sent);

#endif /* SW_GRPC_GRPC_REPORTER_COMMANDS_H */
