/*
 * test_dlopen.c - libskywalking.so loaded into a running program with dlopen, used (stack API
 * and request contexts, on the main thread and a worker that outlives the library), shut down
 * and unloaded with dlclose, three times in a row. Each round checks that the agent's threads
 * are gone after sw_shutdown, that the library is unmapped after dlclose, that a thread that
 * traced exits safely after that, and that every segment reached the file.
 *
 * It also runs sw_dlopen_demo with the static TLS block's spare room taken away
 * (GLIBC_TUNABLES glibc.rtld.optional_static_tls=0 and nns=1), where a library whose
 * thread-locals use the initial-exec model fails to load ("cannot allocate memory in static
 * TLS block"): libskywalking.so must load there too (agent/CMakeLists.txt, "Thread-locals").
 *
 * SW_TEST_LIBSKYWALKING is the path of the built libskywalking.so, SW_TEST_DLOPEN_DEMO the one of
 * agent/examples/dlopen_demo.c (tests/agent.cmake).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "skywalking.h"
#include "test_wait.h"

/* The functions the program takes from the loaded library. */
typedef struct api {
    void *handle;
    int (*init)(const sw_config_t *);
    int (*shutdown)(void);
    void (*config_init)(sw_config_t *);
    void (*stats)(sw_stats_t *);
    void (*local_begin)(const char *);
    void (*span_end)(void);
    int (*context_begin_entry)(const char *, const sw_headers_t *, sw_span_ref_t *);
    int (*ref_begin_exit)(sw_span_ref_t, const char *, const char *, sw_span_ref_t *);
    int (*ref_end)(sw_span_ref_t);
} api_t;

static void *must_sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    cr_assert_not_null(p, "dlsym(%s): %s", name, dlerror());
    return p;
}

static api_t api_load(void)
{
    api_t a;
    a.handle = dlopen(SW_TEST_LIBSKYWALKING, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(a.handle, "dlopen: %s", dlerror());
    a.init = (int (*)(const sw_config_t *))must_sym(a.handle, "sw_init");
    a.shutdown = (int (*)(void))must_sym(a.handle, "sw_shutdown");
    a.config_init = (void (*)(sw_config_t *))must_sym(a.handle, "sw_config_init");
    a.stats = (void (*)(sw_stats_t *))must_sym(a.handle, "sw_stats");
    a.local_begin = (void (*)(const char *))must_sym(a.handle, "sw_local_span_begin");
    a.span_end = (void (*)(void))must_sym(a.handle, "sw_span_end");
    a.context_begin_entry = (int (*)(const char *, const sw_headers_t *, sw_span_ref_t *))must_sym(
        a.handle, "sw_context_begin_entry");
    a.ref_begin_exit = (int (*)(sw_span_ref_t, const char *, const char *,
                                sw_span_ref_t *))must_sym(a.handle, "sw_span_ref_begin_exit");
    a.ref_end = (int (*)(sw_span_ref_t))must_sym(a.handle, "sw_span_ref_end");
    return a;
}

/* Threads of this process. */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n;
}

/* wait_until condition: the process has *(int *)arg threads. */
static bool threads_are(void *arg)
{
    return thread_count() == *(int *)arg;
}

static bool library_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    cr_assert_not_null(f);
    char line[1024];
    bool found = false;
    while (fgets(line, sizeof line, f) != NULL) {
        found |= strstr(line, "libskywalking.so") != NULL;
    }
    fclose(f);
    return found;
}

/* A worker that traces with the loaded library, then waits until told to exit (after the
   library is gone: its thread-exit hook must not run code that was unmapped). */
typedef struct worker {
    api_t *api;
    sem_t traced, may_exit;
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    w->api->local_begin("worker");
    w->api->span_end();
    sw_span_ref_t entry;
    w->api->context_begin_entry("GET /from-worker", NULL, &entry);
    w->api->ref_end(entry);
    sem_post(&w->traced);
    sem_wait(&w->may_exit);
    return NULL;
}

