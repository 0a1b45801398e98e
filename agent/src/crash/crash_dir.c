/*
 * crash_dir.c - opening the crash directory with the owner and mode checks of crash_dir.h.
 */
#include "crash_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash.h"
#include "crash_spool.h"
#include "swc_errbuf.h"

int sw__crash_dir_open(const sw_config_t *cfg, char *path, size_t path_cap, char *errbuf,
                       size_t errlen)
{
    if (cfg->crash_dir[0] != '\0') {
        snprintf(path, path_cap, "%s", cfg->crash_dir);
    } else {
        snprintf(path, path_cap, SW__CRASH_DIR_DEFAULT_FMT, (unsigned)geteuid());
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        swc__errbuf_printf(errbuf, errlen, "SW_AGENT_CRASH_DIR=%s: cannot create it (%s)", path,
                           strerror(errno));
        return -1;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        swc__errbuf_printf(errbuf, errlen,
                           "SW_AGENT_CRASH_DIR=%s: cannot open it as a directory (%s; a "
                           "symbolic link is not followed)",
                           path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
        swc__errbuf_printf(errbuf, errlen,
                           "SW_AGENT_CRASH_DIR=%s: must belong to this user (uid %u) and not be "
                           "writable by group or others",
                           path, (unsigned)geteuid());
        close(fd);
        return -1;
    }
    return fd;
}

const char *sw__crash_service_key(const char *service)
{
    static _Thread_local char key[17];
    uint64_t h = sw__fnv1a(SW__FNV_START, service, strlen(service));
    snprintf(key, sizeof key, "%016llx", (unsigned long long)h);
    return key;
}
