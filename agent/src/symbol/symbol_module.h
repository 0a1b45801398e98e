/*
 * symbol_module.h - the symbolizer's open modules (internal to agent/src/symbol).
 *
 * One entry per module file: a libdwfl session over the file (symbol tables and DWARF, a separate
 * debug file found by libdw's standard search), or a negative entry for a file that cannot be
 * read, so it is not tried again. Each entry is charged the size of its ELF file (and of its
 * debug file once libdw has found one) plus its own bookkeeping; the entries together stay within
 * the budget, the least recently used being closed first. A module larger than the whole budget
 * is opened for one lookup and closed by sw__symbol_modules_release.
 *
 * Threads: none of its own; the symbolizer's lock covers every call.
 */
#ifndef SW_SYMBOL_SYMBOL_MODULE_H
#define SW_SYMBOL_SYMBOL_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sw__symbol_module sw__symbol_module_t;

typedef struct sw__symbol_modules {
    sw__symbol_module_t *head;      /* open entries, most recently used first */
    sw__symbol_module_t *transient; /* an over-budget module of the current lookup, or NULL */
    size_t count;                   /* entries in the list */
    size_t bytes;                   /* what the entries are charged, <= budget */
    size_t budget;
} sw__symbol_modules_t;

/* What a lookup found; the strings stay valid until sw__symbol_modules_release. */
typedef struct sw__symbol_info {
    const char *name; /* the symbol covering the offset (mangled), or NULL */
    const char *src;  /* the source file of its line, or NULL */
    int line;         /* 0 when unknown */
} sw__symbol_info_t;

void sw__symbol_modules_init(sw__symbol_modules_t *m, size_t budget);

/* Closes every module. The set stays usable (empty). */
void sw__symbol_modules_clear(sw__symbol_modules_t *m);

/* Looks `offset` (from the module's load base) up in the module at `path`, opening it on first
   use. Returns false when the file cannot be read (then `info` is untouched). Call
   sw__symbol_modules_release after reading `info`, in either case. */
bool sw__symbol_modules_lookup(sw__symbol_modules_t *m, const char *path, uint64_t offset,
                               sw__symbol_info_t *info);

/* Ends a lookup: closes the module of the last lookup if it was over budget. */
void sw__symbol_modules_release(sw__symbol_modules_t *m);

#endif /* SW_SYMBOL_SYMBOL_MODULE_H */
