/*
 * test_file_reporter_shared.c - the file reporter (agent/src/report/file_reporter.c) in a
 * shared directory and under a program that misuses descriptors: links and other users' files
 * are refused, new files are private, a forked sibling's failed write never cuts another
 * writer's records, a descriptor the program closed and reused is never written, and the empty
 * file cleanup finds the file it created after a chdir. The reporter is driven directly
 * (sw__file_reporter_create) so that each case is exact and fast.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "report/reporter.h"
#include "test_agent_support.h"

/* A packed SegmentObject whose segment id is `id` (buf must hold 256 bytes). */
static sw__report_record_t record_make(const char *id, uint8_t *buf)
{
    Skywalking__V3__SegmentObject so = SKYWALKING__V3__SEGMENT_OBJECT__INIT;
    so.traceid = "trace";
    so.tracesegmentid = (char *)id;
    so.service = "svc";
    so.serviceinstance = "inst";
    cr_assert_leq(skywalking__v3__segment_object__get_packed_size(&so), 256);
    size_t len = skywalking__v3__segment_object__pack(&so, buf);
    return (sw__report_record_t){.segment_id = id, .data = buf, .len = len};
}

static void report_one(sw__reporter_t *r, const char *id)
{
    uint8_t buf[256];
    sw__report_record_t rec = record_make(id, buf);
    r->report(r, &rec, 1);
}

static sw__reporter_t *reporter_new(const char *path, sw__report_counters_t *counters)
{
    sw__reporter_t *r = NULL;
    char err[512] = "";
    int rc = sw__file_reporter_create(path, counters, &r, err, sizeof err);
    cr_assert_eq(rc, 0, "create %s: %s (%s)", path, sw_strerror(rc), err);
    return r;
}

static uint64_t load(_Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_acquire);
}

static off_t size_of(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "stat %s", path);
    return st.st_size;
}

/* The directory of agent_test_path()'s file (static storage). */
static const char *dir_of(const char *path)
{
    static char dir[256];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    return dir;
}

/* Expects the reporter refused for path with a message naming the setting and `why`; if it
   was accepted, writes one record through it (which the caller then finds). */
static void expect_refused(const char *path, const char *why)
{
    sw__report_counters_t c = {0};
    sw__reporter_t *r = NULL;
    char err[512] = "";
    int rc = sw__file_reporter_create(path, &c, &r, err, sizeof err);
    if (rc == 0) {
        report_one(r, "accepted");
        r->close(r);
    }
    cr_expect_eq(rc, SW_ECONFIG, "%s was accepted (%s)", path, why);
    cr_expect(strstr(err, "SW_REPORTER_FILE_PATH") != NULL && strstr(err, why) != NULL,
              "'%s' should name SW_REPORTER_FILE_PATH and say '%s'", err, why);
}

Test(file_reporter_shared, a_symbolic_link_is_refused)
{
    const char *path = agent_test_path();
    char target[300];
    snprintf(target, sizeof target, "%s/target", dir_of(path));
    int fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(symlink(target, path), 0);
    expect_refused(path, "symbolic link");
    cr_expect_eq(size_of(target), 0, "the link's target was written");
}

Test(file_reporter_shared, another_users_file_is_refused)
{
    if (geteuid() != 0) {
        cr_skip("making a file that belongs to another user needs root (euid %u)",
                (unsigned)geteuid());
    }
    const char *path = agent_test_path();
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(chown(path, 65534, 65534), 0);
    expect_refused(path, "belongs to user 65534");
    cr_expect_eq(size_of(path), 0, "another user's file was written");
}

