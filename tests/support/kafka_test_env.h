/* Test-side access to the real Kafka broker that the tests start themselves
 * (tests/support/kafka/broker.sh, ctest fixture in tests/0_kafka_fixture.cmake).
 *
 * Three ways to get a broker:
 *   - the shared ctest fixture: register the test with sw_kafka_test(<test>) and call
 *     sw_test_kafka_fixture(); topics sw-test-6p (6 partitions), sw-test-1p (1),
 *     skywalking-segments (3) and skywalking-managements (1) exist;
 *   - a private cluster (1 or 3 nodes, e.g. for leader changes): sw_test_kafka_start(), then
 *     sw_test_kafka_kill_node() / sw_test_kafka_start_node() / sw_test_kafka_stop();
 *   - benchmarks and examples: sw_test_kafka_bootstrap_or_start() uses --bootstrap when given,
 *     the fixture under ctest, and starts a private node otherwise.
 * kcat reads back what was produced: sw_test_kafka_consume().
 *
 * Everything here blocks the calling thread (child processes are waited for) and is meant for
 * a test's main thread. Functions return 0 on success or -1 after printing why to stderr.
 * Header-only so that any test or benchmark can include it without another library. */
#ifndef SW_TEST_KAFKA_TEST_ENV_H
#define SW_TEST_KAFKA_TEST_ENV_H

#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* One cluster as the tests see it. `owned` clusters were started by this process and are
 * stopped by sw_test_kafka_stop(); the fixture's is not. */
typedef struct sw_test_kafka {
    char dir[512];
    char bootstrap[1024];
    int owned;
} sw_test_kafka_t;

/* Path of broker.sh: $SW_TEST_KAFKA_BROKER_SH (set by sw_kafka_test), else the path compiled
 * in by sw_kafka_test(), else NULL. */
static inline const char *sw_test_kafka_broker_sh(void)
{
    const char *p = getenv("SW_TEST_KAFKA_BROKER_SH");
    if (p && *p) {
        return p;
    }
#ifdef SW_TEST_KAFKA_BROKER_SH
    return SW_TEST_KAFKA_BROKER_SH;
#else
    return NULL;
#endif
}

/* Runs argv[0] (looked up in PATH) with argv, waits for it, and returns its exit status (0..255),
 * or -1 when it could not run or died of a signal. When out is not NULL the child's stdout is
 * captured into a malloc'd, NUL-terminated buffer (*out, owned by the caller, also on failure;
 * *out_len bytes without the NUL; may contain NUL bytes); otherwise stdout is inherited.
 * stderr is always inherited so that failures show in the test log. */
static inline int sw_test_kafka_exec(char *const argv[], char **out, size_t *out_len)
{
    int fds[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status = 0, rc;
    size_t len = 0, cap = 4096;
    char *buf = NULL;

    if (out) {
        *out = NULL;
        if (out_len) {
            *out_len = 0;
        }
        if (pipe(fds) != 0) {
            fprintf(stderr, "kafka_test_env: pipe: %s\n", strerror(errno));
            return -1;
        }
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", 0, 0);
    if (out) {
        posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
        posix_spawn_file_actions_addclose(&fa, fds[0]);
        posix_spawn_file_actions_addclose(&fa, fds[1]);
    }
    rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (out) {
        close(fds[1]);
    }
    if (rc != 0) {
        fprintf(stderr, "kafka_test_env: cannot run %s: %s\n", argv[0], strerror(rc));
        if (out) {
            close(fds[0]);
        }
        return -1;
    }
    if (out) {
        buf = malloc(cap);
        for (;;) {
            ssize_t n;
            if (buf && len + 1 >= cap) {
                char *bigger = realloc(buf, cap * 2);
                if (!bigger) {
                    free(buf);
                    buf = NULL;
                } else {
                    buf = bigger;
                    cap *= 2;
                }
            }
            if (!buf) { /* out of memory: drain the pipe so the child can finish */
                char sink[4096];
                n = read(fds[0], sink, sizeof sink);
            } else {
                n = read(fds[0], buf + len, cap - len - 1);
            }
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                break;
            }
            if (buf) {
                len += (size_t)n;
            }
        }
        close(fds[0]);
        if (buf) {
            buf[len] = '\0';
        }
        *out = buf;
        if (out_len) {
            *out_len = len;
        }
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "kafka_test_env: waitpid(%s): %s\n", argv[0], strerror(errno));
            return -1;
        }
    }
    if (!WIFEXITED(status)) {
        fprintf(stderr, "kafka_test_env: %s died of signal %d\n", argv[0],
                WIFSIGNALED(status) ? WTERMSIG(status) : -1);
        return -1;
    }
    if (out && !buf) {
        fprintf(stderr, "kafka_test_env: out of memory reading the output of %s\n", argv[0]);
        return -1;
    }
    return WEXITSTATUS(status);
}

