/*
 * crash_child.c - a traced program that crashes on purpose inside a request, for test_crash
 * (tests/integration/crash/test_crash.c), which runs it as a child process and checks how it
 * died and what the crash recorder spooled and later shipped.
 *
 *   crash_child MODE
 *
 * The agent is configured through the environment the parent sets (SW_AGENT_NAME,
 * SW_REPORTER_FILE_PATH, SW_AGENT_CRASH_DIR, ...). Modes:
 *   null      an entry span and a local span are open; a NULL pointer is written
 *   abort     same, abort()
 *   agent     same, inside the agent: a span begun with a wild name pointer
 *   raise     same, raise(SIGSEGV) (a signal sent, not a fault: exits 42 if it survives)
 *   overflow  same, unbounded recursion (the handler runs on the agent's alternate stack)
 *   malloc    same, the test allocator below faults while it holds its lock (a handler that
 *             called malloc would spin on that lock forever: the parent's bounded wait fails)
 *   busy      a second thread runs span after span while the main thread crashes in its span
 *   nospan    the main thread has a span open; a second thread with no span crashes
 *   handler   the program's own SIGSEGV handler (installed before sw_init) must still run
 *   ship      starts the agent (which ships the spools), waits until the reporter took the
 *             shipped segments, prints "shipped=N dropped=M spools=K", stops the agent
 * Core dumps are switched off (RLIMIT_CORE 0) so that the tests leave no core files, unless
 * CRASH_CORE_LIMIT gives a limit in bytes.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "crash/crash.h"
#include "skywalking.h"

/* ---- the test allocator: malloc through a lock that a fault can be injected under ---- */
extern void *__libc_malloc(size_t n);
static atomic_flag heap_lock = ATOMIC_FLAG_INIT;
static _Atomic int fault_in_malloc;

void *malloc(size_t n)
{
    /* acquire/release: a plain spin lock around glibc's malloc. */
    while (atomic_flag_test_and_set_explicit(&heap_lock, memory_order_acquire)) {
    }
    if (atomic_load_explicit(&fault_in_malloc, memory_order_relaxed)) {
        *(volatile int *)(uintptr_t)8 = 1; /* the fault, with the lock held */
    }
    void *p = __libc_malloc(n);
    atomic_flag_clear_explicit(&heap_lock, memory_order_release);
    return p;
}

static volatile int sink;

static volatile int forever = 1;

static __attribute__((noinline)) int recurse(int depth)
{
    volatile char pad[256];
    pad[0] = (char)depth;
    return forever ? recurse(depth + 1) + pad[0] : 0;
}

static void crash_now(const char *mode)
{
    if (strcmp(mode, "abort") == 0) {
        abort();
    }
    if (strcmp(mode, "raise") == 0) {
        raise(SIGSEGV); /* a sent signal: the recorder must deliver it again after recording */
        _exit(42);
    }
    if (strcmp(mode, "agent") == 0) {
        /* Inside the agent's span path, half way through a span: the name is copied after
           the span was counted. */
        sw_local_span_begin((const char *)(uintptr_t)16);
    }
    if (strcmp(mode, "overflow") == 0) {
        sink = recurse(0);
    }
    if (strcmp(mode, "malloc") == 0) {
        atomic_store_explicit(&fault_in_malloc, 1, memory_order_relaxed);
        sink = malloc(16) != NULL;
    }
    *(volatile int *)(uintptr_t)0 = 1;
}

static _Atomic int busy_started;

static void *busy_thread(void *arg)
{
    (void)arg;
    for (;;) {
        sw_entry_span_begin("busy/request", NULL);
        sw_local_span_begin("busy/work");
        sw_span_tag("k", "v");
        atomic_store_explicit(&busy_started, 1, memory_order_release);
        sw_span_end();
        sw_span_end();
    }
    return NULL;
}

static void *nospan_thread(void *arg)
{
    crash_now(arg);
    return NULL;
}

static volatile sig_atomic_t own_handler_ran;

static void own_handler(int sig)
{
    static const char msg[] = "own handler ran\n";
    own_handler_ran = 1;
    (void)!write(2, msg, sizeof msg - 1);
    signal(sig, SIG_DFL); /* then the default: the fault repeats and kills the process */
}

static int ship(void)
{
    /* The shipped segments are reported by the consumer; sw_shutdown drains it. */
    sw__crash_stats_t st;
    sw__crash_stats(&st);
    sw_shutdown();
    printf("shipped=%llu dropped=%llu spools=%llu\n", (unsigned long long)st.segments_shipped,
           (unsigned long long)st.spools_dropped, (unsigned long long)st.spools_shipped);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: crash_child MODE\n");
        return 2;
    }
    const char *mode = argv[1];
    /* CRASH_CORE_LIMIT: bytes of core dump allowed (the core-dump test), else none. */
    const char *core = getenv("CRASH_CORE_LIMIT");
    rlim_t limit = core != NULL ? (rlim_t)strtoull(core, NULL, 10) : 0;
    struct rlimit lim = {limit, limit};
    setrlimit(RLIMIT_CORE, &lim);
    if (strcmp(mode, "handler") == 0) {
        signal(SIGSEGV, own_handler);
    }
    if (sw_init(NULL) != 0) {
        fprintf(stderr, "sw_init failed\n");
        return 3;
    }
    if (strcmp(mode, "ship") == 0) {
        return ship();
    }
    sw_entry_span_begin("GET /crash", NULL);
    sw_span_tag("mode", mode);
    sw_local_span_begin("handler");
    pthread_t t;
    if (strcmp(mode, "busy") == 0) {
        pthread_create(&t, NULL, busy_thread, NULL);
        while (!atomic_load_explicit(&busy_started, memory_order_acquire)) {
            sched_yield();
        }
    }
    if (strcmp(mode, "nospan") == 0) {
        pthread_create(&t, NULL, nospan_thread, "null");
        pthread_join(t, NULL);
    }
    crash_now(strcmp(mode, "handler") == 0 || strcmp(mode, "busy") == 0 ? "null" : mode);
    return 0;
}
