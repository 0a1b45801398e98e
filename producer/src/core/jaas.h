/*
 * jaas.h - the Java client's sasl.jaas.config entry: `<LoginModule class>
 * <required|requisite|sufficient|optional> [name=value]... ;` where a value is a
 * double-quoted string (\" and \\ escapes) or a bare word. Pure functions: any thread.
 */
#ifndef KP_CORE_JAAS_H
#define KP_CORE_JAAS_H

#include <stddef.h>

/* Takes the username and password options of a JAAS entry whose class fits the mechanism
 * (PlainLoginModule for PLAIN, ScramLoginModule for SCRAM-*; the full class name or its last
 * component). Returns 0 or KP_ECONF with a message that names an offset, never the text or a
 * value. Fuzzed by fuzz_scram. */
int kp__jaas_parse(const char *text, int mechanism, char *user, size_t user_len, char *pass,
                   size_t pass_len, char *errbuf, size_t errlen);

#endif /* KP_CORE_JAAS_H */
