/*
 * fuzz_log_check.h - the log handler of the agent's fuzzers over input from a collector
 * (fuzz_grpc_commands.c, fuzz_cds.c): every message is one line of printable ASCII within the
 * log's bounds, whatever the input held (the agent escapes and caps what it quotes); anything
 * else aborts, which the fuzzer reports.
 */
#ifndef FUZZ_LOG_CHECK_H
#define FUZZ_LOG_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "log/log.h"

static inline void fuzz_log_line_check(sw_log_level_t level, const char *message, void *opaque)
{
    (void)level;
    (void)opaque;
    size_t len = strlen(message);
    if (len > SW__LOG_LINE_MAX + 64) {
        abort();
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)message[i];
        if (c < 0x20 || c >= 0x7f) { /* escaped: not even UTF-8 from outside gets through */
            abort();
        }
    }
}

#endif /* FUZZ_LOG_CHECK_H */
