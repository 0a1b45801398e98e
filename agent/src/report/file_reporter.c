/*
 * file_reporter.c - length-delimited SegmentObject records appended to a local file.
 */
#include <errno.h>
#include <fcntl.h>
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
#include "reporter.h"

/* Consumer thread only (report), then close() after the consumer stopped. */
typedef struct file_reporter {
    sw__reporter_t base;
    int fd;
    bool regular;       /* a regular file (cut back after a failed write); else /dev/null etc. */
    bool broken;        /* a torn record could not be cut back: every later batch fails */
    bool reserve;       /* a regular file whose file system has fallocate (reserve_ahead) */
    off_t reserved_end; /* the end of the space reserve_ahead reserved; 0: none */
    sw__bytes_t buf;    /* the batch being framed */
    char path[SW_CONFIG_TEXT_MAX];
} file_reporter_t;

/* Writes all of buf, retrying short writes and EINTR. Returns 0 or -errno. */
static int write_all(int fd, const uint8_t *p, size_t n)
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
    }
    return 0;
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
 * Writes one framed batch so that the file only ever grows by whole records: the size before
 * the write is remembered, and a failed or short write (disk full, RLIMIT_FSIZE, an I/O error)
 * cuts the file back to it. Returns true when the whole batch is in the file.
 */
static bool batch_write(file_reporter_t *r)
{
    char esc[SW__LOG_ESCAPED_SIZE];
    if (r->broken) {
        return false;
    }
    off_t before = 0;
    if (r->regular && (before = lseek(r->fd, 0, SEEK_END)) < 0) {
        sw__log(SW_LOG_WARN,
                "file reporter: cannot find the end of '%s': %s; the batch is "
                "counted as failed",
                SW__LOG_ESC(esc, r->path), strerror(errno));
        return false;
    }
    reserve_ahead(r, before, r->buf.len);
    int rc = write_all(r->fd, r->buf.data, r->buf.len);
    if (rc == 0) {
        return true;
    }
    r->reserved_end = 0; /* a cut back also frees the reserved space past the new end */
    if (r->regular && ftruncate(r->fd, before) != 0) {
        r->broken = true;
        sw__log(SW_LOG_ERROR,
                "file reporter: cannot cut '%s' back after a failed write (%s); every further "
                "segment is counted as failed",
                SW__LOG_ESC(esc, r->path), strerror(errno));
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
    if (r->fd >= 0) {
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
    int fd = sw__file_open("SW_REPORTER_FILE_PATH", path, O_WRONLY | O_CREAT | O_APPEND, 0644,
                           errbuf, errlen);
    if (fd < 0) {
        free(r);
        return fd;
    }
    struct stat st;
    r->fd = fd;
    r->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    r->reserve = r->regular;
    snprintf(r->path, sizeof r->path, "%s", path);
    r->base.name = "file";
    r->base.counters = counters;
    r->base.report = file_report;
    r->base.flush = file_flush;
    r->base.close = file_close;
    *out = &r->base;
    return 0;
}
