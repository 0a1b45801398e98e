/*
 * config.h - the agent's settings (internal side of sw_config_t). The parsers are pure functions
 * over buffers (no I/O, no global state), fuzzed by tests/fuzz/fuzz_config.c.
 */
#ifndef SW_CONFIG_CONFIG_H
#define SW_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "skywalking.h"

/* SW_PLUGIN_SQL_BODY_MAX_LENGTH: its default (the Java agent's plugin.jdbc.sql_body_max_length)
   and its bound (the preload assembles db.statement and db.sql.parameters in stack buffers of
   that size, agent/preload/preload_db.c). */
#define SW__PLUGIN_SQL_BODY_DEFAULT 2048
#define SW__PLUGIN_SQL_BODY_MAX     16384

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

/*
 * Checks what single values cannot show, for every setting whatever reporter is selected
 * (config_check.c): address lists (SW_AGENT_COLLECTOR_BACKEND_SERVICES,
 * SW_KAFKA_BOOTSTRAP_SERVERS), Kafka topic names with their namespace, SW_KAFKA_PRODUCER_CONFIG
 * (parsed into a throw-away kp_conf and validated), and SW_AGENT_SSL_CA_FILE (read and parsed:
 * PEM with at least one certificate). Returns 0 or SW_ECONFIG with a message naming the
 * setting the user wrote. Reads the CA file.
 */
int sw__config_check(const sw_config_t *cfg, char *errbuf, size_t errlen);

/*
 * Checks a comma list of host:port addresses (empty items are errors) for the setting `key`
 * (as the message should name it). Returns 0 or SW_ECONFIG with the bad item escaped. Pure.
 */
int sw__address_list_check(const char *key, const char *list, char *errbuf, size_t errlen);

/*
 * Reads the CA bundle at `path` (SW_AGENT_SSL_CA_FILE, opened as file_open.h says) into a
 * malloc'd NUL-terminated *pem and checks that it holds at least one well-formed PEM
 * certificate. Returns 0, SW_ENOMEM, or SW_ECONFIG naming SW_AGENT_SSL_CA_FILE (*pem NULL).
 */
int sw__config_ca_read(const char *path, char **pem, char *errbuf, size_t errlen);

/*
 * Reads the client certificate of gRPC mutual TLS (config/client_cert.c): the private key
 * named by SW_AGENT_SSL_KEY_PATH and the certificate chain named by
 * SW_AGENT_SSL_CERT_CHAIN_PATH, both PEM, into malloc'd NUL-terminated *key and *chain. Both
 * settings empty: returns 0 with both NULL. Returns SW_ECONFIG naming the setting (only one
 * of the two set, unreadable, no PEM private key / certificate in it), SW_ENOMEM. Never puts
 * the key's content in a message. Free *key with sw__config_secret_free.
 */
int sw__config_client_cert_read(const sw_config_t *cfg, char **key, char **chain, char *errbuf,
                                size_t errlen);

/*
 * Writes the settings of cfg that differ from sw_config_init's defaults as "KEY=value"
 * joined by spaces, in the order of the settings table, whole entries only, into buf (NUL-
 * terminated); secrets (and any text holding a PEM block) as KEY=(not shown), text escaped
 * and cut; SW_KAFKA_PRODUCER_CONFIG as its property names only,
 * "[acks,sasl.password=(not shown)]" (sw__producer_config_describe). Returns the length. Pure.
 * The Start event's OPTS parameter: it never carries a secret.
 */
size_t sw__config_describe(const sw_config_t *cfg, char *buf, size_t len);

/* Wipes and frees a NUL-terminated secret read by the agent (NULL is fine). */
void sw__config_secret_free(char *secret);

/* Wipes len bytes of a secret about to die (a token's copy, a key's text) with
   OPENSSL_cleanse, which the compiler cannot drop as a dead store. */
void sw__config_secret_wipe(void *secret, size_t len);

/* What a text setting may hold: LIST no control byte but tab (a list blank); NAME (service
   and instance names) no control byte; SECRET printable ASCII only (0x20..0x7e). */
typedef enum { SW__TEXT_LIST, SW__TEXT_NAME, SW__TEXT_SECRET } sw__text_rule_t;

/*
 * Checks `len` bytes of a text setting against `rule` (control bytes are < 0x20 and 0x7f).
 * Returns 0 or SW_ECONFIG with a message naming key and the offset, never the value. Pure.
 */
int sw__config_text_check(const char *key, sw__text_rule_t rule, const char *value, size_t len,
                          char *errbuf, size_t errlen);

/* Whether a setting or property name holds a secret (its value is never printed): names that
   contain password, secret, token, jaas, authentication, keystore.key, key.pem or credentials, in
   any case. Pure. */
bool sw__config_name_is_secret(const char *name);

/* Whether the process runs with elevated privileges (getauxval(AT_SECURE): setuid, setgid or
   file capabilities): then the agent reads no environment and no file the environment names. */
bool sw__config_secure(void);

#endif /* SW_CONFIG_CONFIG_H */
