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
 * Finds the thread of process `proc` ("self" or a pid in decimal) whose name
 * (/proc/<proc>/task/<tid>/comm) is `comm` and reads its CPU time in ns (schedstat's first field)
 * into *cpu_ns and the times it blocked (voluntary_ctxt_switches) into *blocks, either may be
 * NULL. Returns false when there is no such thread or its files cannot be read.
 */
static inline bool thread_stat_read_of(const char *proc, const char *comm, double *cpu_ns,
                                       long *blocks)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%s/task", proc);
    DIR *d = opendir(dir);
    if (d == NULL) {
        return false;
    }
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        char path[400], line[128] = "";
        snprintf(path, sizeof path, "%s/%s/comm", dir, e->d_name);
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
        snprintf(path, sizeof path, "%s/%s/schedstat", dir, e->d_name);
        if ((f = fopen(path, "r")) != NULL) {
            found = fscanf(f, "%lf", &cpu) == 1;
            fclose(f);
        }
        snprintf(path, sizeof path, "%s/%s/status", dir, e->d_name);
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

/* thread_stat_read_of for a thread of this process. */
static inline bool thread_stat_read(const char *comm, double *cpu_ns, long *blocks)
{
    return thread_stat_read_of("self", comm, cpu_ns, blocks);
}

#endif /* THREAD_STAT_H */
