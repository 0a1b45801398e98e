/*
 * crash_internal.h - the recorder's state, shared by its files (internal to agent/src/crash).
 *
 * Global because a signal handler has no argument to find it by. Everything the handler reads
 * is allocated before the handlers are installed and stays until they are removed; the
 * handler writes only the spool mapping.
 */
#ifndef SW_CRASH_CRASH_INTERNAL_H
#define SW_CRASH_CRASH_INTERNAL_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../core/context.h"
#include "crash_spool.h"

#define SW__CRASH_SLOTS    1024u /* threads whose context the handler can find */
#define SW__CRASH_MODS_MAX 512u  /* mapped objects the module table holds */
#define SW__CRASH_ALTSTACK (64u * 1024u)

/* One thread the handler can find: its kernel thread id and its context. tid is written
   last (release) by the thread when it registers and cleared first when it leaves; the
   handler loads it with acquire (partner) before it reads ctx. */
typedef struct sw__crash_slot {
    _Atomic int32_t tid;
    _Atomic(sw__context_t *) ctx;
    void *altstack; /* the mapping the agent gave the thread, NULL: none (owning thread only) */
} sw__crash_slot_t;

typedef struct sw__crash_module {
    uint64_t lo, hi, base;
} sw__crash_module_t;

/* A snapshot of the program's mapped objects: `mods` for the handler's lookups and `image`,
   the same in the spool's module-table format (crash_spool.h), copied into the spool. */
typedef struct sw__crash_modtab {
    uint32_t count;
    uint32_t bytes; /* of image */
    sw__crash_module_t mods[SW__CRASH_MODS_MAX];
    uint8_t image[SW__CRASH_MODULES_BYTES];
} sw__crash_modtab_t;

typedef struct sw__crash_state {
    /* Whether a crash is recorded into the spool. Stored with release by arm after the
       spool and the tables are ready (partner: the handler's acquire load), cleared by
       disarm and in a forked child. */
    _Atomic bool armed;
    /* Written by arm/disarm only (lifecycle lock), read by the handler while armed. */
    uint8_t *map;
    int fd;
    int dir_fd;
    pid_t pid;
    char path[1100];
    char name[128];
    /* The agent's own image: the range its static strings may lie in. */
    _Atomic uintptr_t self_lo, self_hi;
    /* Double-buffered module tables: refreshers (holding modtab_lock) fill the one not
       `active` and publish it with release; the handler loads `active` with acquire. */
    sw__crash_modtab_t tabs[2];
    _Atomic uint32_t active;
    /* Which thread is recording: 0, or the recording thread's tid (CAS, acq_rel). */
    _Atomic int32_t recording;
    sw__crash_slot_t slots[SW__CRASH_SLOTS];
} sw__crash_state_t;

extern sw__crash_state_t sw__crash;

/* Threads the slot table had no room for (crash_handler.c; sw__crash_stats). */
extern _Atomic uint64_t sw__crash_unregistered;

/*
 * Records a crash into the spool (crash_record.c). Signal context, async-signal-safe: no
 * malloc, no stdio, no locks; reads the contexts and segments with bounds checks only.
 */
void sw__crash_record(int signo, const siginfo_t *si, const void *ucontext, int32_t tid);

/* Takes a new snapshot of the mapped objects and publishes it (crash_modules.c). Normal
   context; takes a mutex and calls dl_iterate_phdr. */
void sw__crash_modules_refresh(void);

/* The kernel thread id of the caller. Async-signal-safe. */
int32_t sw__crash_gettid(void);

#endif /* SW_CRASH_CRASH_INTERNAL_H */
