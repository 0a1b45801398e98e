/*
 * symbolizer.h - code addresses to frame strings (internal), for the profiler's thread snapshots
 * (agent/src/profile) and the crash recorder's reports (agent/src/crash).
 *
 * A frame string reads like the SkyWalking Java agent's code signature ("Class.method:line",
 * which the OAP merges into its profile tree by string equality), in the shape native stacks
 * are usually read:
 *
 *   "checksum_block (slow.c:42)"        a function and its source line (DWARF present)
 *   "ns::Parser::rows(int) (parse.cc:7)" C++ names demangled
 *   "checksum_block (app)"              a symbol without line information: module basename
 *   "libfoo.so+0x1a2b"                  no symbol covers the address: module basename + offset
 *   "0x7f12345678"                      no module covers the address
 *
 * A C symbol's compiler suffix is dropped ("f.constprop.0", "f.isra.0", "f.cold" read "f").
 * The file is the basename of the DWARF line table's file, so equal frames compare equal across
 * builds in different directories. A frame without a line keeps only the module (no offset), so
 * samples inside one function merge in the OAP's tree.
 *
 * How an address is found, in order: dladdr1 (RTLD_DL_LINKMAP) names the module that maps it and
 * its load base (and a dynamic symbol); the module's ELF file is then opened once through
 * elfutils' libdwfl, whose symbol lookup covers .symtab (static functions) and .dynsym, and
 * whose line lookup reads DWARF (also from a separate debug file found by build id or
 * .gnu_debuglink under /usr/lib/debug). A module whose file cannot be read (the vDSO, a deleted
 * file) keeps dladdr's symbol or falls back to "module+0xoffset". C++ names are demangled with
 * __cxa_demangle, looked up at run time with dlsym(RTLD_DEFAULT): it is there whenever
 * libstdc++ is loaded, which any C++ program has; a C program without it has no C++ frames.
 *
 * Return addresses: for every frame but the innermost, an unwinder holds the address after the
 * call, which may belong to the next line or even the next function. Callers pass `pc - 1` for
 * those frames.
 *
 * Memory: everything the symbolizer keeps (the open modules, charged at the size of their ELF
 * file and debug file, which libdw maps and indexes no larger than; and a direct-mapped cache of
 * frame strings) stays within the `max_bytes` given at creation; the least recently used module
 * is closed to make room, and a module larger than the whole budget is opened for one lookup
 * and closed again.
 *
 * Threads: thread-safe. One mutex serialises every call on a symbolizer, so lookups from the
 * profiler's thread and the crash shipper never run together. Never from a signal handler (it
 * allocates, opens files and takes a lock).
 */
#ifndef SW_SYMBOL_SYMBOLIZER_H
#define SW_SYMBOL_SYMBOLIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct sw__symbolizer sw__symbolizer_t;

/* Smallest budget sw__symbolizer_create accepts (the frame cache alone takes part of it). */
#define SW__SYMBOLIZER_MIN_BYTES (64u * 1024u)

/* Creates a symbolizer whose caches (modules, ELF symbol tables, DWARF, frame strings) stay within
   `max_bytes` in total. Returns 0 or a negative SW_E* code (SW_EINVAL: out NULL or max_bytes below
   SW__SYMBOLIZER_MIN_BYTES; SW_ENOMEM). Not for signal handlers. */
int sw__symbolizer_create(size_t max_bytes, sw__symbolizer_t **out);

/* Frees the symbolizer and everything it holds. NULL is a no-op. No call may be running on it. */
void sw__symbolizer_destroy(sw__symbolizer_t *s);

/* An address in THIS process -> one frame string in `out` (always NUL-terminated, truncated to
   cap). Returns the length written. Never fails: an unknown frame is written as "module+0xoffset"
   (or "0x..." when no module). With cap 0 nothing is written and 0 is returned. */
size_t sw__symbolizer_addr(sw__symbolizer_t *s, uintptr_t addr, char *out, size_t cap);

/* A frame recorded by ANOTHER (possibly dead) process: the module's file path and the offset of
   the address from that module's load base (addr - dlpi_addr of dl_iterate_phdr). Same output
   rules. */
size_t sw__symbolizer_module_offset(sw__symbolizer_t *s, const char *module_path, uint64_t offset,
                                    char *out, size_t cap);

/* Bytes the symbolizer holds now (modules + frame cache), never above its max_bytes. Tests and
   stats. */
size_t sw__symbolizer_bytes(sw__symbolizer_t *s);

/* Modules open now. Tests. */
size_t sw__symbolizer_modules(sw__symbolizer_t *s);

#endif /* SW_SYMBOL_SYMBOLIZER_H */
