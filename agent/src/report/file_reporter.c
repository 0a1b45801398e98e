/*
 * file_reporter.c - length-delimited SegmentObject records appended to a local file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../config/config.h"
#include "encode.h"
#include "reporter.h"

typedef struct file_reporter {
    sw__reporter_t base;
    int fd;
    sw__bytes_t buf; /* the batch being framed; consumer thread only */
    char path[SW_CONFIG_TEXT_MAX];
} file_reporter_t;

static size_t varint_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* Writes all of buf, retrying short writes and EINTR. Returns 0 or -errno. */
static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void file_report(sw__reporter_t *self, const sw__report_record_t *records, size_t count)
{
    file_reporter_t *r = (file_reporter_t *)self;
    r->buf.len = 0;
    size_t framed = 0;
    for (size_t i = 0; i < count; i++) {
        if (sw__bytes_reserve(&r->buf, records[i].len + 10) != 0)
            break;
        r->buf.len += varint_put(r->buf.data + r->buf.len, records[i].len);
        memcpy(r->buf.data + r->buf.len, records[i].data, records[i].len);
        r->buf.len += records[i].len;
        framed++;
    }
    int rc = r->buf.len ? write_all(r->fd, r->buf.data, r->buf.len) : 0;
    uint64_t ok = rc == 0 ? framed : 0;
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
    if (r->fd >= 0)
        close(r->fd);
    sw__bytes_free(&r->buf);
    free(r);
}

int sw__file_reporter_create(const char *path, sw__report_counters_t *counters,
                             sw__reporter_t **out, char *errbuf, size_t errlen)
{
    file_reporter_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return SW_ENOMEM;
    r->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (r->fd < 0) {
        sw__errbuf_printf(errbuf, errlen, "SW_REPORTER_FILE_PATH: cannot open '%s': %s", path,
                          strerror(errno));
        free(r);
        return SW_EIO;
    }
    snprintf(r->path, sizeof r->path, "%s", path);
    r->base.name = "file";
    r->base.counters = counters;
    r->base.report = file_report;
    r->base.flush = file_flush;
    r->base.close = file_close;
    *out = &r->base;
    return 0;
}
