/*
 * secret_names.c - which setting and property names hold secrets: sw__config_name_is_secret
 * (config.h), for the messages and the Start event of the settings, and of the producer
 * properties, which is why it stands apart from both.
 */
#include <string.h>

#include "config.h"

bool sw__config_name_is_secret(const char *name)
{
    /* "password": ssl.key.password, sasl.password; "jaas": sasl.jaas.config; "keystore.key":
     * the Java client's inline PEM key (ssl.keystore.key); "key.pem": librdkafka's
     * (ssl.key.pem); "credentials": OAuth client credentials. */
    static const char *const words[] = {"password",       "secret",       "token",   "jaas",
                                        "authentication", "keystore.key", "key.pem", "credentials"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        if (strcasestr(name, words[i]) != NULL) {
            return true;
        }
    }
    return false;
}