/* Reads DIR/bootstrap into k->bootstrap (trailing whitespace removed). */
static inline int sw_test_kafka_read_bootstrap(sw_test_kafka_t *k)
{
    char path[600];
    FILE *f;
    size_t n;

    snprintf(path, sizeof path, "%s/bootstrap", k->dir);
    f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "kafka_test_env: cannot open %s: %s (is the broker started?)\n", path,
                strerror(errno));
        return -1;
    }
    n = fread(k->bootstrap, 1, sizeof k->bootstrap - 1, f);
    fclose(f);
    k->bootstrap[n] = '\0';
    while (n > 0 && (k->bootstrap[n - 1] == '\n' || k->bootstrap[n - 1] == ' ' ||
                     k->bootstrap[n - 1] == '\r')) {
        k->bootstrap[--n] = '\0';
    }
    if (n == 0) {
        fprintf(stderr, "kafka_test_env: %s is empty\n", path);
        return -1;
    }
    return 0;
}

/* Attaches to the ctest fixture's broker: the directory comes from $SW_TEST_KAFKA_DIR (set by
 * sw_kafka_test()). k->owned = 0: sw_test_kafka_stop() leaves it running. */
static inline int sw_test_kafka_fixture(sw_test_kafka_t *k)
{
    const char *dir = getenv("SW_TEST_KAFKA_DIR");

    memset(k, 0, sizeof *k);
    if (!dir || !*dir) {
        fprintf(stderr, "kafka_test_env: SW_TEST_KAFKA_DIR is not set: register the test with "
                        "sw_kafka_test() in its tests/<module>.cmake and run it through ctest\n");
        return -1;
    }
    snprintf(k->dir, sizeof k->dir, "%s", dir);
    return sw_test_kafka_read_bootstrap(k);
}

/* Runs `broker.sh <cmd> --dir <k->dir> [extra args...]` (NULL-terminated list of extra
 * arguments) and returns its exit status (0 = success). Blocks until it exits (start waits up
 * to 120 s for the cluster). */
static inline int sw_test_kafka_broker_run(const sw_test_kafka_t *k, const char *cmd, ...)
{
    const char *sh = sw_test_kafka_broker_sh();
    char *argv[48];
    int argc = 0;
    va_list ap;
    const char *a;

    if (!sh) {
        fprintf(stderr, "kafka_test_env: broker.sh unknown: set SW_TEST_KAFKA_BROKER_SH or "
                        "register the target with sw_kafka_test()\n");
        return -1;
    }
    argv[argc++] = (char *)sh;
    argv[argc++] = (char *)cmd;
    argv[argc++] = (char *)"--dir";
    argv[argc++] = (char *)k->dir;
    va_start(ap, cmd);
    while ((a = va_arg(ap, const char *)) != NULL && argc < 47) {
        argv[argc++] = (char *)a;
    }
    va_end(ap);
    argv[argc] = NULL;
    return sw_test_kafka_exec(argv, NULL, NULL);
}

