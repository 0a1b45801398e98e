/*
 * cyg_hooks.c - __cyg_profile_func_enter/exit: a program built with -finstrument-functions and
 * linked with libskywalking gets one local span per traced function call, named by symbol.
 *
 * Per call:
 *   - enter: the function's decision (traced or not, and its name) comes from a per-thread
 *     direct-mapped cache in front of a process-wide table; a rejected function costs a load
 *     of the agent state, a TLS load and one cache probe. A traced one is pushed on a per-thread
 *     shadow stack with its start time and a local span is opened (span_mark.h).
 *   - exit: the frame is popped; a span shorter than SW_CYG_MIN_DURATION_US is removed again
 *     when nothing hangs under it, else ended.
 * Filters: cyg_config.h. Calls made while the agent is off are not traced.
 *
 * Everything here is no_instrument_function, and a per-thread busy flag stops recursion should
 * the hooks (dladdr, malloc, the demangler) reach instrumented code.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../log/log.h"
#include "../util/tls_model.h"
#include "cyg_config.h"
#include "skywalking.h"
#include "span_mark.h"

#define NOINSTR __attribute__((no_instrument_function))

#define TABLE_CAP   16384u /* distinct functions the process-wide table can name */
#define CACHE_SLOTS 512u   /* per thread, direct-mapped */
#define STACK_MAX   128u   /* traced calls open at once on a thread; deeper ones are skipped */

typedef struct fn_entry {
    void *fn;
    char *name; /* owned by the table, never freed: the table lives as long as the process */
    bool traced;
} fn_entry_t;

typedef struct frame {
    void *fn;
    uint64_t start_ns;
    sw__span_mark_t mark;
} frame_t;

typedef struct cyg_thread {
    uint32_t depth;    /* frames in use */
    uint32_t overflow; /* traced calls open beyond STACK_MAX */
    struct {
        void *fn;
        const fn_entry_t *entry;
    } cache[CACHE_SLOTS];
    frame_t stack[STACK_MAX];
} cyg_thread_t;

/* Set once by config_once (pthread_once), read-only afterwards: the filters and demangler. */
static sw__cyg_config_t config;
static char *(*demangle)(const char *mangled, char *buf, size_t *len, int *status);

/* 0: not read yet, 1: tracing, 2: off (bad configuration or no memory). Stored with release by
   config_once; partner: the acquire load in config_ready. */
static _Atomic int cyg_state;
static pthread_once_t cyg_once = PTHREAD_ONCE_INIT;

/* The process-wide table of decisions, global because the hooks have no context argument.
   table_lock protects table_count and inserts; a slot is written once, under the lock, and
   read under the lock too (only on a per-thread cache miss). */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static fn_entry_t *table;
static uint32_t table_count;
static const fn_entry_t untraced = {NULL, NULL, false};

static pthread_key_t thread_key;

/* The calling thread's state: NULL before its first traced call, DEAD after it exited. */
static _Thread_local cyg_thread_t *tls_thread SW__TLS_MODEL;
static _Thread_local bool tls_busy SW__TLS_MODEL;
#define DEAD ((cyg_thread_t *)(uintptr_t)1)

static NOINSTR void thread_free(void *p)
{
    free(p);
    tls_thread = DEAD; /* a destructor running later must not allocate again */
}

static NOINSTR void fork_prepare(void)
{
    pthread_mutex_lock(&table_lock);
}

static NOINSTR void fork_parent(void)
{
    pthread_mutex_unlock(&table_lock);
}

static NOINSTR void config_once(void)
{
    char err[512] = "";
    int state = 2;
    if (sw__cyg_config_load(&config, err, sizeof err) != 0) {
        sw__log(SW_LOG_ERROR, "%s; function tracing stays off", err);
    } else if (pthread_key_create(&thread_key, thread_free) == 0 &&
               (table = calloc(TABLE_CAP, sizeof *table)) != NULL) {
        void *sym = dlsym(RTLD_DEFAULT, "__cxa_demangle");
        memcpy(&demangle, &sym, sizeof sym);
        (void)pthread_atfork(fork_prepare, fork_parent, fork_parent);
        state = 1;
    }
    /* release: publishes config and table; partner: the acquire load in config_ready. */
    atomic_store_explicit(&cyg_state, state, memory_order_release);
}

static inline NOINSTR bool config_ready(void)
{
    /* acquire: partner of config_once's release store. */
    int s = atomic_load_explicit(&cyg_state, memory_order_acquire);
    if (__builtin_expect(s == 0, 0)) {
        pthread_once(&cyg_once, config_once);
        s = atomic_load_explicit(&cyg_state, memory_order_acquire);
    }
    return s == 1;
}

