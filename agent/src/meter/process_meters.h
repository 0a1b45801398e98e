/*
 * process_meters.h - the process meters, read from /proc/self (internal): CPU time, resident
 * memory, threads and open file descriptors. Linux only (procfs); any thread.
 */
#ifndef SW_METER_PROCESS_METERS_H
#define SW_METER_PROCESS_METERS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sw__process_sample {
    double cpu_seconds; /* user + system time of all threads (/proc/self/stat utime + stime) */
    uint64_t rss_bytes; /* resident set (/proc/self/statm, pages x page size) */
    uint32_t threads;   /* /proc/self/stat num_threads */
    uint32_t open_fds;  /* entries of /proc/self/fd, without the one reading it */
} sw__process_sample_t;

/* Reads the sample. Returns 0, or SW_EIO when procfs is missing or unreadable (then *out is
   zeroed). Opens three files and one directory; allocates nothing of its own. */
int sw__process_sample(sw__process_sample_t *out);

/* Parses the text of /proc/<pid>/stat: CPU seconds (given the clock tick rate) and threads.
   Returns false on malformed text. Pure; exposed for the unit tests (a command name with
   spaces and parentheses). */
bool sw__process_stat_parse(const char *text, long ticks_per_second, double *cpu_seconds,
                            uint32_t *threads);

#endif /* SW_METER_PROCESS_METERS_H */
