/*
 * sw_secure_probe.c - a program linked with libskywalking for test_secure.c, which runs a
 * setuid-root copy of it as an unprivileged user. `sw_secure_probe env` starts the agent from
 * the environment (sw_init(NULL)); `sw_secure_probe pass` passes its own configuration (file
 * reporter to /dev/null). Either way it records one span, stops the agent and prints
 * "sw_init=<name of the code>" (sw_err_name) on stdout.
 */
#include <stdio.h>
#include <string.h>

#include "skywalking.h"

int main(int argc, char **argv)
{
    int rc;
    if (argc > 1 && strcmp(argv[1], "pass") == 0) {
        sw_config_t cfg;
        sw_config_init(&cfg);
        snprintf(cfg.service_name, sizeof cfg.service_name, "probe");
        snprintf(cfg.file_path, sizeof cfg.file_path, "/dev/null");
        rc = sw_init(&cfg);
    } else {
        rc = sw_init(NULL);
    }
    sw_local_span_begin("probe");
    sw_span_end();
    if (rc == 0) {
        sw_shutdown();
    }
    printf("sw_init=%s\n", sw_err_name(rc));
    return 0;
}
