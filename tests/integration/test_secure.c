/*
 * test_secure.c - the agent in a process with elevated privileges (AT_SECURE). A privileged
 * copy of sw_secure_probe runs with environment variables that point at a file to create and
 * at a config file holding a marker: the agent must create no file and print nothing of that
 * file, say once why it stays off, and run with a configuration the program passes. Control
 * runs without the privilege bit show that the same environment does create the file and
 * print the content, so the assertions can fail.
 *
 * The privileged copy is, as root, setuid-root run as uid/gid 65534 (dropped with setpriv),
 * in a root-only directory; without root, setgid to a supplementary group of the user that is
 * not its primary group (the kernel sets AT_SECURE when the effective gid changes on exec).
 * When neither is possible, or under sanitizers (their runtimes refuse or change such
 * programs), the test says so on stderr, with the reason, and is skipped.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define HASH "SECRETHASHq7"

static char root_dir[64], bin_dir[64], out_dir[64];
static char secret_file[128], owned_file[128], setuid_bin[128], plain_bin[128];

/* How the privileged copy is made: none (skipped, why_skipped says why), setuid root (as
   root), or setgid to `privileged_group` (without root). */
static enum { PRIV_NONE, PRIV_SETUID_ROOT, PRIV_SETGID } priv;
static gid_t privileged_group;
static char why_skipped[256];

/* A supplementary group of this process other than its real gid, or (gid_t)-1. */
static gid_t other_group(void)
{
    gid_t groups[256];
    int n = getgroups(256, groups);
    for (int i = 0; i < n; i++) {
        if (groups[i] != getgid()) {
            return groups[i];
        }
    }
    return (gid_t)-1;
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
    int in = open(from, O_RDONLY);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0700);
    cr_assert(in >= 0 && out >= 0, "copy %s: %s", from, strerror(errno));
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0) {
        cr_assert_eq(write(out, buf, (size_t)n), n);
    }
    close(in);
    close(out);
    if (priv == PRIV_SETUID_ROOT) {
        cr_assert_eq(chown(to, 0, 0), 0);
    } else {
        cr_assert_eq(chown(to, (uid_t)-1, privileged_group), 0, "chown to group %u: %s",
                     (unsigned)privileged_group, strerror(errno));
    }
    cr_assert_eq(chmod(to, mode), 0); /* after chown, which clears the setuid bit */
}

/* Chooses how to make the privileged copy; false (why_skipped set) when it cannot be made. */
static bool priv_choose(void)
{
    if (TEST_SANITIZED) {
        snprintf(why_skipped, sizeof why_skipped,
                 "a sanitizer runtime refuses or changes setuid and setgid programs");
        return false;
    }
    if (geteuid() == 0) {
        if (access("/usr/bin/setpriv", X_OK) != 0) {
            snprintf(why_skipped, sizeof why_skipped,
                     "running as root but /usr/bin/setpriv (util-linux) is missing to drop to "
                     "uid 65534");
            return false;
        }
        priv = PRIV_SETUID_ROOT;
        return true;
    }
    privileged_group = other_group();
    if (privileged_group == (gid_t)-1) {
        snprintf(why_skipped, sizeof why_skipped,
                 "not root (euid %u), and the user has no supplementary group besides gid %u: "
                 "neither a setuid-root nor a setgid copy of the probe can be made",
                 (unsigned)geteuid(), (unsigned)getgid());
        return false;
    }
    priv = PRIV_SETGID;
    return true;
}