/* Segments in a file of length-delimited records. */
static int records_in(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "no segment file %s", path);
    int n = 0;
    for (;;) {
        uint64_t len = 0;
        int shift = 0, c;
        while ((c = fgetc(f)) != EOF) {
            len |= (uint64_t)(c & 0x7f) << shift;
            shift += 7;
            if (!(c & 0x80)) {
                break;
            }
        }
        if (c == EOF) {
            break;
        }
        cr_assert_eq(fseek(f, (long)len, SEEK_CUR), 0);
        n++;
    }
    fclose(f);
    return n;
}

Test(dlopen, load_trace_shutdown_unload_three_times)
{
    int threads_before = thread_count();
    cr_assert(!library_mapped(), "the test program must not link libskywalking.so itself");
    char dir[] = "/tmp/sw-dlopen-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    for (int round = 0; round < 3; round++) {
        api_t a = api_load();
        char path[256];
        snprintf(path, sizeof path, "%s/round%d.bin", dir, round);
        sw_config_t cfg;
        a.config_init(&cfg);
        snprintf(cfg.file_path, sizeof cfg.file_path, "%s", path);
        snprintf(cfg.service_name, sizeof cfg.service_name, "dlopen-test");
        cr_assert_eq(a.init(&cfg), 0, "round %d: sw_init", round);

        worker_t w = {.api = &a};
        sem_init(&w.traced, 0, 0);
        sem_init(&w.may_exit, 0, 0);
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, worker_main, &w), 0);
        sem_wait(&w.traced);
        sw_span_ref_t entry, exit;
        cr_assert_eq(a.context_begin_entry("GET /main", NULL, &entry), 0);
        cr_assert_eq(a.ref_begin_exit(entry, "call", "peer:1", &exit), 0);
        cr_assert_eq(a.ref_end(entry), 0);
        cr_assert_eq(a.ref_end(exit), 0);

        cr_assert_eq(a.shutdown(), 0, "round %d: sw_shutdown", round);
        sw_stats_t st;
        a.stats(&st);
        cr_assert_eq(st.segments_finished, 3, "round %d", round);
        cr_assert_eq(st.segments_reported, 3, "round %d: reported %llu", round,
                     (unsigned long long)st.segments_reported);
        cr_assert_eq(st.contexts_open, 0);
        /* The worker is the only thread the test added: the agent's are joined. A joined
           thread may stay listed in /proc for a moment after pthread_join returns; one the
           agent left running stays for good. */
        int expected = threads_before + 1;
        wait_until(threads_are, &expected,
                   "only the test's own threads are left after sw_shutdown (the agent left a "
                   "thread running)");
        cr_assert_eq(dlclose(a.handle), 0, "round %d: dlclose: %s", round, dlerror());
        cr_assert(!library_mapped(), "round %d: still mapped after dlclose", round);
        sem_post(&w.may_exit); /* exits now that the library is gone */
        cr_assert_eq(pthread_join(t, NULL), 0);
        cr_assert_eq(records_in(path), 3, "round %d: segments in the file", round);
        sem_destroy(&w.traced);
        sem_destroy(&w.may_exit);
    }
}

#if defined(__SANITIZE_THREAD__)
#define SW_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SW_TEST_TSAN 1
#endif
#endif

Test(dlopen, loads_without_room_in_the_static_tls_block)
{
#ifdef SW_TEST_TSAN
    cr_skip_test("ThreadSanitizer's own runtime aborts when the loader leaves no spare static "
                 "TLS (GLIBC_TUNABLES glibc.rtld.optional_static_tls=0); the default and asan "
                 "presets run this test");
#endif
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        /* The loader reads its tunables when a program starts: the demo runs with them. */
        setenv("GLIBC_TUNABLES", "glibc.rtld.nns=1:glibc.rtld.optional_static_tls=0", 1);
        setenv("SW_REPORTER_FILE_PATH", "/dev/null", 1);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        execl(SW_TEST_DLOPEN_DEMO, "sw_dlopen_demo", SW_TEST_LIBSKYWALKING, "2", (char *)NULL);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "sw_dlopen_demo could not load libskywalking.so (or trace) with no spare static "
              "TLS: status %#x",
              status);
}
