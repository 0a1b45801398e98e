/*
 * pl_support.h - helpers of the LD_PRELOAD and -finstrument-functions tests: run a real
 * program with extra environment and a bounded wait, and read the segment files it wrote.
 * Test thread only.
 */
#ifndef PL_SUPPORT_H
#define PL_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "tracing.pb-c.h"

typedef Skywalking__V3__SegmentObject pl_segment_t;
typedef Skywalking__V3__SpanObject pl_span_t;

typedef struct pl_segments {
    pl_segment_t **segs;
    size_t n;
} pl_segments_t;

/* Creates a fresh empty directory for one test's files and writes its path to out ("" on
   error); it is removed with its contents when the test process exits. */
void pl_tmpdir(char *out, size_t len, const char *tag);

/*
 * Starts argv[0] (searched in PATH) with the current environment plus `env` ("K=V", NULL
 * terminated), stdin from `stdin_fd` (-1: /dev/null), stdout/stderr to the given files (NULL:
 * /dev/null). Returns the pid (> 0) or -1.
 */
pid_t pl_spawn(char *const argv[], char *const env[], int stdin_fd, const char *out_path,
               const char *err_path);

/* Waits at most `ms` for pid; kills it when late. Returns its exit code, or -1 (killed, signal,
   timeout: a message says which on stderr). */
int pl_wait(pid_t pid, int ms);

/* pl_spawn + pl_wait. */
int pl_run(char *const argv[], char *const env[], const char *out_path, const char *err_path,
           int ms);

/* Waits at most `ms` for `path` to exist and be non-empty. */
bool pl_wait_file(const char *path, int ms);

/* Reads a whole file into a NUL-terminated malloc'd buffer (NULL if missing); *len its size. */
char *pl_slurp(const char *path, size_t *len);

/* Appends every segment in the file at `path` (length-delimited SegmentObjects). Returns the
   number read, or -1 for a corrupt file; a missing file reads as 0. */
int pl_segments_read(pl_segments_t *s, const char *path);

void pl_segments_free(pl_segments_t *s);

/* The value of tag `key` on the span, or NULL. */
const char *pl_span_tag(const pl_span_t *sp, const char *key);

/* The segment whose id is `id`, or NULL. */
const pl_segment_t *pl_segment_find(const pl_segments_t *s, const char *id);

/* Exports the addresses of the db fixture's servers (tests/db.cmake: SW_TEST_REDIS_PORT, ...),
   read from $SW_TEST_DB_STATE/env, to this process's environment and so to the programs it
   starts. Fails the test when the fixture did not run. */
void pl_db_servers_env(void);

#endif /* PL_SUPPORT_H */
