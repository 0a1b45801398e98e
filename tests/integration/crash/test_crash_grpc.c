/*
 * test_crash_grpc.c - a crash spool shipped through the gRPC reporter: the next start of the
 * service sends the crashed request's segment to the project's gRPC test collector
 * (tests/support/grpc_collector.py) together with a Crash event (type Error) naming the
 * signal, the crashed instance and the time.
 */
#include <dirent.h>
#include <sys/stat.h>

#include "grpc_collector_proc.h"

#ifndef CRASH_CHILD
#error "CRASH_CHILD (path of crash_child) must be defined by the build"
#endif

extern char **environ;

static char dir[64], crash_dir[96], out[96], child_log[96];

/* crash_child MODE with the file reporter (crash) or the collector (ship); bounded wait. */
static int child(const char *mode, bool grpc)
{
    char *envp[256];
    int n = 0;
    for (char **e = environ; *e != NULL && n < 200; e++) {
        if (strncmp(*e, "SW_", 3) != 0) {
            envp[n++] = *e;
        }
    }
    static char set[8][256];
    snprintf(set[0], sizeof set[0], "SW_AGENT_CRASH_DIR=%s", crash_dir);
    snprintf(set[1], sizeof set[1], "SW_REPORTER_FILE_PATH=%s", out);
    snprintf(set[2], sizeof set[2], "SW_AGENT_NAME=crashsvc");
    snprintf(set[3], sizeof set[3], "SW_AGENT_INSTANCE_NAME=inst-%s", mode);
    snprintf(set[4], sizeof set[4], "SW_METER_REPORT_INTERVAL=0");
    snprintf(set[5], sizeof set[5], "SW_AGENT_CDS_INTERVAL=0");
    snprintf(set[6], sizeof set[6], "SW_AGENT_COLLECTOR_BACKEND_SERVICES=127.0.0.1:%d",
             the_collector.port);
    snprintf(set[7], sizeof set[7], "SW_REPORTER=grpc");
    for (int i = 0; i < (grpc ? 8 : 6); i++) {
        envp[n++] = set[i];
    }
    envp[n] = NULL;
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(child_log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        char *argv[] = {(char *)CRASH_CHILD, (char *)mode, NULL};
        execve(CRASH_CHILD, argv, envp);
        _exit(127);
    }
    uint64_t deadline = now_ms() + WAIT_MS;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            cr_assert_fail("crash_child %s did not end within %d ms", mode, WAIT_MS);
        }
        poll_pause();
    }
    return status;
}

/* How many times `needle` occurs in `hay`. */
static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

static void fini(void)
{
    collector_fini();
    DIR *d = opendir(crash_dir);
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", crash_dir, e->d_name);
        unlink(p);
    }
    if (d != NULL) {
        closedir(d);
    }
    rmdir(crash_dir);
    unlink(out);
    unlink(child_log);
    rmdir(dir);
}

TestSuite(crash_grpc, .fini = fini, .timeout = 300);

Test(crash_grpc, segments_and_the_crash_event)
{
    snprintf(dir, sizeof dir, "/tmp/sw-crash-grpc-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(crash_dir, sizeof crash_dir, "%s/spools", dir);
    snprintf(out, sizeof out, "%s/segments.bin", dir);
    snprintf(child_log, sizeof child_log, "%s/child.txt", dir);
    collector_start(&the_collector, 0, NULL, NULL);

    int st = child("null", false);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status 0x%x", st);
    st = child("ship", true);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ship status 0x%x", st);

    /* sw_shutdown in the ship child drained both pipelines: the records are in. */
    FILE *f = fopen(the_collector.out, "r");
    cr_assert_not_null(f);
    char line[65536];
    bool segment = false, event = false;
    while (fgets(line, sizeof line, f) != NULL) {
        char v[256];
        if (json_string(line, "kind", v, sizeof v) && strcmp(v, "segment") == 0 &&
            strstr(line, "\"GET /crash\"") != NULL) {
            cr_assert(json_string(line, "serviceInstance", v, sizeof v));
            cr_assert_str_eq(v, "inst-null", "the crashed instance: %s", line);
            cr_assert_eq(count(line, "\"error\": true"), 2, "both spans are errors: %s", line);
            cr_assert_not_null(strstr(line, "\"error.kind\": \"SIGSEGV\""), "%s", line);
            cr_assert_not_null(strstr(line, "\"stack\": \"#0 crash_now (crash_child.c:"), "%s",
                               line);
            segment = true;
        }
        if (json_string(line, "kind", v, sizeof v) && strcmp(v, "event") == 0 &&
            json_string(line, "name", v, sizeof v) && strcmp(v, "Crash") == 0) {
            cr_assert(json_string(line, "type", v, sizeof v));
            cr_assert_str_eq(v, "Error");
            cr_assert(json_string(line, "serviceInstance", v, sizeof v));
            cr_assert_str_eq(v, "inst-null");
            cr_assert(json_string(line, "service", v, sizeof v));
            cr_assert_str_eq(v, "crashsvc");
            cr_assert_not_null(strstr(line, "\"signal\": \"SIGSEGV\""), "%s", line);
            cr_assert_not_null(strstr(line, "\"startTime\": 1"), "%s", line);
            event = true;
        }
    }
    fclose(f);
    cr_assert(segment, "no crashed segment reached the collector");
    cr_assert(event, "no Crash event reached the collector");
}