static void setup(void)
{
    if (!priv_choose()) {
        return;
    }
    snprintf(root_dir, sizeof root_dir, "/tmp/sw-secure-root-XXXXXX");
    snprintf(bin_dir, sizeof bin_dir, "/tmp/sw-secure-bin-XXXXXX");
    snprintf(out_dir, sizeof out_dir, "/tmp/sw-secure-out-XXXXXX");
    cr_assert(mkdtemp(root_dir) && mkdtemp(bin_dir) && mkdtemp(out_dir));
    cr_assert_eq(chmod(root_dir, 0700), 0);
    cr_assert_eq(chmod(bin_dir, 0755), 0);
    snprintf(secret_file, sizeof secret_file, "%s/shadow", root_dir);
    snprintf(owned_file, sizeof owned_file, "%s/owned.bin", root_dir);
    int fd = open(secret_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    const char line[] = "SW_AGENT_SAMPLE=" HASH "\n"; /* echoed in the error when read */
    cr_assert_eq(write(fd, line, sizeof line - 1), (ssize_t)sizeof line - 1);
    close(fd);
    snprintf(setuid_bin, sizeof setuid_bin, "%s/probe-setuid", bin_dir);
    snprintf(plain_bin, sizeof plain_bin, "%s/probe-plain", bin_dir);
    copy_file(SW_SECURE_PROBE, setuid_bin, priv == PRIV_SETUID_ROOT ? 04755 : 02755);
    copy_file(SW_SECURE_PROBE, plain_bin, 0755);
    struct statvfs vfs;
    if (statvfs(bin_dir, &vfs) == 0 && (vfs.f_flag & ST_NOSUID) != 0) {
        snprintf(why_skipped, sizeof why_skipped,
                 "/tmp is mounted nosuid: a setuid or setgid copy of the probe would not "
                 "raise privileges");
        priv = PRIV_NONE;
    }
}

static void teardown(void)
{
    char cmd[256];
    if (root_dir[0] != '\0') {
        snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s'", root_dir, bin_dir, out_dir);
        int rc = system(cmd); /* best effort: a leftover temp dir is harmless */
        (void)rc;
    }
}

TestSuite(secure, .init = setup, .fini = teardown, .timeout = 60);

typedef struct run {
    int status;
    char out[4096], err[8192];
} run_t;

static void slurp(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return;
    }
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Runs bin `mode` with `env` (NULL-terminated "K=V" list), as uid 65534 when drop; bounded. */
static void run(run_t *r, const char *bin, const char *mode, bool drop, char *const env[])
{
    char out[128], err[128];
    snprintf(out, sizeof out, "%s/stdout", out_dir);
    snprintf(err, sizeof err, "%s/stderr", out_dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, STDOUT_FILENO);
        dup2(e, STDERR_FILENO);
        if (drop) {
            char *argv[] = {"setpriv",
                            "--reuid=65534",
                            "--regid=65534",
                            "--clear-groups",
                            (char *)bin,
                            (char *)mode,
                            NULL};
            execve("/usr/bin/setpriv", argv, env);
        } else {
            char *argv[] = {(char *)bin, (char *)mode, NULL};
            execve(bin, argv, env);
        }
        _exit(127);
    }
    double end = now_s() + 30;
    pid_t w;
    while ((w = waitpid(pid, &r->status, WNOHANG)) == 0 && now_s() < end) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL); /* polling interval of a bounded wait */
    }
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &r->status, 0);
        cr_assert_fail("%s %s did not exit within 30 s", bin, mode);
    }
    slurp(out, r->out, sizeof r->out);
    slurp(err, r->err, sizeof r->err);
}

static bool skipped(void)
{
    if (priv != PRIV_NONE) {
        fprintf(stderr, "test_secure: runs with a %s copy of the probe\n",
                priv == PRIV_SETUID_ROOT ? "setuid-root" : "setgid");
        return false;
    }
    fprintf(stderr, "test_secure: SKIPPED, the AT_SECURE behaviour is not tested: %s\n",
            why_skipped);
    cr_skip_test("%s", why_skipped);
    return true;
}

Test(secure, setuid_program_takes_nothing_from_the_environment)
{
    if (skipped()) {
        return;
    }
    char config_env[160], path_env[160];
    snprintf(config_env, sizeof config_env, "SW_AGENT_CONFIG=%s", secret_file);
    snprintf(path_env, sizeof path_env, "SW_REPORTER_FILE_PATH=%s", owned_file);
    run_t r;

    /* Controls, without the setuid bit: the environment is honoured. */
    char *only_path[] = {path_env, NULL};
    run(&r, plain_bin, "env", false, only_path);
    cr_assert_eq(access(owned_file, F_OK), 0, "control: the file was not created (%s)", r.err);
    unlink(owned_file);
    char *only_config[] = {config_env, NULL};
    run(&r, plain_bin, "env", false, only_config);
    cr_assert_not_null(strstr(r.err, HASH), "control: the content was not printed: %s", r.err);

    /* The privileged copy as an unprivileged user. */
    char *both[] = {config_env, path_env, NULL};
    bool drop = priv == PRIV_SETUID_ROOT; /* setgid: we are the unprivileged user already */
    run(&r, setuid_bin, "env", drop, both);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "status %d, stderr: %s", r.status,
              r.err);
    cr_expect_str_eq(r.out, "sw_init=SW_ECONFIG\n", "the agent stays off");
    cr_expect_neq(access(owned_file, F_OK), 0, "the file the environment names was created");
    cr_expect_null(strstr(r.out, HASH), "the config file's content on stdout: %s", r.out);
    cr_expect_null(strstr(r.err, HASH), "the config file's content on stderr: %s", r.err);
    cr_expect_not_null(strstr(r.err, "AT_SECURE"), "it says why: %s", r.err);
    const char *first = strstr(r.err, "AT_SECURE");
    cr_expect_null(first ? strstr(first + 1, "AT_SECURE") : NULL, "said once: %s", r.err);

    /* A configuration the program passes is used, and that is said too. */
    run(&r, setuid_bin, "pass", drop, both);
    cr_expect_str_eq(r.out, "sw_init=SW_OK\n", "stderr: %s", r.err);
    cr_expect_not_null(strstr(r.err, "uses only the configuration the program passed"), "%s",
                       r.err);
    cr_expect_neq(access(owned_file, F_OK), 0);
}
