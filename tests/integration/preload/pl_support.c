/*
 * pl_support.c - see pl_support.h.
 */
#include "pl_support.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* The directories this test process created, removed at its exit (test thread only). */
static char made[16][256];
static int made_count;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void tmpdirs_remove(void)
{
    for (int i = 0; i < made_count; i++) {
        nftw(made[i], remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    }
}

void pl_tmpdir(char *out, size_t len, const char *tag)
{
    snprintf(out, len, "/tmp/sw-preload-%s-XXXXXX", tag);
    if (mkdtemp(out) == NULL) {
        out[0] = '\0';
        return;
    }
    if (made_count == 0) {
        atexit(tmpdirs_remove);
    }
    if (made_count < 16) {
        snprintf(made[made_count++], sizeof made[0], "%s", out);
    }
}

pid_t pl_spawn(char *const argv[], char *const env[], int stdin_fd, const char *out_path,
               const char *err_path)
{
    size_t n_env = 0, n_extra = 0;
    while (environ[n_env] != NULL) {
        n_env++;
    }
    while (env != NULL && env[n_extra] != NULL) {
        n_extra++;
    }
    char **all = calloc(n_env + n_extra + 1, sizeof *all);
    if (all == NULL) {
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++) {
        bool overridden = false;
        for (size_t j = 0; j < n_extra; j++) {
            size_t klen = strcspn(env[j], "=");
            if (strncmp(environ[i], env[j], klen + 1) == 0) {
                overridden = true;
            }
        }
        if (!overridden) {
            all[k++] = environ[i];
        }
    }
    for (size_t j = 0; j < n_extra; j++) {
        all[k++] = env[j];
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (stdin_fd >= 0) {
        posix_spawn_file_actions_adddup2(&fa, stdin_fd, 0);
    } else {
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    }
    posix_spawn_file_actions_addopen(&fa, 1, out_path ? out_path : "/dev/null",
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path ? err_path : "/dev/null",
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, all);
    posix_spawn_file_actions_destroy(&fa);
    free(all);
    return rc == 0 ? pid : -1;
}

static void ms_sleep(void)
{
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
}

int pl_wait(pid_t pid, int ms)
{
    for (int waited = 0; waited <= ms; waited++) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            if (WIFEXITED(st)) {
                return WEXITSTATUS(st);
            }
            fprintf(stderr, "pl_wait: process %d died of signal %d\n", (int)pid, WTERMSIG(st));
            return -1;
        }
        if (r < 0) {
            return -1;
        }
        ms_sleep(); /* polling a child process with a deadline */
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fprintf(stderr, "pl_wait: process %d still running after %d ms: killed\n", (int)pid, ms);
    return -1;
}

int pl_run(char *const argv[], char *const env[], const char *out_path, const char *err_path,
           int ms)
{
    pid_t pid = pl_spawn(argv, env, -1, out_path, err_path);
    return pid > 0 ? pl_wait(pid, ms) : -1;
}

bool pl_wait_file(const char *path, int ms)
{
    for (int waited = 0; waited <= ms; waited++) {
        struct stat st;
        if (stat(path, &st) == 0 && st.st_size > 0) {
            return true;
        }
        ms_sleep();
    }
    return false;
}

char *pl_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *grown = realloc(buf, cap * 2 + 1);
            if (grown == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf != NULL) {
        buf[n] = '\0';
    }
    if (len != NULL) {
        *len = n;
    }
    return buf;
}

int pl_segments_read(pl_segments_t *s, const char *path)
{
    size_t len;
    uint8_t *buf = (uint8_t *)pl_slurp(path, &len);
    if (buf == NULL) {
        return 0;
    }
    int count = 0;
    size_t at = 0;
    while (at < len) {
        uint64_t rec = 0;
        int shift = 0;
        while (at < len && shift < 64) {
            uint8_t b = buf[at++];
            rec |= (uint64_t)(b & 0x7f) << shift;
            shift += 7;
            if ((b & 0x80) == 0) {
                break;
            }
        }
        if (rec > len - at) {
            goto corrupt;
        }
        pl_segment_t *seg = skywalking__v3__segment_object__unpack(NULL, rec, buf + at);
        if (seg == NULL) {
            goto corrupt;
        }
        pl_segment_t **grown = realloc(s->segs, (s->n + 1) * sizeof *grown);
        if (grown == NULL) {
            skywalking__v3__segment_object__free_unpacked(seg, NULL);
            goto corrupt;
        }
        s->segs = grown;
        s->segs[s->n++] = seg;
        at += rec;
        count++;
    }
    free(buf);
    return count;
corrupt:
    free(buf);
    return -1;
}

void pl_segments_free(pl_segments_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        skywalking__v3__segment_object__free_unpacked(s->segs[i], NULL);
    }
    free(s->segs);
    s->segs = NULL;
    s->n = 0;
}

const char *pl_span_tag(const pl_span_t *sp, const char *key)
{
    for (size_t i = 0; i < sp->n_tags; i++) {
        if (strcmp(sp->tags[i]->key, key) == 0) {
            return sp->tags[i]->value;
        }
    }
    return NULL;
}

const pl_segment_t *pl_segment_find(const pl_segments_t *s, const char *id)
{
    for (size_t i = 0; i < s->n; i++) {
        if (strcmp(s->segs[i]->tracesegmentid, id) == 0) {
            return s->segs[i];
        }
    }
    return NULL;
}

void pl_db_servers_env(void)
{
    const char *state = getenv("SW_TEST_DB_STATE");
    cr_assert_not_null(state, "SW_TEST_DB_STATE is not set: run through ctest (fixture db)");
    char path[4200];
    snprintf(path, sizeof path, "%s/env", state);
    char *text = pl_slurp(path, NULL);
    cr_assert_not_null(text, "%s is missing: the db fixture did not start", path);
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        if (eq != NULL) {
            *eq = '\0';
            setenv(line, eq + 1, 1);
        }
    }
    free(text);
}
