/*
 * fuzz_config.c - libFuzzer target for the config-file parser and sw_config_set: any text is
 * applied or rejected with a message, never a fault, and text fields stay terminated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sw_config_t cfg;
    char err[256];
    sw_config_init(&cfg);
    int rc = sw__config_parse_buffer(&cfg, (const char *)data, size, "fuzz.conf", err, sizeof err);
    if (rc != 0 && (rc != SW_ECONFIG || memchr(err, '\0', sizeof err) == NULL)) {
        abort();
    }
    if (memchr(cfg.service_name, '\0', sizeof cfg.service_name) == NULL ||
        memchr(cfg.file_path, '\0', sizeof cfg.file_path) == NULL) {
        abort();
    }
    /* The same bytes as one value for each key. */
    for (size_t i = 0; i < sw__config_key_count(); i++) {
        (void)sw__config_set_n(&cfg, sw__config_key_name(i), (const char *)data, size, err,
                               sizeof err);
    }
    return 0;
}
