/*
 * symbolizer.c - addresses to frame strings through dladdr and libdwfl, within a memory budget
 * (see symbolizer.h for the frame format and the contract).
 *
 * Layout: `frames`, a direct-mapped cache of finished frame strings keyed by (module key,
 * offset); `mods`, the open modules (one Dwfl each, or a negative entry for a file that cannot be
 * read), evicted least recently used. Everything is protected by `lock`.
 */
#include "symbolizer.h"

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "skywalking.h"
#include "symbol_module.h"

/* A cached frame: 128 bytes. Longer frames are not cached. */
#define FRAME_STR 104
typedef struct frame_slot {
    uint64_t mod_key; /* 0: empty; 1: an address of this process; else a module path's hash */
    uint64_t offset;  /* the address (mod_key 1) or the offset in the module */
    uint32_t len;
    char str[FRAME_STR];
} frame_slot_t;

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

struct sw__symbolizer {
    pthread_mutex_t lock; /* protects everything below */
    frame_slot_t *frames; /* n_frames slots, a power of two */
    size_t n_frames;
    sw__symbol_modules_t mods;
    demangle_fn demangle;       /* __cxa_demangle, or NULL until libstdc++ is seen */
    unsigned long long dl_subs; /* dlpi_subs when `frames` was last valid for addresses */
    char exe[4096];             /* the main program's file (from /proc/self/exe) */
};

static uint64_t path_key(const char *path)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a 64 */
    for (const unsigned char *p = (const unsigned char *)path; *p != '\0'; p++) {
        h = (h ^ *p) * 1099511628211ull;
    }
    return h < 2 ? h + 2 : h; /* 0 and 1 are reserved */
}

int sw__symbolizer_create(size_t max_bytes, sw__symbolizer_t **out)
{
    if (out == NULL || max_bytes < SW__SYMBOLIZER_MIN_BYTES) {
        return SW_EINVAL;
    }
    *out = NULL;
    sw__symbolizer_t *s = calloc(1, sizeof *s);
    if (s == NULL) {
        return SW_ENOMEM;
    }
    /* The frame cache takes an eighth of the budget (at most 1 MiB), the modules the rest. */
    size_t frame_bytes = max_bytes / 8 < (1u << 20) ? max_bytes / 8 : (1u << 20);
    size_t n = 1;
    while (n * 2 * sizeof(frame_slot_t) <= frame_bytes) {
        n *= 2;
    }
    s->frames = calloc(n, sizeof(frame_slot_t));
    if (s->frames == NULL) {
        free(s);
        return SW_ENOMEM;
    }
    s->n_frames = n;
    size_t fixed = sizeof *s + n * sizeof(frame_slot_t);
    sw__symbol_modules_init(&s->mods, max_bytes > fixed ? max_bytes - fixed : 0);
    pthread_mutex_init(&s->lock, NULL);
    ssize_t len = readlink("/proc/self/exe", s->exe, sizeof s->exe - 1);
    s->exe[len > 0 ? (size_t)len : 0] = '\0';
    *out = s;
    return SW_OK;
}

void sw__symbolizer_destroy(sw__symbolizer_t *s)
{
    if (s == NULL) {
        return;
    }
    sw__symbol_modules_clear(&s->mods);
    pthread_mutex_destroy(&s->lock);
    free(s->frames);
    free(s);
}

size_t sw__symbolizer_bytes(sw__symbolizer_t *s)
{
    pthread_mutex_lock(&s->lock);
    size_t n = sizeof *s + s->n_frames * sizeof(frame_slot_t) + s->mods.bytes;
    pthread_mutex_unlock(&s->lock);
    return n;
}

size_t sw__symbolizer_modules(sw__symbolizer_t *s)
{
    pthread_mutex_lock(&s->lock);
    size_t n = s->mods.count;
    pthread_mutex_unlock(&s->lock);
    return n;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash != NULL ? slash + 1 : path;
}

