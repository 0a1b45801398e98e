/*
 * fuzz_cyg_patterns.c - the SW_CYG_* pattern list parser on any text, then the filters it
 * builds matched against a few function names and object paths (fnmatch on fuzzed patterns):
 * rejected with a terminated message naming the setting, or accepted, never a fault.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "instrument/cyg_config.h"
#include "skywalking.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const keys[] = {"SW_CYG_INCLUDE", "SW_CYG_INCLUDE_FILE", "SW_CYG_EXCLUDE",
                                   "SW_CYG_EXCLUDE_FILE"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char text[4 * SW__CYG_PATTERN_LEN * 2];
    static sw__cyg_config_t cfg;
    if (size < 1) {
        return 0;
    }
    size_t n = size - 1 < sizeof text - 1 ? size - 1 : sizeof text - 1;
    memcpy(text, data + 1, n);
    text[n] = '\0';
    memset(&cfg, 0, sizeof cfg);
    sw__cyg_list_t *lists[] = {&cfg.include, &cfg.include_file, &cfg.exclude, &cfg.exclude_file};
    size_t which = data[0] % 4;
    char err[256];
    err[0] = '\0';
    int rc = sw__cyg_list_parse(lists[which], keys[which], text, err, sizeof err);
    if (rc != 0) {
        if (rc != SW_ECONFIG || memchr(err, '\0', sizeof err) == NULL ||
            strncmp(err, keys[which], strlen(keys[which])) != 0) {
            abort();
        }
        return 0;
    }
    for (uint32_t i = 0; i < lists[which]->count; i++) {
        if (memchr(lists[which]->patterns[i], '\0', SW__CYG_PATTERN_LEN) == NULL) {
            abort();
        }
    }
    (void)sw__cyg_config_traced(&cfg, "orders::lookup(int)", "/usr/lib/liborders.so.1");
    (void)sw__cyg_config_traced(&cfg, "main", "app");
    (void)sw__cyg_config_traced(&cfg, "", "/");
    return 0;
}
