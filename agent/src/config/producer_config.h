/*
 * producer_config.h - the SW_KAFKA_PRODUCER_CONFIG list (internal): `name=value` pairs
 * separated by commas, with the Java producer's property names. A piece without '=' continues
 * the previous value, so that `bootstrap.servers=a:9092,b:9092` works. Fuzzed by
 * tests/fuzz/fuzz_producer_config.c.
 */
#ifndef SW_CONFIG_PRODUCER_CONFIG_H
#define SW_CONFIG_PRODUCER_CONFIG_H

#include <stddef.h>

#include "kproducer.h"

/*
 * Applies every property of `text` to conf with kp_conf_set (bootstrap.servers is first
 * checked as a host:port list). Returns 0 or SW_ECONFIG with a message that starts with
 * "SW_KAFKA_PRODUCER_CONFIG: <property>" (or names the bad piece by its position); the value
 * of a property whose name marks a secret (sw__config_name_is_secret) is never shown. Pure
 * apart from conf; any thread.
 */
int sw__producer_config_apply(kp_conf_t *conf, const char *text, char *errbuf, size_t errlen);

/*
 * Writes the property names of `text` (SW_KAFKA_PRODUCER_CONFIG) joined by commas into out
 * (NUL-terminated, whole names only), never a value: a property whose name marks a secret
 * (sw__config_name_is_secret) as "name=(not shown)", a name not of lower case, digits, dots
 * and dashes (it could be part of a secret holding a comma) as "?". Returns the length. Pure; any
 * thread. For the Start event's OPTS (sw__config_describe).
 */
size_t sw__producer_config_describe(const char *text, char *out, size_t len);

#endif /* SW_CONFIG_PRODUCER_CONFIG_H */