/* snprintf's result clipped to what `out` holds. */
static size_t clip(int n, size_t cap)
{
    if (n < 0) {
        return 0;
    }
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

/* Writes the frame of `name` (a symbol or NULL), its source line, or the module and offset. */
static size_t format_frame(sw__symbolizer_t *s, const char *name, const char *src, int line,
                           const char *module, uint64_t offset, char *out, size_t cap)
{
    char *demangled = NULL;
    if (name != NULL && name[0] == '_' && name[1] == 'Z') {
        if (s->demangle == NULL) {
            /* libstdc++ may have come in with a dlopen since the last frame. */
            *(void **)&s->demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
        }
        if (s->demangle != NULL) {
            int status = -1;
            demangled = s->demangle(name, NULL, NULL, &status);
            if (status == 0 && demangled != NULL) {
                name = demangled;
            }
        }
    }
    /* A C name with a compiler suffix (GCC's clones: "f.constprop.0", "f.isra.0", "f.part.0",
       "f.cold"): the function's own name, so that its samples merge with the original's. */
    char plain[256];
    const char *dot = name != NULL && demangled == NULL ? strchr(name, '.') : NULL;
    if (dot != NULL && dot != name && (size_t)(dot - name) < sizeof plain) {
        memcpy(plain, name, (size_t)(dot - name));
        plain[dot - name] = '\0';
        name = plain;
    }
    int n;
    if (name != NULL && src != NULL && line > 0) {
        n = snprintf(out, cap, "%s (%s:%d)", name, base_name(src), line);
    } else if (name != NULL && module != NULL) {
        n = snprintf(out, cap, "%s (%s)", name, base_name(module));
    } else if (name != NULL) {
        n = snprintf(out, cap, "%s", name);
    } else if (module != NULL) {
        n = snprintf(out, cap, "%s+0x%llx", base_name(module), (unsigned long long)offset);
    } else {
        n = snprintf(out, cap, "0x%llx", (unsigned long long)offset);
    }
    free(demangled);
    return clip(n, cap);
}

/* The frame of `offset` in the module at `path`; `dyn_name` is dladdr's symbol or NULL. */
static size_t lookup(sw__symbolizer_t *s, const char *path, uint64_t offset, const char *dyn_name,
                     char *out, size_t cap)
{
    sw__symbol_info_t info = {0};
    if (!sw__symbol_modules_lookup(&s->mods, path, offset, &info)) {
        info.name = NULL;
    }
    const char *name = info.name != NULL ? info.name : dyn_name;
    size_t n = format_frame(s, name, info.src, info.line, path, offset, out, cap);
    sw__symbol_modules_release(&s->mods);
    return n;
}

/* The cached frame for (key, offset), copied to out; false when not cached. */
static bool cache_get(sw__symbolizer_t *s, uint64_t key, uint64_t offset, char *out, size_t cap,
                      size_t *len)
{
    frame_slot_t *f = &s->frames[(key ^ (offset * 0x9e3779b97f4a7c15ull)) & (s->n_frames - 1)];
    if (f->mod_key != key || f->offset != offset) {
        return false;
    }
    size_t n = f->len < cap ? f->len : cap - 1;
    memcpy(out, f->str, n);
    out[n] = '\0';
    *len = n;
    return true;
}

static void cache_put(sw__symbolizer_t *s, uint64_t key, uint64_t offset, const char *str,
                      size_t len)
{
    if (len >= FRAME_STR) {
        return;
    }
    frame_slot_t *f = &s->frames[(key ^ (offset * 0x9e3779b97f4a7c15ull)) & (s->n_frames - 1)];
    f->mod_key = key;
    f->offset = offset;
    f->len = (uint32_t)len;
    memcpy(f->str, str, len + 1);
}

/* dl_iterate_phdr callback: reads the load/unload counters from the first object only. */
static int read_dl_subs(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        *(unsigned long long *)arg = info->dlpi_subs;
    }
    return 1;
}

/* Forgets the cached frames of this process's addresses when a library was unloaded since:
   another may now sit at the same address. */
static void check_unloads(sw__symbolizer_t *s)
{
    unsigned long long subs = 0;
    dl_iterate_phdr(read_dl_subs, &subs);
    if (subs != s->dl_subs) {
        for (size_t i = 0; i < s->n_frames; i++) {
            if (s->frames[i].mod_key == 1) {
                s->frames[i].mod_key = 0;
            }
        }
        s->dl_subs = subs;
    }
}

static size_t addr_locked(sw__symbolizer_t *s, uintptr_t addr, char *out, size_t cap)
{
    size_t len;
    check_unloads(s);
    if (cache_get(s, 1, addr, out, cap, &len)) {
        return len;
    }
    Dl_info dl;
    struct link_map *lm = NULL;
    char buf[512];
    if (dladdr1((void *)addr, &dl, (void **)&lm, RTLD_DL_LINKMAP) == 0 || lm == NULL) {
        len = format_frame(s, NULL, NULL, 0, NULL, addr, buf, sizeof buf);
    } else {
        /* The main program's link map has an empty name: its file is /proc/self/exe's. */
        const char *path = lm->l_name != NULL && lm->l_name[0] != '\0' ? lm->l_name : s->exe;
        if (path[0] == '\0') {
            path = dl.dli_fname != NULL ? dl.dli_fname : "?";
        }
        len = lookup(s, path, (uint64_t)(addr - lm->l_addr), dl.dli_sname, buf, sizeof buf);
    }
    cache_put(s, 1, addr, buf, len);
    size_t n = len < cap ? len : cap - 1;
    memcpy(out, buf, n);
    out[n] = '\0';
    return n;
}

size_t sw__symbolizer_addr(sw__symbolizer_t *s, uintptr_t addr, char *out, size_t cap)
{
    if (out == NULL || cap == 0) {
        return 0;
    }
    if (s == NULL) {
        return clip(snprintf(out, cap, "0x%llx", (unsigned long long)addr), cap);
    }
    pthread_mutex_lock(&s->lock);
    size_t n = addr_locked(s, addr, out, cap);
    pthread_mutex_unlock(&s->lock);
    return n;
}

size_t sw__symbolizer_module_offset(sw__symbolizer_t *s, const char *module_path, uint64_t offset,
                                    char *out, size_t cap)
{
    if (out == NULL || cap == 0) {
        return 0;
    }
    if (module_path == NULL || module_path[0] == '\0') {
        return clip(snprintf(out, cap, "0x%llx", (unsigned long long)offset), cap);
    }
    if (s == NULL) {
        return clip(
            snprintf(out, cap, "%s+0x%llx", base_name(module_path), (unsigned long long)offset),
            cap);
    }
    uint64_t key = path_key(module_path);
    char buf[512];
    size_t len;
    pthread_mutex_lock(&s->lock);
    if (!cache_get(s, key, offset, out, cap, &len)) {
        len = lookup(s, module_path, offset, NULL, buf, sizeof buf);
        cache_put(s, key, offset, buf, len);
        len = len < cap ? len : cap - 1;
        memcpy(out, buf, len);
        out[len] = '\0';
    }
    pthread_mutex_unlock(&s->lock);
    return len;
}
