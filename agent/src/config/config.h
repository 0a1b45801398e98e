/*
 * config.h - the agent's settings (internal side of sw_config_t). The parsers are pure functions
 * over buffers (no I/O, no global state), fuzzed by tests/fuzz/fuzz_config.c.
 */
#ifndef SW_CONFIG_CONFIG_H
#define SW_CONFIG_CONFIG_H

#include <stddef.h>

#include "skywalking.h"

/* Number of settings and the name of the i-th (for the environment loader). */
size_t sw__config_key_count(void);
const char *sw__config_key_name(size_t i);

/* sw_config_set for a value of `len` bytes (no NUL needed). Same contract. */
int sw__config_set_n(sw_config_t *cfg, const char *key, const char *value, size_t len, char *errbuf,
                     size_t errlen);

/*
 * Applies a config file's text: `KEY=value` lines, blank lines and `#` comments; spaces around
 * key and value are trimmed. `origin` names the file in messages ("agent.conf:3: unknown key
 * 'SW_AGNT_NAME'"). Returns 0 or SW_ECONFIG at the first bad line (earlier lines stay applied).
 */
int sw__config_parse_buffer(sw_config_t *cfg, const char *buf, size_t len, const char *origin,
                            char *errbuf, size_t errlen);

/*
 * Resolves what the defaults leave open (service name = program name, instance name =
 * <process uuid>@<hostname>, reporter = file unless a backend is configured) and checks the
 * combination. Returns 0 or SW_ECONFIG with a message. Reads the host name.
 */
int sw__config_finalize(sw_config_t *cfg, char *errbuf, size_t errlen);

/* Messages into errbuf (NULL-safe, always NUL-terminated). */
void sw__errbuf_printf(char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* SW_CONFIG_CONFIG_H */
