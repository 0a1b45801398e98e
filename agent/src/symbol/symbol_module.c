/*
 * symbol_module.c - the symbolizer's open modules, a least-recently-used list of libdwfl
 * sessions within a byte budget (see symbol_module.h).
 */
#include "symbol_module.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct sw__symbol_module {
    sw__symbol_module_t *next;
    Dwfl *dwfl;         /* NULL: a file that cannot be read */
    Dwfl_Module *mod;   /* the one module of dwfl */
    size_t cost;        /* what this entry is charged */
    bool debug_charged; /* a separate debug file was found and charged */
    char path[];
};

/* libdw's default debug file search (the build-id and .gnu_debuglink paths under /usr/lib/debug);
   a NULL string means the default. Never written. */
static char *debuginfo_path = NULL;

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

void sw__symbol_modules_init(sw__symbol_modules_t *m, size_t budget)
{
    memset(m, 0, sizeof *m);
    m->budget = budget;
}

static void close_module(sw__symbol_module_t *e)
{
    if (e->dwfl != NULL) {
        dwfl_end(e->dwfl);
    }
    free(e);
}

void sw__symbol_modules_clear(sw__symbol_modules_t *m)
{
    sw__symbol_modules_release(m);
    while (m->head != NULL) {
        sw__symbol_module_t *e = m->head;
        m->head = e->next;
        close_module(e);
    }
    m->count = 0;
    m->bytes = 0;
}

static size_t file_size(const char *path)
{
    struct stat st;
    return path != NULL && stat(path, &st) == 0 && st.st_size > 0 ? (size_t)st.st_size : 0;
}

/* Closes the least recently used entries (never `keep`) until `need` more bytes fit. */
static void make_room(sw__symbol_modules_t *m, size_t need, const sw__symbol_module_t *keep)
{
    while (m->bytes + need > m->budget) {
        sw__symbol_module_t **last = NULL;
        for (sw__symbol_module_t **p = &m->head; *p != NULL; p = &(*p)->next) {
            if (*p != keep) {
                last = p;
            }
        }
        if (last == NULL) {
            return;
        }
        sw__symbol_module_t *e = *last;
        *last = e->next;
        m->bytes -= e->cost;
        m->count--;
        close_module(e);
    }
}

/* Opens the module at `path`: an entry with a libdwfl session, or a negative one. NULL: no
   memory. */
static sw__symbol_module_t *open_module(const char *path)
{
    size_t len = strlen(path);
    sw__symbol_module_t *e = calloc(1, sizeof *e + len + 1);
    if (e == NULL) {
        return NULL;
    }
    memcpy(e->path, path, len + 1);
    e->cost = sizeof *e + len + 1;
    e->dwfl = dwfl_begin(&callbacks);
    if (e->dwfl != NULL) {
        /* Base 0: addresses in this session are offsets from the load base (an ET_EXEC's are
           its absolute addresses, with a load base of 0). */
        e->mod = dwfl_report_elf(e->dwfl, path, path, -1, 0, false);
        dwfl_report_end(e->dwfl, NULL, NULL);
        if (e->mod == NULL) {
            dwfl_end(e->dwfl);
            e->dwfl = NULL;
        } else {
            e->cost += file_size(path) + 4096;
        }
    }
    return e;
}

/* Removes `e` from the list (it is there). */
static void unlink_entry(sw__symbol_modules_t *m, sw__symbol_module_t *e)
{
    for (sw__symbol_module_t **p = &m->head; *p != NULL; p = &(*p)->next) {
        if (*p == e) {
            *p = e->next;
            m->bytes -= e->cost;
            m->count--;
            return;
        }
    }
}

/* The entry of `path`, moved to the front or newly opened and inserted (or made transient when
   it alone is over budget). NULL: no memory. */
static sw__symbol_module_t *find(sw__symbol_modules_t *m, const char *path)
{
    for (sw__symbol_module_t **p = &m->head; *p != NULL; p = &(*p)->next) {
        sw__symbol_module_t *e = *p;
        if (strcmp(e->path, path) == 0) {
            *p = e->next;
            e->next = m->head;
            m->head = e;
            return e;
        }
    }
    sw__symbol_module_t *e = open_module(path);
    if (e == NULL) {
        return NULL;
    }
    if (e->cost > m->budget) {
        m->transient = e;
        return e;
    }
    make_room(m, e->cost, NULL);
    e->next = m->head;
    m->head = e;
    m->bytes += e->cost;
    m->count++;
    return e;
}

/* Charges a separate debug file libdw found for `e` during a lookup. */
static void charge_debug_file(sw__symbol_modules_t *m, sw__symbol_module_t *e)
{
    const char *main_file = NULL;
    const char *debug_file = NULL;
    if (e->debug_charged || e == m->transient) {
        return;
    }
    dwfl_module_info(e->mod, NULL, NULL, NULL, NULL, NULL, &main_file, &debug_file);
    if (debug_file == NULL || (main_file != NULL && strcmp(main_file, debug_file) == 0)) {
        return;
    }
    e->debug_charged = true;
    size_t extra = file_size(debug_file);
    if (e->cost + extra > m->budget) {
        unlink_entry(m, e); /* now over budget alone: closed at release */
        e->cost += extra;
        m->transient = e;
        return;
    }
    make_room(m, extra, e);
    e->cost += extra;
    m->bytes += extra;
}

/* The line of `addr` found by walking the compile units: libdw before 0.191 finds a line
   through .debug_aranges only, which clang does not emit. */
static void line_by_cu(Dwfl_Module *mod, Dwarf_Addr addr, sw__symbol_info_t *info)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = NULL;
    while ((cu = dwfl_module_nextcu(mod, cu, &bias)) != NULL) {
        if (dwarf_haspc(cu, addr - bias) <= 0) {
            continue;
        }
        Dwarf_Line *l = dwarf_getsrc_die(cu, addr - bias);
        int lineno = 0;
        if (l != NULL && dwarf_lineno(l, &lineno) == 0) {
            info->src = dwarf_linesrc(l, NULL, NULL);
            info->line = lineno;
        }
        return;
    }
}

bool sw__symbol_modules_lookup(sw__symbol_modules_t *m, const char *path, uint64_t offset,
                               sw__symbol_info_t *info)
{
    sw__symbol_module_t *e = find(m, path);
    if (e == NULL || e->dwfl == NULL) {
        return false;
    }
    GElf_Off sym_off = 0;
    GElf_Sym sym;
    info->name = dwfl_module_addrinfo(e->mod, (Dwarf_Addr)offset, &sym_off, &sym, NULL, NULL, NULL);
    info->src = NULL;
    info->line = 0;
    Dwfl_Line *line = dwfl_module_getsrc(e->mod, (Dwarf_Addr)offset);
    if (line != NULL) {
        int lineno = 0;
        info->src = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
        info->line = lineno;
    } else {
        line_by_cu(e->mod, (Dwarf_Addr)offset, info);
    }
    charge_debug_file(m, e);
    return true;
}

void sw__symbol_modules_release(sw__symbol_modules_t *m)
{
    if (m->transient != NULL) {
        close_module(m->transient);
        m->transient = NULL;
    }
}
