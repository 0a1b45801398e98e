/*
 * crash_modules.c - the table of the program's mapped objects that crash frames are written
 * against: (module index, offset from its load base), turned into names when the spool is
 * shipped. dl_iterate_phdr takes the loader's lock, so it runs here, in normal context (at
 * arm and whenever a thread joins a run: a library the program dlopened since is then seen),
 * never in the signal handler.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "crash_internal.h"

/* Serialises refreshers (normal context only; never taken by the handler). */
static pthread_mutex_t modtab_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct fill {
    sw__crash_modtab_t *t;
    char exe[1024];
} fill_t;

static void image_put(sw__crash_modtab_t *t, uint64_t lo, uint64_t hi, uint64_t base,
                      const char *path)
{
    size_t n = strlen(path);
    size_t need = 32 + ((n + 7u) & ~(size_t)7u);
    if (t->count >= SW__CRASH_MODS_MAX || t->bytes + need > SW__CRASH_MODULES_BYTES) {
        return;
    }
    uint8_t *p = t->image + t->bytes;
    uint32_t len = (uint32_t)n, zero = 0;
    memcpy(p, &lo, 8);
    memcpy(p + 8, &hi, 8);
    memcpy(p + 16, &base, 8);
    memcpy(p + 24, &len, 4);
    memcpy(p + 28, &zero, 4);
    memset(p + 32, 0, need - 32);
    memcpy(p + 32, path, n);
    t->bytes += (uint32_t)need;
    t->mods[t->count++] = (sw__crash_module_t){lo, hi, base};
}

static int on_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    fill_t *f = arg;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) {
            continue;
        }
        uint64_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
        lo = a < lo ? a : lo;
        hi = b > hi ? b : hi;
    }
    if (lo >= hi) {
        return 0;
    }
    const char *path = info->dlpi_name;
    if (path == NULL || path[0] == '\0') {
        path = f->exe; /* the program itself */
    }
    image_put(f->t, lo, hi, info->dlpi_addr, path);
    return 0;
}

void sw__crash_modules_refresh(void)
{
    pthread_mutex_lock(&modtab_lock);
    /* acquire: partner of the release below (another refresher's table is complete). */
    uint32_t cur = atomic_load_explicit(&sw__crash.active, memory_order_acquire);
    fill_t f;
    f.t = &sw__crash.tabs[cur ^ 1u];
    f.t->count = 0;
    f.t->bytes = 0;
    ssize_t n = readlink("/proc/self/exe", f.exe, sizeof f.exe - 1);
    f.exe[n > 0 ? n : 0] = '\0';
    dl_iterate_phdr(on_object, &f);
    /* The agent's own image: where its static strings (tag literals) may point. */
    uintptr_t here = (uintptr_t)&sw__crash_modules_refresh;
    for (uint32_t i = 0; i < f.t->count; i++) {
        if (here >= f.t->mods[i].lo && here < f.t->mods[i].hi) {
            /* relaxed: the same values every time; the handler reads whichever it sees. */
            atomic_store_explicit(&sw__crash.self_lo, (uintptr_t)f.t->mods[i].lo,
                                  memory_order_relaxed);
            atomic_store_explicit(&sw__crash.self_hi, (uintptr_t)f.t->mods[i].hi,
                                  memory_order_relaxed);
        }
    }
    /* release: the table is complete before the handler (acquire) may use it. */
    atomic_store_explicit(&sw__crash.active, cur ^ 1u, memory_order_release);
    pthread_mutex_unlock(&modtab_lock);
}