Test(file_reporter_shared, a_new_file_is_private_and_dev_null_still_works)
{
    const char *path = agent_test_path();
    mode_t old = umask(022);
    sw__report_counters_t c = {0};
    sw__reporter_t *r = reporter_new(path, &c);
    umask(old);
    report_one(r, "one");
    r->close(r);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600, "mode %o", (unsigned)(st.st_mode & 0777));
    cr_expect_eq(load(&c.reported), 1);
    sw__report_counters_t n = {0};
    r = reporter_new("/dev/null", &n); /* a device owned by root is not a planted file */
    report_one(r, "null");
    r->close(r);
    cr_expect_eq(load(&n.reported), 1);
}

static void said_nothing(sw_log_level_t level, const char *message, void *opaque)
{
    (void)level, (void)message, (void)opaque;
}

#define CHILD_BATCHES 20000
#define DEADLINE_MS   120000

static uint64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The forked child: its own reporter on the same file (as sw_init in a child makes), every
   write of which fails (RLIMIT_FSIZE of 1 byte) and is cut back. Exit 0: all failed. */
static void child_run(const char *path)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {1, 1};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) {
        _exit(2);
    }
    sw__report_counters_t c = {0};
    sw__reporter_t *r = NULL;
    char err[512];
    if (sw__file_reporter_create(path, &c, &r, err, sizeof err) != 0) {
        _exit(3);
    }
    for (int i = 0; i < CHILD_BATCHES; i++) {
        report_one(r, "child");
    }
    r->close(r);
    _exit(load(&c.failed) == CHILD_BATCHES && load(&c.reported) == 0 ? 0 : 4);
}

Test(file_reporter_shared, a_forked_childs_failed_writes_never_cut_its_siblings_records,
     .timeout = 300)
{
    const char *path = agent_test_path();
    sw_set_log_handler(said_nothing, NULL); /* the child's 20000 failures */
    sw__report_counters_t c = {0};
    sw__reporter_t *r = reporter_new(path, &c);
    report_one(r, "parent-first");
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        child_run(path);
    }
    /* The parent writes while the child's writes fail and are cut back. */
    uint64_t deadline = ms_now() + DEADLINE_MS;
    int status = -1;
    char id[32];
    for (unsigned i = 0;; i++) {
        snprintf(id, sizeof id, "parent-%u", i);
        report_one(r, id);
        if (i % 64 == 0 && waitpid(pid, &status, WNOHANG) == pid) {
            break;
        }
        cr_assert_lt(ms_now(), deadline, "the child did not finish %d batches in %d ms",
                     CHILD_BATCHES, DEADLINE_MS);
    }
    r->close(r);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the child's writes did not all fail as arranged (status %d)", status);
    cr_expect_eq(load(&c.failed), 0);
    decoded_segments_t d = agent_test_read(path); /* fails the test on a torn record */
    cr_expect_eq(d.count, load(&c.reported),
                 "the file holds %zu records, the parent wrote %llu: the child cut its sibling's",
                 d.count, (unsigned long long)load(&c.reported));
    agent_test_free(&d);
}

/* The descriptor of this process open on `path`, or -1. */
static int fd_of(const char *path)
{
    DIR *d = opendir("/proc/self/fd");
    cr_assert_not_null(d);
    int found = -1;
    for (struct dirent *e; (e = readdir(d)) != NULL && found < 0;) {
        char link[300], target[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 0) {
            target[n] = '\0';
            if (strcmp(target, path) == 0) {
                found = atoi(e->d_name);
            }
        }
    }
    closedir(d);
    return found;
}

static char said[8192];

static void said_capture(sw_log_level_t level, const char *message, void *opaque)
{
    (void)level, (void)opaque;
    size_t used = strlen(said);
    snprintf(said + used, sizeof said - used, "%s\n", message);
}

static size_t said_count(const char *needle)
{
    size_t n = 0;
    for (const char *p = said; (p = strstr(p, needle)) != NULL; p++) {
        n++;
    }
    return n;
}

