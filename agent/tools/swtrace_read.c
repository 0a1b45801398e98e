/*
 * Reading segment files: unsigned varint length + SegmentObject bytes, repeated. Every record
 * is checked before anything is allocated for it: the length must fit the 64 MiB cap and the
 * rest of the buffer, and the decoded message must look like a segment (trace id, segment id,
 * at least one span).
 */
#include "swtrace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *sw__trace_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define SW__TRACE_ERR_MSG(name, code, msg) \
    case code:                             \
        return msg;
        SW__TRACE_ERRORS(SW__TRACE_ERR_MSG)
#undef SW__TRACE_ERR_MSG
    }
    return "unknown error";
}

/* Parses a varint at buf[*pos]. Returns 1 on success, 0 if the buffer ends inside it, -1 if it
 * is longer than 10 bytes or overflows 64 bits. */
static int varint_parse(const uint8_t *buf, size_t len, size_t *pos, uint64_t *value)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (*pos + i >= len) {
            return 0;
        }
        uint8_t b = buf[*pos + i];
        if (i == 9 && b > 1) {
            return -1;
        }
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if ((b & 0x80) == 0) {
            *pos += i + 1;
            *value = v;
            return 1;
        }
    }
    return -1;
}

static const char *set_name_add(sw__trace_set_t *set, const char *name)
{
    if (set->n_files > 0 && strcmp(set->files[set->n_files - 1], name) == 0) {
        return set->files[set->n_files - 1];
    }
    char **grown = realloc(set->files, (set->n_files + 1) * sizeof(*grown));
    if (grown == NULL) {
        return NULL;
    }
    set->files = grown;
    char *copy = strdup(name);
    if (copy == NULL) {
        return NULL;
    }
    set->files[set->n_files++] = copy;
    return copy;
}

static bool segment_plausible(const Skywalking__V3__SegmentObject *obj)
{
    return obj->traceid != NULL && obj->traceid[0] != '\0' && obj->tracesegmentid != NULL &&
           obj->tracesegmentid[0] != '\0' && obj->n_spans > 0;
}

static int set_segment_add(sw__trace_set_t *set, Skywalking__V3__SegmentObject *obj,
                           const char *file, uint64_t offset)
{
    if (set->n_segs == set->cap_segs) {
        size_t cap = set->cap_segs ? set->cap_segs * 2 : 64;
        sw__trace_segment_t *grown = realloc(set->segs, cap * sizeof(*grown));
        if (grown == NULL) {
            return SW__TRACE_ERR_NOMEM;
        }
        set->segs = grown;
        set->cap_segs = cap;
    }
    sw__trace_segment_t *seg = &set->segs[set->n_segs++];
    memset(seg, 0, sizeof(*seg));
    seg->obj = obj;
    seg->file = file;
    seg->offset = offset;
    seg->start = INT64_MAX;
    seg->end = INT64_MIN;
    for (size_t i = 0; i < obj->n_spans; i++) {
        const Skywalking__V3__SpanObject *span = obj->spans[i];
        seg->start = span->starttime < seg->start ? span->starttime : seg->start;
        seg->end = span->endtime > seg->end ? span->endtime : seg->end;
    }
    seg->parent_seg = SIZE_MAX;
    return 0;
}

