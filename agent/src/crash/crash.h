/*
 * crash.h - the crash flight recorder (internal); docs/CRASH.md says what it keeps.
 *
 *   sw_init        sw__crash_arm: creates this process's spool, snapshots the module table,
 *                  installs the handlers of SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS
 *                  (crash_handler.c); once the run is published, sw__crash_ship sends the
 *                  spools that earlier processes of the same service left in
 *                  SW_AGENT_CRASH_DIR (crash_ship.c), counted as finished segments of the run.
 *   a thread joins sw__crash_thread_joined (through sw__agent.thread_joined): the thread's
 *                  context is findable by its thread id, and it gets an alternate signal
 *                  stack unless it has one; sw__crash_thread_exiting undoes both.
 *   a crash        the handler (signal context: crash_record.c) ends the open spans of the
 *                  crashing thread's segment, best effort other threads', writes them into
 *                  the spool, then runs the handler the program had and dies by the signal.
 *   sw_shutdown    sw__crash_disarm: removes the spool and the handlers (when still ours).
 *
 * Locality: arm/disarm/ship on the thread running sw_init/sw_shutdown (lifecycle lock held);
 * thread_joined/thread_exiting on the thread itself; nothing here is on the span path.
 */
#ifndef SW_CRASH_CRASH_H
#define SW_CRASH_CRASH_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/context.h"
#include "skywalking.h"

/* The default SW_AGENT_CRASH_DIR: /var/tmp survives a reboot, the uid keeps users apart. */
#define SW__CRASH_DIR_DEFAULT_FMT "/var/tmp/skywalking-c-crash-%u"

/* Whether this build may catch signals (not under AddressSanitizer or ThreadSanitizer, whose
   own handlers and shadow memory the recorder must not fight). */
bool sw__crash_supported(void);

/*
 * Creates the spool and installs the handlers when cfg->crash_recorder is set. A directory
 * that is a link, not the effective user's, or writable by others is refused. Failure is not
 * fatal to sw_init: it is logged naming SW_AGENT_CRASH_DIR and the recorder stays off.
 * Returns 0 or a negative SW_E* code.
 */
int sw__crash_arm(const sw_config_t *cfg);

/* Disarms, removes this process's spool and restores the handlers that are still ours. */
void sw__crash_disarm(void);

/* Forked child: the parent's spool is not the child's (the child arms its own at sw_init). */
void sw__crash_after_fork_child(void);

/* Hooks of the thread registry (sw__agent.thread_joined / thread_exiting). */
void sw__crash_thread_joined(sw__context_t *c);
void sw__crash_thread_exiting(sw__context_t *c);

/*
 * Ships the recorded spools of dead processes of cfg's service from the crash directory:
 * segments into the running pipeline's carrier (each counted as a finished segment of the
 * run, so sw_stats keeps finished = reported + dropped + failed), a Crash event to the log
 * pipeline (gRPC), then removes each spool. A damaged spool is removed and counted. Call once
 * the run is published (sw_init, lifecycle lock held). Blocks on file I/O only.
 */
void sw__crash_ship(const sw_config_t *cfg);

/* Counters of this process (tests, diagnostics). */
typedef struct sw__crash_stats {
    uint64_t spools_shipped;
    uint64_t segments_shipped;
    uint64_t spools_dropped;       /* damaged, truncated, or whose segments could not be decoded */
    uint64_t threads_unregistered; /* threads the slot table had no room for */
} sw__crash_stats_t;

void sw__crash_stats(sw__crash_stats_t *out);

#endif /* SW_CRASH_CRASH_H */
