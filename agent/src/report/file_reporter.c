/*
 * file_reporter.c - length-delimited SegmentObject records appended to a local file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../config/config.h"
#include "../config/file_open.h"
#include "../encode/pb_reverse.h"
#include "../log/log.h"
#include "../encode/encode.h"
#include "swc_errbuf.h"
#include "reporter.h"

#define KEY "SW_REPORTER_FILE_PATH"

/* Consumer thread only (report), then close() after the consumer stopped. */
typedef struct file_reporter {
    sw__reporter_t base;
    int fd;    /* -1: the descriptor was lost and the file could not be reopened */
    dev_t dev; /* the identity of the file fd was opened on (output_usable) */
    ino_t ino;
    bool regular;        /* a regular file (cut back after a failed write); else /dev/null etc. */
    bool broken;         /* a torn record could not be cut back: every later batch fails */
    bool reserve;        /* a regular file whose file system has fallocate (reserve_ahead) */
    bool lock;           /* the file system has open file description locks (batch_lock) */
    bool lost_logged;    /* the loss of the descriptor was said (once per reporter) */
    bool reopen_logged;  /* a failed reopen was said (once per loss) */
    off_t reserved_end;  /* the end of the space reserve_ahead reserved; 0: none */
    sw__bytes_t buf;     /* the batch being framed */
    char path[PATH_MAX]; /* absolute: a later chdir of the program does not move it */
} file_reporter_t;

/*
 * The empty file a file reporter of this process created, for
 * sw__file_reporter_remove_if_empty. Written by sw__file_reporter_create (sw_init, under its
 * lifecycle lock), read after the agent stopped (the preload's destructor): no lock.
 */
static struct {
    bool set;
    dev_t dev;
    ino_t ino;
    char path[PATH_MAX];
} created;

/* Writes all of buf, retrying short writes and EINTR; adds the bytes written to *done.
   Returns 0 or -errno. */
static int write_all(int fd, const uint8_t *p, size_t n, size_t *done)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        p += w;
        n -= (size_t)w;
        *done += (size_t)w;
    }
    return 0;
}

/* Makes `abs` (PATH_MAX) the absolute form of path. Returns false when it does not fit. */
static bool path_absolute(const char *path, char *abs)
{
    if (path[0] == '/') {
        return (size_t)snprintf(abs, PATH_MAX, "%s", path) < PATH_MAX;
    }
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL) {
        return false;
    }
    return (size_t)snprintf(abs, PATH_MAX, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, path) <
           PATH_MAX;
}

/*
 * Opens the output r->path the way a shared directory (/tmp) needs: never through a symbolic
 * link (O_NOFOLLOW), a new file 0600, an existing regular file only when this process's user
 * owns it (another user could read the segments, or have planted the file). Fills r->dev,
 * r->ino and r->regular; *made tells whether this call created the file. Returns the
 * descriptor or a negative SW_E* code with a message naming the setting.
 */
static int output_open(file_reporter_t *r, bool *made, char *errbuf, size_t errlen)
{
    char esc[SW__LOG_ESCAPED_SIZE];
    const int flags = O_WRONLY | O_APPEND | O_NOFOLLOW;
    int fd = open(r->path, flags | O_CREAT | O_EXCL | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600);
    *made = fd >= 0;
    if (fd < 0) { /* there already (or not creatable): opened and checked as every setting's */
        fd = sw__file_open(KEY, r->path, flags | O_CREAT, 0600, errbuf, errlen);
    }
    struct stat st;
    if (fd < 0) {
        if (lstat(r->path, &st) == 0 && S_ISLNK(st.st_mode)) {
            swc__errbuf_printf(errbuf, errlen,
                               KEY ": '%s' is a symbolic link; the file reporter does not follow "
                                   "links (name the file itself)",
                               SW__LOG_ESC(esc, r->path));
            return SW_ECONFIG;
        }
        return fd;
    }
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        swc__errbuf_printf(errbuf, errlen, KEY ": cannot stat '%s': %s", SW__LOG_ESC(esc, r->path),
                           strerror(e));
        return SW_EIO;
    }
    if (S_ISREG(st.st_mode) && st.st_uid != geteuid()) {
        close(fd);
        swc__errbuf_printf(errbuf, errlen,
                           KEY ": '%s' belongs to user %lu, not to this process's user %lu; the "
                               "file reporter appends only to its own files",
                           SW__LOG_ESC(esc, r->path), (unsigned long)st.st_uid,
                           (unsigned long)geteuid());
        return SW_ECONFIG;
    }
    r->dev = st.st_dev;
    r->ino = st.st_ino;
    r->regular = S_ISREG(st.st_mode);
    return fd;
}

