/*
 * dlopen_bench.c - what the dlopen-safe thread-locals of libskywalking.so cost: the library as
 * installed (dynamic TLS model with TLS descriptors, agent/CMakeLists.txt "Thread-locals")
 * against the same objects built with the initial-exec model (libskywalking_ie_bench.so, a
 * build of this benchmark only), both loaded with dlopen into this program, alternating.
 *
 * Each round loads one library, starts its agent on /dev/null, warms it up for 30 ms, and times
 * span pairs inside one
 * open entry span (249 pairs per segment, under the span limit) through the stack API
 * (sw_local_span_begin / sw_span_end) and through request contexts (sw_span_ref_begin_local /
 * sw_span_ref_end under the context's entry span); then shuts the agent down and unloads the
 * library. Medians over the rounds; the calling thread's wall time per pair (the consumer's
 * work per segment is the same for both builds and is not what differs).
 *
 * Last line: tlsdesc_pair_ns, ie_pair_ns, ratio_pair (tlsdesc / ie), tlsdesc_ref_pair_ns,
 * ie_ref_pair_ns, ratio_ref_pair, dropped (segments dropped or failed: must be 0).
 *
 * Usage: dlopen_bench [--smoke] [--rounds R]
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"
#include "skywalking.h"

enum { PAIRS = 249, MAX_ROUNDS = 31 };

typedef struct lib {
    void *h;
    int (*init)(const sw_config_t *);
    int (*shutdown)(void);
    void (*config_init)(sw_config_t *);
    void (*stats)(sw_stats_t *);
    void (*entry_begin)(const char *, const char *);
    void (*local_begin)(const char *);
    void (*end)(void);
    int (*ctx_entry)(const char *, const sw_headers_t *, sw_span_ref_t *);
    int (*ref_local)(sw_span_ref_t, const char *, sw_span_ref_t *);
    int (*ref_end)(sw_span_ref_t);
} lib_t;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (p == NULL) {
        fprintf(stderr, "dlopen_bench: %s\n", dlerror());
        exit(1);
    }
    return p;
}

static lib_t load(const char *path)
{
    lib_t l;
    l.h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (l.h == NULL) {
        fprintf(stderr, "dlopen_bench: %s\n", dlerror());
        exit(1);
    }
    *(void **)&l.init = sym(l.h, "sw_init");
    *(void **)&l.shutdown = sym(l.h, "sw_shutdown");
    *(void **)&l.config_init = sym(l.h, "sw_config_init");
    *(void **)&l.stats = sym(l.h, "sw_stats");
    *(void **)&l.entry_begin = sym(l.h, "sw_entry_span_begin");
    *(void **)&l.local_begin = sym(l.h, "sw_local_span_begin");
    *(void **)&l.end = sym(l.h, "sw_span_end");
    *(void **)&l.ctx_entry = sym(l.h, "sw_context_begin_entry");
    *(void **)&l.ref_local = sym(l.h, "sw_span_ref_begin_local");
    *(void **)&l.ref_end = sym(l.h, "sw_span_ref_end");
    return l;
}

/* One round of one library: the median ns per pair of each API over `segments` segments. */
static void round_of(const char *path, int segments, double *pair_ns, double *ref_ns,
                     uint64_t *lost)
{
    lib_t l = load(path);
    sw_config_t cfg;
    l.config_init(&cfg);
    snprintf(cfg.file_path, sizeof cfg.file_path, "/dev/null");
    snprintf(cfg.service_name, sizeof cfg.service_name, "dlopen-bench");
    if (l.init(&cfg) != 0) {
        fprintf(stderr, "dlopen_bench: sw_init failed\n");
        exit(1);
    }
    /* Warm up: the pool, the caches and the span clock's calibration (20 ms after sw_init,
       agent/src/segment/clock.h; before it the clock reads clock_gettime). */
    double warm_end = now_ns() + 30e6;
    while (now_ns() < warm_end) {
        l.entry_begin("warm", NULL);
        for (int i = 0; i < PAIRS; i++) {
            l.local_begin("local");
            l.end();
        }
        l.end();
    }
    double *v = malloc(sizeof(double) * (size_t)segments);
    double *w = malloc(sizeof(double) * (size_t)segments);
    for (int s = 0; s < segments; s++) {
        l.entry_begin("GET /bench", NULL);
        double t0 = now_ns();
        for (int i = 0; i < PAIRS; i++) {
            l.local_begin("local");
            l.end();
        }
        v[s] = (now_ns() - t0) / PAIRS;
        l.end();
        sw_span_ref_t root, child;
        l.ctx_entry("GET /bench", NULL, &root);
        t0 = now_ns();
        for (int i = 0; i < PAIRS; i++) {
            l.ref_local(root, "local", &child);
            l.ref_end(child);
        }
        w[s] = (now_ns() - t0) / PAIRS;
        l.ref_end(root);
    }
    l.shutdown();
    sw_stats_t st;
    l.stats(&st);
    *lost += st.segments_dropped + st.segments_failed;
    *pair_ns = bench_median(v, segments);
    *ref_ns = bench_median(w, segments);
    free(v);
    free(w);
    dlclose(l.h);
}

int main(int argc, char **argv)
{
    int rounds = 7, segments = 400;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            rounds = 2;
            segments = 40;
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "dlopen_bench: --rounds must be 1..%d\n", MAX_ROUNDS);
        return 2;
    }
    double d[MAX_ROUNDS], e[MAX_ROUNDS], dr[MAX_ROUNDS], er[MAX_ROUNDS];
    uint64_t lost = 0;
    for (int r = 0; r < rounds; r++) { /* alternating which goes first */
        if (r % 2 == 0) {
            round_of(SW_BENCH_LIB_TLSDESC, segments, &d[r], &dr[r], &lost);
            round_of(SW_BENCH_LIB_IE, segments, &e[r], &er[r], &lost);
        } else {
            round_of(SW_BENCH_LIB_IE, segments, &e[r], &er[r], &lost);
            round_of(SW_BENCH_LIB_TLSDESC, segments, &d[r], &dr[r], &lost);
        }
    }
    double dm = bench_median(d, rounds), em = bench_median(e, rounds);
    double drm = bench_median(dr, rounds), erm = bench_median(er, rounds);
    printf("span pair, libskywalking.so (TLS descriptors)  %6.1f ns\n", dm);
    printf("span pair, initial-exec build                 %6.1f ns\n", em);
    printf("request-context pair, TLS descriptors         %6.1f ns\n", drm);
    printf("request-context pair, initial-exec build      %6.1f ns\n", erm);
    printf("tlsdesc_pair_ns=%.1f ie_pair_ns=%.1f ratio_pair=%.2f tlsdesc_ref_pair_ns=%.1f "
           "ie_ref_pair_ns=%.1f ratio_ref_pair=%.2f dropped=%llu\n",
           dm, em, dm / em, drm, erm, drm / erm, (unsigned long long)lost);
    if (lost != 0) {
        fprintf(stderr, "dlopen_bench: %llu segments dropped or failed: not valid\n",
                (unsigned long long)lost);
        return 1;
    }
    return 0;
}
