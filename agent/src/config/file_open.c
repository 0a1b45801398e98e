/*
 * file_open.c - opening the files that settings name without blocking, and refusing FIFOs,
 * sockets and directories (see file_open.h).
 */
#include "file_open.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../log/log.h"
#include "config.h"
#include "swc_errbuf.h"

/* The kind of file st is, when the agent refuses it; NULL when it is accepted. */
static const char *kind_refused(const struct stat *st)
{
    if (S_ISREG(st->st_mode) || S_ISCHR(st->st_mode)) {
        return NULL;
    }
    if (S_ISFIFO(st->st_mode)) {
        return "a FIFO";
    }
    if (S_ISSOCK(st->st_mode)) {
        return "a socket";
    }
    if (S_ISDIR(st->st_mode)) {
        return "a directory";
    }
    if (S_ISBLK(st->st_mode)) {
        return "a block device";
    }
    return "not a regular file";
}

int sw__file_open(const char *key, const char *path, int flags, mode_t mode, char *errbuf,
                  size_t errlen)
{
    char esc[SW__LOG_ESCAPED_SIZE];
    int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode);
    if (fd < 0) {
        int e = errno;
        /* ENXIO: a FIFO opened for writing that nobody reads; EISDIR: a directory. */
        swc__errbuf_printf(errbuf, errlen, "%s: cannot open '%s': %s", key, SW__LOG_ESC(esc, path),
                           e == ENXIO ? "a FIFO or device without a reader" : strerror(e));
        return e == ENXIO || e == EISDIR ? SW_ECONFIG : SW_EIO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        swc__errbuf_printf(errbuf, errlen, "%s: cannot stat '%s': %s", key, SW__LOG_ESC(esc, path),
                           strerror(e));
        return SW_EIO;
    }
    const char *refused = kind_refused(&st);
    if (refused != NULL) {
        close(fd);
        swc__errbuf_printf(errbuf, errlen,
                           "%s: '%s' is %s; it must name a regular file (or /dev/null)", key,
                           SW__LOG_ESC(esc, path), refused);
        return SW_ECONFIG;
    }
    return fd;
}

int sw__file_read(const char *key, const char *path, size_t max, char **out, size_t *len,
                  char *errbuf, size_t errlen)
{
    int fd = sw__file_open(key, path, O_RDONLY, 0, errbuf, errlen);
    if (fd < 0) {
        return SW_ECONFIG;
    }
    char *buf = malloc(max + 2);
    if (buf == NULL) {
        close(fd);
        return SW_ENOMEM;
    }
    size_t n = 0;
    int err = 0;
    while (n <= max) {
        ssize_t r = read(fd, buf + n, max + 1 - n);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            err = errno;
        }
        if (r <= 0) {
            break;
        }
        n += (size_t)r;
    }
    close(fd);
    if (err != 0 || n > max) {
        char esc[SW__LOG_ESCAPED_SIZE];
        if (err != 0) {
            swc__errbuf_printf(errbuf, errlen, "%s: cannot read '%s': %s", key,
                               SW__LOG_ESC(esc, path), strerror(err));
        } else {
            swc__errbuf_printf(errbuf, errlen, "%s: '%s' is larger than %zu bytes", key,
                               SW__LOG_ESC(esc, path), max);
        }
        free(buf);
        return SW_ECONFIG;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}