/* Starts a private cluster of `nodes` (1 or 3) in `dir` (created; anything a previous run left
 * there is stopped first) with the topics in `topics`, a space-separated list of
 * name:partitions[:replication] (may be NULL). Fills k (owned = 1) on success. Blocks until
 * the brokers answer and every topic has leaders (bounded by broker.sh, 120 s). */
static inline int sw_test_kafka_start(sw_test_kafka_t *k, const char *dir, int nodes,
                                      const char *topics)
{
    char nodes_s[8], list[1024], *save = NULL, *tok;
    char *argv[40];
    int argc = 0, rc;
    const char *sh = sw_test_kafka_broker_sh();

    memset(k, 0, sizeof *k);
    if (!sh) {
        fprintf(stderr, "kafka_test_env: broker.sh unknown: set SW_TEST_KAFKA_BROKER_SH\n");
        return -1;
    }
    snprintf(k->dir, sizeof k->dir, "%s", dir);
    snprintf(nodes_s, sizeof nodes_s, "%d", nodes);
    snprintf(list, sizeof list, "%s", topics ? topics : "");
    argv[argc++] = (char *)sh;
    argv[argc++] = (char *)"start";
    argv[argc++] = (char *)"--dir";
    argv[argc++] = k->dir;
    argv[argc++] = (char *)"--nodes";
    argv[argc++] = nodes_s;
    for (tok = strtok_r(list, " ", &save); tok && argc < 36; tok = strtok_r(NULL, " ", &save)) {
        argv[argc++] = (char *)"--topic";
        argv[argc++] = tok;
    }
    argv[argc] = NULL;
    rc = sw_test_kafka_exec(argv, NULL, NULL);
    if (rc != 0) {
        fprintf(stderr, "kafka_test_env: starting a %d-node cluster in %s failed (exit %d)\n",
                nodes, dir, rc);
        return -1;
    }
    k->owned = 1;
    return sw_test_kafka_read_bootstrap(k);
}

/* Stops a cluster started by sw_test_kafka_start() (kills every JVM, removes the data, keeps
 * the logs). Does nothing for the fixture's broker. Safe to call twice. */
static inline int sw_test_kafka_stop(sw_test_kafka_t *k)
{
    int rc;
    if (!k->owned) {
        return 0;
    }
    rc = sw_test_kafka_broker_run(k, "stop", (const char *)NULL);
    k->owned = 0;
    return rc == 0 ? 0 : -1;
}

/* Kills node `node` (1-based) with SIGKILL (hard crash) or, when `graceful`, SIGTERM
 * (controlled shutdown); returns once the process is gone. */
static inline int sw_test_kafka_kill_node(const sw_test_kafka_t *k, int node, int graceful)
{
    char n[8];
    snprintf(n, sizeof n, "%d", node);
    return sw_test_kafka_broker_run(k, "kill-node", "--node", n, "--signal",
                                    graceful ? "TERM" : "KILL", (const char *)NULL) == 0
               ? 0
               : -1;
}

/* Restarts node `node` on its old port with its old data; returns once it serves metadata and
 * is back in the ISR of every partition (bounded, 120 s). */
static inline int sw_test_kafka_start_node(const sw_test_kafka_t *k, int node)
{
    char n[8];
    snprintf(n, sizeof n, "%d", node);
    return sw_test_kafka_broker_run(k, "start-node", "--node", n, (const char *)NULL) == 0 ? 0 : -1;
}

/* Creates topic `name` with `partitions` partitions on k's cluster (if it does not exist) and
 * waits until every partition has a leader. Costs a JVM start (~1-2 s). */
static inline int sw_test_kafka_create_topic(const sw_test_kafka_t *k, const char *name,
                                             int partitions)
{
    char spec[300];
    snprintf(spec, sizeof spec, "%s:%d", name, partitions);
    return sw_test_kafka_broker_run(k, "create-topic", "--topic", spec, (const char *)NULL) == 0
               ? 0
               : -1;
}

