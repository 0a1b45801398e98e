/*
 * swtrace [--json] [--no-color] [--crash] FILE...
 *
 * Shows the traces in segment files written by the agent's file reporter. Exit codes: 0 done,
 * 1 usage error, 2 a file could not be read or is not a (complete) segment file.
 */
#include "swtrace.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *out)
{
    fputs("usage: swtrace [--json] [--no-color] [--crash] FILE...\n"
          "Shows the SkyWalking traces in segment files (varint length + SegmentObject,\n"
          "repeated) as trees with a timing waterfall, or as JSON with --json.\n"
          "  --json      one JSON document: an array of traces with segments and spans\n"
          "  --no-color  no ANSI colors (default when stdout is not a terminal)\n"
          "  --crash     each FILE is a crash spool or a directory of them\n"
          "              (SW_AGENT_CRASH_DIR): the segments a crashed process recorded\n"
          "Exit status: 0 ok, 1 usage, 2 unreadable, truncated or foreign file.\n",
          out);
}

int main(int argc, char **argv)
{
    bool json = false, crash = false;
    bool color = isatty(STDOUT_FILENO) && getenv("NO_COLOR") == NULL;
    int first_file = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--crash") == 0) {
            crash = true;
        } else if (strcmp(argv[i], "--no-color") == 0) {
            color = false;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--") == 0) {
            first_file = i + 1;
            break;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "swtrace: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 1;
        } else {
            first_file = i;
            break;
        }
    }
    if (first_file >= argc) {
        fputs("swtrace: no input file\n", stderr);
        usage(stderr);
        return 1;
    }
    sw__trace_set_t set = {0};
    char err[512];
    for (int i = first_file; i < argc; i++) {
        const char *path = strcmp(argv[i], "-") == 0 ? "/dev/stdin" : argv[i];
        int rc =
            crash ? sw__trace_set_read_crash(&set, path, json ? stderr : stdout, err, sizeof(err))
                  : sw__trace_set_read_file(&set, path, err, sizeof(err));
        if (rc != 0) {
            fprintf(stderr, "swtrace: %s\n", err);
            sw__trace_set_destroy(&set);
            return 2;
        }
    }
    sw__trace_forest_t forest;
    int rc = sw__trace_forest_build(&forest, &set);
    if (rc == 0 && json) {
        rc = sw__trace_print_json(stdout, &forest, &set);
    } else if (rc == 0) {
        sw__trace_print_text(stdout, &forest, &set, color);
    }
    if (rc != 0) {
        fprintf(stderr, "swtrace: %s\n", sw__trace_strerror(rc));
    }
    sw__trace_forest_destroy(&forest);
    sw__trace_set_destroy(&set);
    if (fflush(stdout) != 0) {
        perror("swtrace: stdout");
        return 2;
    }
    return rc == 0 ? 0 : 2;
}
