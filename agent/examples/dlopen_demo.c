/*
 * dlopen_demo.c - libskywalking.so loaded into a running program with dlopen, as a plugin host
 * loads an extension: it traces one request through a request context, shuts the agent down and
 * unloads the library, as many times as asked.
 *
 *     sw_dlopen_demo [LIBRARY [ROUNDS]]      LIBRARY defaults to libskywalking.so.0
 *
 * The configuration comes from the environment as usual (SW_AGENT_NAME, SW_REPORTER_FILE_PATH,
 * ...). Prints one line per round; exits 0 when every round's segment was reported.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "skywalking.h"

int main(int argc, char **argv)
{
    const char *library = argc > 1 ? argv[1] : "libskywalking.so.0";
    int rounds = argc > 2 ? atoi(argv[2]) : 1;
    for (int round = 0; round < rounds; round++) {
        void *h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
            fprintf(stderr, "sw_dlopen_demo: %s\n", dlerror());
            return 1;
        }
        /* The library's functions, taken by name (the program does not link it). */
        int (*init)(const sw_config_t *) = (int (*)(const sw_config_t *))dlsym(h, "sw_init");
        int (*shutdown)(void) = (int (*)(void))dlsym(h, "sw_shutdown");
        void (*stats)(sw_stats_t *) = (void (*)(sw_stats_t *))dlsym(h, "sw_stats");
        int (*begin)(const char *, const sw_headers_t *, sw_span_ref_t *) = (int (*)(
            const char *, const sw_headers_t *, sw_span_ref_t *))dlsym(h, "sw_context_begin_entry");
        int (*end)(sw_span_ref_t) = (int (*)(sw_span_ref_t))dlsym(h, "sw_span_ref_end");
        if (init == NULL || shutdown == NULL || stats == NULL || begin == NULL || end == NULL) {
            fprintf(stderr, "sw_dlopen_demo: %s is not libskywalking\n", library);
            return 1;
        }
        int rc = init(NULL);
        if (rc != 0) {
            fprintf(stderr, "sw_dlopen_demo: sw_init failed (%d)\n", rc);
            return 1;
        }
        sw_span_ref_t request;
        begin("GET /plugin", NULL, &request);
        end(request);
        shutdown();
        sw_stats_t st;
        stats(&st);
        printf("round %d: segments finished %llu, reported %llu\n", round,
               (unsigned long long)st.segments_finished, (unsigned long long)st.segments_reported);
        if (dlclose(h) != 0) {
            fprintf(stderr, "sw_dlopen_demo: dlclose: %s\n", dlerror());
            return 1;
        }
        if (st.segments_reported != 1) {
            return 1;
        }
    }
    return 0;
}