int sw__trace_set_read_buffer(sw__trace_set_t *set, const uint8_t *buf, size_t len,
                              const char *name, char *errbuf, size_t errlen)
{
    const char *file = set_name_add(set, name);
    if (file == NULL) {
        snprintf(errbuf, errlen, "%s: out of memory", name);
        return SW__TRACE_ERR_NOMEM;
    }
    size_t pos = 0;
    while (pos < len) {
        size_t record = pos;
        uint64_t n = 0;
        int rc = varint_parse(buf, len, &pos, &n);
        if (rc == 0) {
            snprintf(errbuf, errlen,
                     "%s: truncated file: the record at byte offset %zu is cut inside its length "
                     "prefix (file size %zu)",
                     name, record, len);
            return SW__TRACE_ERR_TRUNCATED;
        }
        if (rc < 0) {
            snprintf(errbuf, errlen,
                     "%s: not a segment file: invalid length prefix at byte offset %zu", name,
                     record);
            return SW__TRACE_ERR_FOREIGN;
        }
        if (n > SW__TRACE_RECORD_MAX) {
            snprintf(errbuf, errlen,
                     "%s: record at byte offset %zu claims %llu bytes, above the %u byte limit "
                     "(corrupt or not a segment file)",
                     name, record, (unsigned long long)n, SW__TRACE_RECORD_MAX);
            return SW__TRACE_ERR_TOO_LARGE;
        }
        if (n > len - pos) {
            snprintf(errbuf, errlen,
                     "%s: truncated file: the record at byte offset %zu needs %llu bytes but "
                     "only %zu remain (cut at byte offset %zu)",
                     name, record, (unsigned long long)n, len - pos, len);
            return SW__TRACE_ERR_TRUNCATED;
        }
        Skywalking__V3__SegmentObject *obj =
            skywalking__v3__segment_object__unpack(NULL, (size_t)n, buf + pos);
        if (obj == NULL || !segment_plausible(obj)) {
            if (obj != NULL) {
                skywalking__v3__segment_object__free_unpacked(obj, NULL);
            }
            snprintf(errbuf, errlen,
                     "%s: not a segment file: the %llu byte record at byte offset %zu is not a "
                     "SkyWalking SegmentObject",
                     name, (unsigned long long)n, record);
            return SW__TRACE_ERR_FOREIGN;
        }
        if (set_segment_add(set, obj, file, record) != 0) {
            skywalking__v3__segment_object__free_unpacked(obj, NULL);
            snprintf(errbuf, errlen, "%s: out of memory at byte offset %zu", name, record);
            return SW__TRACE_ERR_NOMEM;
        }
        pos += (size_t)n;
    }
    return 0;
}

/* Reads a non-mappable input (pipe, empty file) into a malloc'ed buffer. */
static int fd_slurp(int fd, uint8_t **out, size_t *out_len)
{
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 65536;
            uint8_t *grown = realloc(buf, cap);
            if (grown == NULL) {
                free(buf);
                return SW__TRACE_ERR_NOMEM;
            }
            buf = grown;
        }
        ssize_t got = read(fd, buf + len, cap - len);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            free(buf);
            return SW__TRACE_ERR_IO;
        }
        if (got == 0) {
            break;
        }
        len += (size_t)got;
    }
    *out = buf;
    *out_len = len;
    return 0;
}

int sw__trace_set_read_file(sw__trace_set_t *set, const char *path, char *errbuf, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(errbuf, errlen, "%s: cannot open: %s", path, strerror(errno));
        return SW__TRACE_ERR_IO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(errbuf, errlen, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return SW__TRACE_ERR_IO;
    }
    int rc;
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        /* A mapping keeps memory at one copy of the file even for large traces. */
        size_t len = (size_t)st.st_size;
        void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            snprintf(errbuf, errlen, "%s: cannot map: %s", path, strerror(errno));
            close(fd);
            return SW__TRACE_ERR_IO;
        }
        rc = sw__trace_set_read_buffer(set, map, len, path, errbuf, errlen);
        munmap(map, len);
    } else if (S_ISDIR(st.st_mode)) {
        snprintf(errbuf, errlen, "%s: is a directory, not a segment file", path);
        rc = SW__TRACE_ERR_IO;
    } else {
        uint8_t *buf = NULL;
        size_t len = 0;
        rc = fd_slurp(fd, &buf, &len);
        if (rc != 0) {
            snprintf(errbuf, errlen, "%s: cannot read: %s", path, sw__trace_strerror(rc));
        } else {
            rc = sw__trace_set_read_buffer(set, buf, len, path, errbuf, errlen);
        }
        free(buf);
    }
    close(fd);
    return rc;
}

void sw__trace_set_destroy(sw__trace_set_t *set)
{
    for (size_t i = 0; i < set->n_segs; i++) {
        skywalking__v3__segment_object__free_unpacked(set->segs[i].obj, NULL);
    }
    for (size_t i = 0; i < set->n_files; i++) {
        free(set->files[i]);
    }
    free(set->segs);
    free(set->files);
    memset(set, 0, sizeof(*set));
}
