/*
 * crash_dir.h - the crash directory (SW_AGENT_CRASH_DIR) and the spool names in it
 * (internal to agent/src/crash). Normal context only.
 */
#ifndef SW_CRASH_CRASH_DIR_H
#define SW_CRASH_CRASH_DIR_H

#include <stddef.h>

#include "skywalking.h"

/*
 * Opens the crash directory of cfg (SW_AGENT_CRASH_DIR, or the default of crash.h), creating
 * it 0700 when missing. The path itself must not be a symbolic link (O_NOFOLLOW), and the
 * directory must belong to the effective user and not be writable by group or others: a
 * shared place such as /tmp itself is refused. Returns the directory's descriptor with its
 * path in `path`, or -1 with a message naming SW_AGENT_CRASH_DIR in errbuf.
 */
int sw__crash_dir_open(const sw_config_t *cfg, char *path, size_t path_cap, char *errbuf,
                       size_t errlen);

/* 16 hex digits of a hash of the service name: the prefix of its spools' file names, so a
   process lists only its own service's spools (the header's name is still compared). Returns
   a static buffer of the calling thread. */
const char *sw__crash_service_key(const char *service);

#endif /* SW_CRASH_CRASH_DIR_H */