/* For benchmarks and examples: uses `given` (their --bootstrap argument) when not NULL
 * (k->owned = 0); else the ctest fixture's broker when $SW_TEST_KAFKA_DIR is set (a smoke run
 * registered with sw_kafka_test); else starts a private one-node cluster in `dir` with
 * `topics` (see sw_test_kafka_start; stop it with sw_test_kafka_stop, a no-op in the other
 * two cases). */
static inline int sw_test_kafka_bootstrap_or_start(sw_test_kafka_t *k, const char *given,
                                                   const char *dir, const char *topics)
{
    const char *fixture = getenv("SW_TEST_KAFKA_DIR");

    if (given && *given) {
        memset(k, 0, sizeof *k);
        if (strlen(given) >= sizeof k->bootstrap) {
            fprintf(stderr, "kafka_test_env: --bootstrap value too long\n");
            return -1;
        }
        snprintf(k->bootstrap, sizeof k->bootstrap, "%s", given);
        return 0;
    }
    if (fixture && *fixture) {
        return sw_test_kafka_fixture(k);
    }
    return sw_test_kafka_start(k, dir, 1, topics);
}

/* Reads records back with kcat: `count` records of `topic` partition `partition` starting at
 * `offset` (-1 = from the beginning), printed with kcat's -f `format` (e.g. "%k|%s\n"; see
 * kcat -h; -D/-K are not used). kcat stops at the end of the partition, after `count` records
 * (count <= 0: no limit), or after 60 s. Returns kcat's output in a malloc'd NUL-terminated
 * buffer (caller frees; *len bytes, may contain NULs) or NULL on failure. props: NULL or a
 * NULL-terminated list of up to 16 librdkafka "name=value" settings passed as -X (e.g.
 * "security.protocol=SASL_SSL"); sw_test_kafka_consume() passes none. */
static inline char *sw_test_kafka_consume_x(const char *bootstrap, const char *topic, int partition,
                                            int64_t offset, int count, const char *format,
                                            const char *const *props, size_t *len)
{
    char part[16], off[32], cnt[16], *out = NULL;
    char *argv[24 + 2 * 16];
    int argc = 0, rc;
    size_t n = 0;

    snprintf(part, sizeof part, "%d", partition);
    if (offset < 0) {
        snprintf(off, sizeof off, "beginning");
    } else {
        snprintf(off, sizeof off, "%lld", (long long)offset);
    }
    argv[argc++] = (char *)"timeout";
    argv[argc++] = (char *)"60";
    argv[argc++] = (char *)"kcat";
    argv[argc++] = (char *)"-C";
    argv[argc++] = (char *)"-q";
    argv[argc++] = (char *)"-e";
    argv[argc++] = (char *)"-b";
    argv[argc++] = (char *)bootstrap;
    argv[argc++] = (char *)"-t";
    argv[argc++] = (char *)topic;
    argv[argc++] = (char *)"-p";
    argv[argc++] = part;
    argv[argc++] = (char *)"-o";
    argv[argc++] = off;
    if (count > 0) {
        snprintf(cnt, sizeof cnt, "%d", count);
        argv[argc++] = (char *)"-c";
        argv[argc++] = cnt;
    }
    argv[argc++] = (char *)"-f";
    argv[argc++] = (char *)format;
    for (int i = 0; props && props[i] && i < 16; i++) {
        argv[argc++] = (char *)"-X";
        argv[argc++] = (char *)props[i];
    }
    argv[argc] = NULL;
    rc = sw_test_kafka_exec(argv, &out, &n);
    if (rc != 0) {
        fprintf(stderr, "kafka_test_env: kcat -C -t %s -p %d failed (exit %d)\n", topic, partition,
                rc);
        free(out);
        return NULL;
    }
    if (len) {
        *len = n;
    }
    return out;
}

static inline char *sw_test_kafka_consume(const char *bootstrap, const char *topic, int partition,
                                          int64_t offset, int count, const char *format,
                                          size_t *len)
{
    return sw_test_kafka_consume_x(bootstrap, topic, partition, offset, count, format, NULL, len);
}

#endif /* SW_TEST_KAFKA_TEST_ENV_H */