Test(file_reporter_shared, a_descriptor_the_program_closed_and_reused_is_never_written)
{
    said[0] = '\0';
    sw_set_log_handler(said_capture, NULL);
    const char *path = agent_test_path();
    sw__report_counters_t c = {0};
    sw__reporter_t *r = reporter_new(path, &c);
    report_one(r, "before");
    int fd = fd_of(path);
    cr_assert_geq(fd, 0, "the reporter's descriptor was not found");
    /* The program closes it and the number becomes one of its own files. */
    char victim[300];
    snprintf(victim, sizeof victim, "%s/program-file", dir_of(path));
    int v = open(victim, O_RDWR | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(v, 0);
    cr_assert_eq(dup2(v, fd), fd);
    close(v);
    report_one(r, "after-file");
    cr_expect_eq(size_of(victim), 0, "a batch went into the program's file");
    /* Then one of its sockets. */
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int reopened = fd_of(path);
    cr_assert_geq(reopened, 0, "the file was not reopened");
    cr_assert_eq(dup2(sv[0], reopened), reopened);
    close(sv[0]);
    report_one(r, "after-socket");
    char byte;
    cr_expect_eq(recv(sv[1], &byte, 1, MSG_DONTWAIT), -1, "a batch went into the program's socket");
    /* The path cannot be opened meanwhile (a directory stands there): counted as failed. */
    int again = fd_of(path);
    cr_assert_geq(again, 0);
    cr_assert_eq(dup2(fd, again), again); /* the program's file once more */
    cr_assert_eq(rename(path, victim), 0);
    cr_assert_eq(mkdir(path, 0700), 0);
    report_one(r, "no-file-1");
    report_one(r, "no-file-2");
    cr_expect_eq(load(&c.failed), 2);
    cr_assert_eq(rmdir(path), 0);
    report_one(r, "new-file");
    r->close(r);
    cr_expect_neq(fcntl(fd, F_GETFD), -1, "the reporter closed the program's descriptor");
    cr_expect_neq(fcntl(reopened, F_GETFD), -1, "the reporter closed the program's socket");
    cr_expect_eq(load(&c.reported), 4);
    decoded_segments_t d = agent_test_read(path);
    cr_expect_eq(d.count, 1, "the new file holds the last batch");
    agent_test_free(&d);
    d = agent_test_read(victim); /* the old file, renamed over the program's: 3 batches */
    cr_expect_eq(d.count, 3);
    agent_test_free(&d);
    cr_expect_eq(said_count("no longer refers to"), 1, "%s", said);
    cr_expect_eq(said_count("until it opens"), 1, "the failed reopen is said once: %s", said);
    close(sv[1]);
    sw_set_log_handler(NULL, NULL);
}

Test(file_reporter_shared, the_empty_file_cleanup_after_chdir_removes_only_its_own_file)
{
    char home[PATH_MAX];
    cr_assert_not_null(getcwd(home, sizeof home));
    const char *path = agent_test_path();
    const char *dir = dir_of(path);
    char other[300], bystander[320], own[320];
    snprintf(other, sizeof other, "%s/other", dir);
    cr_assert_eq(mkdir(other, 0700), 0);
    snprintf(bystander, sizeof bystander, "%s/out.bin", other);
    snprintf(own, sizeof own, "%s/out.bin", dir);
    int fd = open(bystander, O_WRONLY | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(chdir(dir), 0);
    sw__report_counters_t c = {0};
    sw__reporter_t *r = reporter_new("out.bin", &c);
    cr_assert_eq(chdir(other), 0);
    r->close(r);
    cr_expect(sw__file_reporter_remove_if_empty());
    cr_assert_eq(chdir(home), 0);
    struct stat st;
    cr_expect_eq(stat(bystander, &st), 0, "another file of the same name was removed");
    cr_expect_neq(stat(own, &st), 0, "the reporter's own empty file was left");
    /* A file that is not empty, or no longer the one created, stays. */
    r = reporter_new(own, &c);
    report_one(r, "kept");
    r->close(r);
    cr_expect(!sw__file_reporter_remove_if_empty());
    cr_expect_eq(stat(own, &st), 0);
}