static inline NOINSTR uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The name of fn, newly allocated (NULL when out of memory); *file gets its object's path. */
static NOINSTR char *symbol_name(void *fn, const char **file)
{
    Dl_info info;
    memset(&info, 0, sizeof info);
    if (dladdr(fn, &info) == 0) {
        info.dli_fname = NULL;
    }
    *file = info.dli_fname != NULL ? info.dli_fname : "";
    if (info.dli_sname != NULL) {
        if (demangle != NULL && strncmp(info.dli_sname, "_Z", 2) == 0) {
            int status = -1;
            char *d = demangle(info.dli_sname, NULL, NULL, &status);
            if (d != NULL && status == 0) {
                return d;
            }
            free(d);
        }
        return strdup(info.dli_sname);
    }
    const char *slash = strrchr(*file, '/');
    const char *base = slash != NULL ? slash + 1 : *file;
    char buf[320];
    snprintf(buf, sizeof buf, "%s+0x%lx", base[0] ? base : "?",
             (unsigned long)((uintptr_t)fn - (uintptr_t)info.dli_fbase));
    return strdup(buf);
}

static inline NOINSTR uint32_t fn_hash(const void *fn)
{
    uint64_t x = (uint64_t)(uintptr_t)fn;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(x >> 32);
}

/* Finds fn's slot (its entry or the empty slot for it), with table_lock held; NULL if full. */
static NOINSTR fn_entry_t *table_slot(void *fn)
{
    uint32_t i = fn_hash(fn) & (TABLE_CAP - 1);
    for (uint32_t n = 0; n < TABLE_CAP; n++, i = (i + 1) & (TABLE_CAP - 1)) {
        if (table[i].fn == fn || table[i].fn == NULL) {
            return &table[i];
        }
    }
    return NULL;
}

/* Slow path of a per-thread cache miss: the process-wide decision for fn. */
static NOINSTR const fn_entry_t *decision_resolve(void *fn)
{
    pthread_mutex_lock(&table_lock);
    fn_entry_t *slot = table_slot(fn);
    bool known = slot != NULL && slot->fn == fn;
    pthread_mutex_unlock(&table_lock);
    if (known) {
        return slot;
    }
    /* dladdr takes the loader's lock: never call it with table_lock held. */
    const char *file;
    char *name = symbol_name(fn, &file);
    if (name == NULL) {
        return &untraced;
    }
    bool traced = sw__cyg_config_traced(&config, name, file);
    pthread_mutex_lock(&table_lock);
    slot = table_count < TABLE_CAP * 3 / 4 ? table_slot(fn) : NULL;
    if (slot != NULL && slot->fn == NULL) {
        slot->fn = fn;
        slot->name = name;
        slot->traced = traced;
        table_count++;
        name = NULL;
    }
    pthread_mutex_unlock(&table_lock);
    free(name); /* another thread inserted it first, or the table is full */
    return slot != NULL ? slot : &untraced;
}

static inline NOINSTR const fn_entry_t *decision(cyg_thread_t *t, void *fn)
{
    uint32_t i = (uint32_t)((uintptr_t)fn >> 4) & (CACHE_SLOTS - 1);
    if (__builtin_expect(t->cache[i].fn == fn, 1)) {
        return t->cache[i].entry;
    }
    const fn_entry_t *e = decision_resolve(fn);
    t->cache[i].fn = fn;
    t->cache[i].entry = e;
    return e;
}

/* The thread's state, allocated on its first traced call; NULL when unavailable. */
static NOINSTR cyg_thread_t *thread_state(void)
{
    cyg_thread_t *t = tls_thread;
    if (__builtin_expect(t != NULL, 1)) {
        return t == DEAD ? NULL : t;
    }
    if (!config_ready()) {
        return NULL;
    }
    t = calloc(1, sizeof *t);
    if (t == NULL) {
        return NULL;
    }
    (void)pthread_setspecific(thread_key, t);
    tls_thread = t;
    return t;
}

NOINSTR void __cyg_profile_func_enter(void *fn, void *call_site)
{
    (void)call_site;
    if (!sw_enabled() || tls_busy) {
        return;
    }
    tls_busy = true;
    cyg_thread_t *t = thread_state();
    if (t != NULL) {
        const fn_entry_t *e = decision(t, fn);
        if (e->traced) {
            if (t->depth == STACK_MAX) {
                t->overflow++;
            } else {
                frame_t *f = &t->stack[t->depth++];
                f->fn = fn;
                f->start_ns = now_ns();
                sw__span_begin_local_marked(e->name, &f->mark);
            }
        }
    }
    tls_busy = false;
}

NOINSTR void __cyg_profile_func_exit(void *fn, void *call_site)
{
    (void)call_site;
    cyg_thread_t *t = tls_thread;
    if (t == NULL || t == DEAD || tls_busy || (t->depth == 0 && t->overflow == 0)) {
        return;
    }
    tls_busy = true;
    if (decision(t, fn)->traced) {
        if (t->overflow != 0) {
            t->overflow--;
        } else {
            /* Normally the top frame; after a longjmp or an exception, frames above it were
               left without their exit: end them here, innermost first. */
            uint32_t i = t->depth;
            while (i > 0 && t->stack[i - 1].fn != fn) {
                i--;
            }
            if (i > 0) {
                for (; t->depth > i; t->depth--) {
                    sw_span_end();
                }
                frame_t *f = &t->stack[--t->depth];
                uint64_t took = now_ns() - f->start_ns;
                if (took >= config.min_duration_ns || !sw__span_discard_marked(&f->mark)) {
                    sw_span_end();
                }
            }
        }
    }
    tls_busy = false;
}