/* Whether r->fd still refers to the file it was opened on. */
static bool output_same(const file_reporter_t *r)
{
    struct stat st;
    return r->fd >= 0 && fstat(r->fd, &st) == 0 && st.st_dev == r->dev && st.st_ino == r->ino;
}

/*
 * Checked before each batch: the program may have closed the reporter's descriptor, and its
 * number may now be one of the program's own files or sockets. The descriptor is then
 * forgotten, never written to nor closed, and r->path reopened (output_open). Returns whether
 * the batch can be written; false counts it as failed. Each loss and each failed reopen is
 * said once.
 */
static bool output_usable(file_reporter_t *r)
{
    if (output_same(r)) {
        return true;
    }
    char esc[SW__LOG_ESCAPED_SIZE];
    if (r->fd >= 0) {
        if (!r->lost_logged) {
            r->lost_logged = true;
            sw__log(SW_LOG_WARN,
                    "file reporter: descriptor %d no longer refers to '%s' (the program closed "
                    "it?); it is left alone and the file reopened",
                    r->fd, SW__LOG_ESC(esc, r->path));
        }
        r->fd = -1;
        r->reopen_logged = false;
        r->reserved_end = 0;
    }
    char err[512] = "";
    bool made;
    int fd = output_open(r, &made, err, sizeof err);
    if (fd < 0) {
        if (!r->reopen_logged) {
            r->reopen_logged = true;
            sw__log(SW_LOG_WARN, "file reporter: %s; segments are counted as failed until it opens",
                    err);
        }
        return false;
    }
    r->fd = fd;
    return true;
}

/*
 * Takes (F_WRLCK) or releases (F_UNLCK) the open file description lock on the whole file
 * around a batch, so that the cut back of a failed batch (batch_write) cannot cut records
 * that another writer appended meanwhile: forked children, which open their own description
 * (sw_init in the child), and other processes of the program writing the same file. Waits for
 * the holder's one write. A file system without these locks turns them off for the run.
 * Returns whether the lock is held.
 */
static bool batch_lock(file_reporter_t *r, short type)
{
    if (!r->lock) {
        return false;
    }
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    while (fcntl(r->fd, F_OFD_SETLKW, &fl) != 0) {
        if (errno != EINTR) {
            r->lock = false;
            return false;
        }
    }
    return true;
}

/* Space reserved beyond the file's end at a time (see reserve_ahead). */
#define RESERVE_STEP ((off_t)1 << 20)

/*
 * Reserves the RESERVE_STEP bytes (or the batch's, when larger) after `end` with
 * fallocate(FALLOC_FL_KEEP_SIZE) when the batch about to be written (`len` bytes) would pass the
 * space reserved so far. The file's size does not change (readers see whole records only), but
 * writes into reserved space skip the file system's per-block allocation (ext4's delayed
 * allocation, about a third of a buffered append's CPU). At most RESERVE_STEP bytes stay reserved
 * past the end when the agent stops (du counts them, ls -l does not). A file system without
 * fallocate turns it off for the run; a full disk only skips this step (the write then fails or not
 * on its own).
 */
static void reserve_ahead(file_reporter_t *r, off_t end, size_t len)
{
    if (!r->reserve || end + (off_t)len <= r->reserved_end) {
        return;
    }
    off_t step = (off_t)len > RESERVE_STEP ? (off_t)len : RESERVE_STEP;
    if (fallocate(r->fd, FALLOC_FL_KEEP_SIZE, end, step) == 0) {
        r->reserved_end = end + step;
    } else if (errno == EOPNOTSUPP || errno == ENOSYS) {
        r->reserve = false;
    }
}

/*
 * Cuts the file back to `before` after a failed write of `written` bytes. Under the batch lock
 * everything past `before` is this batch's; without it, only when the size says that no one
 * else appended. Returns 0 or the errno of the failure (r->broken is then set).
 */
static int batch_cut(file_reporter_t *r, bool locked, off_t before, size_t written)
{
    struct stat st;
    if (!locked && (fstat(r->fd, &st) != 0 || st.st_size != before + (off_t)written)) {
        r->broken = true;
        return EBUSY; /* another writer appended after the torn bytes: cutting would lose its */
    }
    if (ftruncate(r->fd, before) != 0) {
        r->broken = true;
        return errno;
    }
    return 0;
}

/*
 * Writes one framed batch so that the file only ever grows by whole records: under the batch
 * lock the size before the write is remembered, and a failed or short write (disk full,
 * RLIMIT_FSIZE, an I/O error) cuts the file back to it. Returns true when the whole batch is
 * in the file.
 */
