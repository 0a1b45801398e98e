/*
 * process_meters.c - /proc/self readings for the process meters.
 */
#include "process_meters.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "skywalking.h"

/* Reads a whole small procfs file into buf (NUL-terminated). Returns false on error. */
static bool file_read(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    size_t at = 0;
    while (at + 1 < size) {
        ssize_t n = read(fd, buf + at, size - 1 - at);
        if (n <= 0) {
            break;
        }
        at += (size_t)n;
    }
    close(fd);
    buf[at] = '\0';
    return at > 0;
}

bool sw__process_stat_parse(const char *text, long ticks_per_second, double *cpu_seconds,
                            uint32_t *threads)
{
    /* "pid (comm) state ppid ...": comm may hold spaces and parentheses, so the fields start
       after the last ')'. Counting from state as field 3 (proc(5)): utime 14, stime 15,
       num_threads 20. */
    const char *p = strrchr(text, ')');
    if (p == NULL || ticks_per_second <= 0) {
        return false;
    }
    p++;
    unsigned long long utime = 0, stime = 0;
    long nthreads = 0;
    for (int field = 3; field <= 20; field++) {
        while (*p == ' ') {
            p++;
        }
        if (*p == '\0' || *p == '\n') {
            return false;
        }
        char *end;
        if (field == 14 || field == 15) {
            unsigned long long v = strtoull(p, &end, 10);
            if (end == p) {
                return false;
            }
            *(field == 14 ? &utime : &stime) = v;
        } else if (field == 20) {
            nthreads = strtol(p, &end, 10);
            if (end == p || nthreads < 0) {
                return false;
            }
        } else {
            end = (char *)(uintptr_t)strchr(p, ' ');
            if (end == NULL) {
                return false;
            }
        }
        p = end;
    }
    *cpu_seconds = (double)(utime + stime) / (double)ticks_per_second;
    *threads = (uint32_t)nthreads;
    return true;
}

static bool fds_count(uint32_t *out)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) {
        return false;
    }
    int own = dirfd(d);
    uint32_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') {
            continue;
        }
        if (atoi(e->d_name) == own) {
            continue; /* the directory stream reading the list */
        }
        n++;
    }
    closedir(d);
    *out = n;
    return true;
}

int sw__process_sample(sw__process_sample_t *out)
{
    memset(out, 0, sizeof *out);
    char buf[1024];
    if (!file_read("/proc/self/stat", buf, sizeof buf) ||
        !sw__process_stat_parse(buf, sysconf(_SC_CLK_TCK), &out->cpu_seconds, &out->threads)) {
        memset(out, 0, sizeof *out);
        return SW_EIO;
    }
    unsigned long long size_pages = 0, rss_pages = 0;
    if (!file_read("/proc/self/statm", buf, sizeof buf) ||
        sscanf(buf, "%llu %llu", &size_pages, &rss_pages) != 2 || !fds_count(&out->open_fds)) {
        memset(out, 0, sizeof *out);
        return SW_EIO;
    }
    out->rss_bytes = (uint64_t)rss_pages * (uint64_t)sysconf(_SC_PAGESIZE);
    return 0;
}
