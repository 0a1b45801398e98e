/*
 * fuzz_producer_config.c - the SW_KAFKA_PRODUCER_CONFIG list parser on any text: it is applied
 * or rejected with a terminated message that starts with the setting's name, never a fault;
 * an accepted list then passes through the producer's combination check.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/producer_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char text[SW_CONFIG_TEXT_MAX];
    if (size >= sizeof text) {
        size = sizeof text - 1;
    }
    memcpy(text, data, size);
    text[size] = '\0'; /* as sw_config_set stores it: text up to the first NUL */
    kp_conf_t *conf = kp_conf_new();
    if (conf == NULL) {
        return 0;
    }
    char err[512];
    err[0] = '\0';
    int rc = sw__producer_config_apply(conf, text, err, sizeof err);
    if (rc != 0 && (rc != SW_ECONFIG || memchr(err, '\0', sizeof err) == NULL ||
                    strncmp(err, "SW_KAFKA_PRODUCER_CONFIG", 24) != 0)) {
        abort();
    }
    if (rc == 0) {
        (void)kp_conf_validate(conf, err, sizeof err);
    }
    kp_conf_destroy(conf);
    return 0;
}
