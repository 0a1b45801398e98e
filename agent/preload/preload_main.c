/*
 * preload_main.c - libskywalking-preload.so: constructor and destructor, the lazy agent start,
 * symbol resolution, and the process/thread interposers (fork, pthread_create).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../src/config/config.h"
#include "../src/core/span_instrument.h"
#include "../src/log/log.h"
#include "../src/report/reporter.h"
#include "preload.h"
#include "preload_db.h"
#include "preload_lock.h"
#include "../src/util/locality.h"

_Thread_local bool sw__preload_busy;

/* The configuration (file and environment, sw_config_load), read once by config_load: from the
   constructor, or earlier by a hook that runs before it (another library's constructor calling
   syslog or libpq); read-only afterwards. Global: the preload has no other place to keep it
   between the constructor and the first traced call. */
static sw_config_t config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

/* 0: not started, 1: started, 2: off for good (bad configuration or failed start). Changed
   under start_lock with release; partner: the acquire load in sw__preload_agent_ready. */
static _Atomic int agent_state;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
/* Whether this process created the segment file (protected by start_lock; read at exit). */
static bool created_file;

/* A span captured in a creating thread (pthread_create) or before fork, waiting for the first
   segment of the new thread or child. Owned by the thread it is pending on; thread_key frees
   it if the thread never starts a segment. */
typedef struct pending {
    void *(*start)(void *);
    void *arg;
    sw_snapshot_t snap;
} pending_t;

static _Thread_local pending_t *tls_pending;
static pthread_key_t pending_key;

SW__HOT void *sw__preload_real(_Atomic(void *) *slot, const char *name, const char *version)
{
    /* relaxed: the pointer is to code the loader mapped before; any thread may resolve it
       again and gets the same value. */
    void *p = atomic_load_explicit(slot, memory_order_relaxed);
    if (p != NULL) {
        return p;
    }
    if (version != NULL) {
        p = dlvsym(RTLD_NEXT, name, version);
    }
    if (p == NULL) {
        p = dlsym(RTLD_NEXT, name);
    }
    atomic_store_explicit(slot, p, memory_order_relaxed);
    return p;
}

static void pending_free(void *p)
{
    free(p);
    tls_pending = NULL;
}

static void pending_set(pending_t *p)
{
    tls_pending = p;
    (void)pthread_setspecific(pending_key, p);
}

SW__HOT void sw__preload_pending_apply(const sw__span_mark_t *mark, bool link)
{
    pending_t *p = tls_pending;
    if (p == NULL || mark->segment == NULL) {
        return;
    }
    if (link && mark->span_id == 0) {
        (void)sw_continue(&p->snap);
    }
    pending_set(NULL);
    free(p);
}

/* Whether the configuration resolves to the file reporter (finalised on a copy: the names it
   fills in must be drawn again by a forked child's own start). */
static bool reporter_is_file(void)
{
    sw_config_t resolved = config;
    char err[256];
    return sw__config_finalize(&resolved, err, sizeof err) == 0 &&
           strcmp(resolved.reporter, "file") == 0;
}

static void config_load(void)
{
    char err[768] = "";
    sw_config_init(&config);
    if (sw_config_load(&config, err, sizeof err) != 0) {
        sw__log(SW_LOG_ERROR, "preload: %s; this program runs untraced", err);
        atomic_store_explicit(&agent_state, 2, memory_order_relaxed);
        return; /* the plugins keep their defaults */
    }
    sw__db_settings_apply(&config);
}

const sw_config_t *sw__preload_config(void)
{
    pthread_once(&config_once, config_load);
    return &config;
}

SW__HOT bool sw__preload_agent_ready(void)
{
    /* acquire: partner of the release store below; the agent is started when it reads 1. */
    int s = atomic_load_explicit(&agent_state, memory_order_acquire);
    if (__builtin_expect(s == 1, 1)) {
        return sw_enabled();
    }
    if (s == 2 || sw__preload_busy) {
        return false;
    }
    (void)sw__preload_config(); /* before start_lock: config_load takes no lock of ours */
    pthread_mutex_lock(&start_lock);
    s = atomic_load_explicit(&agent_state, memory_order_relaxed);
    if (s == 0) {
        struct stat st;
        bool existed = stat(config.file_path, &st) == 0;
        sw__preload_busy = true;
        int rc = sw_init(&config); /* prints its own message naming the setting on failure */
        sw__preload_busy = false;
        created_file = rc == 0 && !existed && reporter_is_file();
        /* SW_ESTATE while the agent runs: the program started it itself. It links
           libskywalking, and its sw_* calls bind to this library's exports (exports.map), so
           there is one agent, with the program's configuration; the plugins record into it. */
        s = rc == 0 || (rc == SW_ESTATE && sw_enabled()) ? 1 : 2;
        atomic_store_explicit(&agent_state, s, memory_order_release);
    }
    pthread_mutex_unlock(&start_lock);
    return s == 1 && sw_enabled();
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&start_lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&start_lock);
}