static bool batch_write(file_reporter_t *r)
{
    char esc[SW__LOG_ESCAPED_SIZE];
    if (r->broken || !output_usable(r)) {
        return false;
    }
    bool locked = r->regular && batch_lock(r, F_WRLCK);
    off_t before = 0;
    if (r->regular && (before = lseek(r->fd, 0, SEEK_END)) < 0) {
        sw__log(SW_LOG_WARN,
                "file reporter: cannot find the end of '%s': %s; the batch is "
                "counted as failed",
                SW__LOG_ESC(esc, r->path), strerror(errno));
        if (locked) {
            (void)batch_lock(r, F_UNLCK);
        }
        return false;
    }
    reserve_ahead(r, before, r->buf.len);
    size_t written = 0;
    int rc = write_all(r->fd, r->buf.data, r->buf.len, &written);
    int cut = 0;
    if (rc != 0) {
        r->reserved_end = 0; /* a cut back also frees the reserved space past the new end */
        cut = r->regular ? batch_cut(r, locked, before, written) : 0;
    }
    if (locked) {
        (void)batch_lock(r, F_UNLCK);
    }
    if (rc == 0) {
        return true;
    }
    if (cut != 0) {
        sw__log(SW_LOG_ERROR,
                "file reporter: cannot cut '%s' back after a failed write (%s); every further "
                "segment is counted as failed",
                SW__LOG_ESC(esc, r->path),
                cut == EBUSY ? "another writer appended meanwhile" : strerror(cut));
        return false;
    }
    sw__log(SW_LOG_WARN, "file reporter: cannot write to '%s': %s; the batch is counted as failed",
            SW__LOG_ESC(esc, r->path), strerror(-rc));
    return false;
}

static void file_report(sw__reporter_t *self, const sw__report_record_t *records, size_t count)
{
    file_reporter_t *r = (file_reporter_t *)self;
    r->buf.len = 0;
    size_t framed = 0;
    for (size_t i = 0; i < count; i++) {
        if (sw__bytes_reserve(&r->buf, records[i].len + 10) != 0) {
            break;
        }
        r->buf.len += sw__pb_varint_put(r->buf.data + r->buf.len, records[i].len);
        memcpy(r->buf.data + r->buf.len, records[i].data, records[i].len);
        r->buf.len += records[i].len;
        framed++;
    }
    bool written = r->buf.len == 0 || batch_write(r);
    uint64_t ok = written ? framed : 0;
    /* release: partner of sw_stats' acquire load (see reporter.h). */
    atomic_fetch_add_explicit(&self->counters->failed, count - ok, memory_order_release);
    atomic_fetch_add_explicit(&self->counters->reported, ok, memory_order_release);
}

static int file_flush(sw__reporter_t *self)
{
    (void)self; /* every batch is written when reported: nothing is buffered here */
    return 0;
}

static void file_close(sw__reporter_t *self)
{
    file_reporter_t *r = (file_reporter_t *)self;
    if (output_same(r)) { /* else the number is no longer ours: the program's to close */
        close(r->fd);
    }
    sw__bytes_free(&r->buf);
    free(r);
}

int sw__file_reporter_create(const char *path, sw__report_counters_t *counters,
                             sw__reporter_t **out, char *errbuf, size_t errlen)
{
    file_reporter_t *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return SW_ENOMEM;
    }
    char esc[SW__LOG_ESCAPED_SIZE];
    if (!path_absolute(path, r->path)) {
        swc__errbuf_printf(errbuf, errlen, KEY ": '%s' is too long as an absolute path",
                           SW__LOG_ESC(esc, path));
        free(r);
        return SW_ECONFIG;
    }
    bool made;
    int fd = output_open(r, &made, errbuf, errlen);
    if (fd < 0) {
        free(r);
        return fd;
    }
    r->fd = fd;
    r->reserve = r->regular;
    r->lock = r->regular;
    created.set = made;
    if (made) {
        created.dev = r->dev;
        created.ino = r->ino;
        memcpy(created.path, r->path, sizeof created.path);
    }
    r->base.name = "file";
    r->base.counters = counters;
    r->base.report = file_report;
    r->base.flush = file_flush;
    r->base.close = file_close;
    *out = &r->base;
    return 0;
}

bool sw__file_reporter_remove_if_empty(void)
{
    struct stat st;
    if (!created.set || lstat(created.path, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_dev != created.dev || st.st_ino != created.ino || st.st_size != 0) {
        return false;
    }
    created.set = false;
    return unlink(created.path) == 0;
}
