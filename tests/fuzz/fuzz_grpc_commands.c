/*
 * fuzz_grpc_commands.c - the gRPC reporter's Commands path on any bytes as if from a collector:
 * parsed as skywalking.v3.Commands (protobuf-c) or refused, and every message the agent then
 * logs is one line of printable text within the log's bounds, whatever the collector sent
 * (command names and arguments are escaped and capped). Also a failed call's status details.
 */
#include <grpc/status.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_log_check.h"
#include "log/log.h"
#include "grpc/grpc_reporter_commands.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    if (!once) {
        sw_set_log_handler(fuzz_log_line_check, NULL);
        once = 1;
    }
    sw__log_reset(0); /* every input may log, not only the first five */
    sw__grpc_notices_t n;
    sw__grpc_notices_init(&n);
    int count = sw__grpc_notices_commands(&n, data, size, "collect");
    if (count < -1) {
        abort();
    }
    /* The same bytes as the details of a failed call. */
    char details[256];
    size_t dn = size < sizeof details - 1 ? size : sizeof details - 1;
    memcpy(details, data, dn);
    details[dn] = '\0';
    (void)sw__grpc_notices_status(&n, GRPC_STATUS_UNAUTHENTICATED, details, "collect",
                                  "127.0.0.1:11800", size % 2 == 0);
    (void)sw__grpc_notices_status(&n, GRPC_STATUS_INTERNAL, details, "keepAlive", "127.0.0.1:11800",
                                  false);
    sw__grpc_notices_destroy(&n);
    return 0;
}