/* Runs in every forked child before the agent's own hook (registered earlier): the child
   starts its own agent on its first traced call. */
static void fork_child(void)
{
    pthread_mutex_unlock(&start_lock);
    if (atomic_load_explicit(&agent_state, memory_order_relaxed) == 1) {
        atomic_store_explicit(&agent_state, 0, memory_order_relaxed);
    }
    created_file = false;
}

__attribute__((constructor)) static void preload_start(void)
{
    (void)pthread_key_create(&pending_key, pending_free);
    (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
    sw__plugin_locks_atfork(); /* its prepare runs first: no plugin section takes start_lock */
    (void)sw__preload_config();
}

/* Runs after the agent's atexit handler has drained and flushed the reporter. A server that
   never produced a segment leaves no empty file behind: the file the reporter created, by its
   device and inode, never another file the path names after a chdir. */
__attribute__((destructor)) static void preload_stop(void)
{
    if (!created_file) {
        return;
    }
    sw_stats_t st;
    sw_stats(&st);
    if (!sw_enabled() && st.segments_reported == 0) {
        (void)sw__file_reporter_remove_if_empty();
    }
}

/* ------------------------------------------------------------------------------------------ */
/* fork and pthread_create                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* A capture of the calling thread's active span, or NULL (no span, agent off, no memory). */
static pending_t *pending_capture(void)
{
    if (sw__preload_busy || !sw_enabled()) {
        return NULL;
    }
    pending_t *p = malloc(sizeof *p);
    if (p != NULL && sw_capture(&p->snap) != 0) {
        free(p);
        p = NULL;
    }
    return p;
}

pid_t fork(void)
{
    static _Atomic(void *) real_slot;
    pid_t (*real)(void);
    void *sym = sw__preload_real(&real_slot, "fork", NULL);
    memcpy(&real, &sym, sizeof sym);
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    pending_t *p = pending_capture();
    pid_t pid = real();
    if (pid == 0 && p != NULL) {
        pending_set(p); /* the child's first segment continues the span that forked it */
    } else {
        free(p);
    }
    return pid;
}

static void *thread_trampoline(void *arg)
{
    pending_t *p = arg;
    void *(*start)(void *) = p->start;
    void *start_arg = p->arg;
    pending_set(p);
    return start(start_arg);
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg)
{
    static _Atomic(void *) real_slot;
    int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    void *sym = sw__preload_real(&real_slot, "pthread_create", "GLIBC_2.34");
    if (sym == NULL) {
        sym = sw__preload_real(&real_slot, "pthread_create", "GLIBC_2.2.5");
    }
    memcpy(&real, &sym, sizeof sym);
    if (real == NULL) {
        return EAGAIN;
    }
    pending_t *p = pending_capture();
    if (p == NULL) {
        return real(thread, attr, start, arg);
    }
    p->start = start;
    p->arg = arg;
    int rc = real(thread, attr, thread_trampoline, p);
    if (rc != 0) {
        free(p);
    }
    return rc;
}

/* "100" .. "599", 4 bytes each (with the NUL), built by the preprocessor. */
/* clang-format 14 and 18 lay this brace initializer out differently: */
/* clang-format off */
#define STATUS_1(n) \
    {(char)('0' + (n) / 100), (char)('0' + (n) / 10 % 10), (char)('0' + (n) % 10), 0}
/* clang-format on */
#define STATUS_10(n)                                                                 \
    STATUS_1(n), STATUS_1(n + 1), STATUS_1(n + 2), STATUS_1(n + 3), STATUS_1(n + 4), \
        STATUS_1(n + 5), STATUS_1(n + 6), STATUS_1(n + 7), STATUS_1(n + 8), STATUS_1(n + 9)
#define STATUS_100(n)                                                                         \
    STATUS_10(n), STATUS_10(n + 10), STATUS_10(n + 20), STATUS_10(n + 30), STATUS_10(n + 40), \
        STATUS_10(n + 50), STATUS_10(n + 60), STATUS_10(n + 70), STATUS_10(n + 80),           \
        STATUS_10(n + 90)
static const char status_text[500][4] = {STATUS_100(100), STATUS_100(200), STATUS_100(300),
                                         STATUS_100(400), STATUS_100(500)};

void sw__preload_status_tag(long status)
{
    if (status >= 100 && status <= 599) {
        sw__span_tag_kept_("http.status_code", 16, status_text[status - 100], 3);
        return;
    }
    char digits[24];
    snprintf(digits, sizeof digits, "%ld", status);
    sw__span_tag_static("http.status_code", digits);
}
