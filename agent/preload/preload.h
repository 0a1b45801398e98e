/*
 * preload.h - shared pieces of libskywalking-preload.so (internal).
 *
 * The library is LD_PRELOADed into an unmodified, dynamically linked program. Its exported
 * functions (exports.map) replace libcurl's, libmicrohttpd's and libc's: each creates spans
 * around a call to the real function, found with dlsym(RTLD_NEXT) / dlvsym.
 *
 * The agent is started lazily, on the first call that traces (a curl transfer, a
 * libmicrohttpd daemon), so that a program that never calls anything instrumented runs no
 * agent thread and writes no file.
 */
#ifndef SW_PRELOAD_H
#define SW_PRELOAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h> /* memcpy, for SW__PRELOAD_REAL */

#include "../src/instrument/span_mark.h"
#include "skywalking.h"

/* Component ids of the OAP's component-libraries.yml (Apache SkyWalking 10.x); the README
   (the preload's components table) says why each was chosen. */
#define SW__COMPONENT_HTTP       49   /* libmicrohttpd entries */
#define SW__COMPONENT_CURL       8002 /* libcurl exits */
#define SW__COMPONENT_POSTGRESQL 22
#define SW__COMPONENT_MYSQL      5 /* libmariadb: the MySQL C API, to MySQL or MariaDB */
#define SW__COMPONENT_REDIS      7
#define SW__COMPONENT_GRPC       23 /* gRPC client and server calls */

/*
 * Returns the next definition of `name` after this library (`version` may be NULL), caching
 * it in *slot; NULL when there is none. Never calls anything that this library interposes.
 * Any thread.
 */
void *sw__preload_real(_Atomic(void *) *slot, const char *name, const char *version);

/*
 * Sets the function pointer `var` to the next definition of `name` (a string literal), or to
 * NULL; the lookup is cached in a slot private to this use of the macro. ISO C has no cast from
 * void * to a function pointer, hence the memcpy (same size on every platform we build for).
 * Any thread.
 */
#define SW__PRELOAD_REAL(var, name)                        \
    do {                                                   \
        static _Atomic(void *) slot_;                      \
        void *sym_ = sw__preload_real(&slot_, name, NULL); \
        memcpy(&(var), &sym_, sizeof sym_);                \
    } while (0)

/*
 * Starts the agent on the first call (with sw__preload_config) and returns true
 * while it runs. A bad configuration or a failed start is logged once (sw__log: stderr by default)
 * and leaves tracing off for the life of the process (a forked child tries again). Any thread; the
 * first call blocks while the agent starts (opens the file, starts the consumer thread).
 */
bool sw__preload_agent_ready(void);

/* The preload's configuration (file and environment), read on the first call: by the constructor
   or by an earlier hook. Read-only; any thread. */
const sw_config_t *sw__preload_config(void);

/*
 * After a begin made by this library: when it started the thread's first segment (mark
 * span_id 0) and the thread was created under a span (pthread_create) or forked under one,
 * links the new span to that span (CrossThread). The pending link is consumed by the first
 * segment either way. Owning thread only.
 */
void sw__preload_pending_apply(const sw__span_mark_t *mark, bool link);

/*
 * Tags the active span's http.status_code: codes 100..599 with literals of this library (no
 * formatting, no copy), others formatted and copied.
 */
void sw__preload_status_tag(long status);

/* Set on a thread while the agent itself runs inside an interposed call (starting or stopping
   the agent): interposers then only forward to the real function. */
extern _Thread_local bool sw__preload_busy;

#endif /* SW_PRELOAD_H */
