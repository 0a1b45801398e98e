/*
 * thread_stat.h - what the kernel counts for one named thread of this process (tests and
 * benchmarks read the agent's consumer thread, "sw-segment-c0", this way).
 */
#ifndef THREAD_STAT_H
#define THREAD_STAT_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/*
 * Finds the thread of this process whose name (/proc/self/task/<tid>/comm) is `comm` and reads
 * its CPU time in ns (schedstat's first field) into *cpu_ns and the times it blocked
 * (voluntary_ctxt_switches) into *blocks, either may be NULL. Returns false when there is no
 * such thread or its files cannot be read.
 */
static inline bool thread_stat_read(const char *comm, double *cpu_ns, long *blocks)
{
    DIR *d = opendir("/proc/self/task");
    if (d == NULL) {
        return false;
    }
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        char path[300], line[128] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL) {
            continue;
        }
        bool match = fgets(line, sizeof line, f) != NULL;
        fclose(f);
        line[strcspn(line, "\n")] = '\0';
        if (!match || strcmp(line, comm) != 0) {
            continue;
        }
        double cpu = 0;
        long n = -1;
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        if ((f = fopen(path, "r")) != NULL) {
            found = fscanf(f, "%lf", &cpu) == 1;
            fclose(f);
        }
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        if (found && (f = fopen(path, "r")) != NULL) {
            while (fgets(line, sizeof line, f) != NULL &&
                   sscanf(line, "voluntary_ctxt_switches: %ld", &n) != 1) {
            }
            fclose(f);
        }
        found = found && n >= 0;
        if (cpu_ns != NULL) {
            *cpu_ns = cpu;
        }
        if (blocks != NULL) {
            *blocks = n;
        }
    }
    closedir(d);
    return found;
}

#endif /* THREAD_STAT_H */
