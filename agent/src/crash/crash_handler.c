/*
 * crash_handler.c - the signal handlers, the alternate stacks, the slot table and the spool's
 * lifecycle (crash.h).
 *
 * Chaining: sigaction returns the action the program had when the recorder installed its own
 * (SA_SIGINFO | SA_ONSTACK, all six crash signals blocked while it runs). After recording,
 * the handler runs that action: a function is called as the kernel would have called it; the
 * default (and "ignore", which the kernel overrides for a fault) is restored and the signal
 * delivered again, so the process dies by the same signal, with the core dump the program's
 * limits allow. A handler installed later than the recorder (breakpad, crashpad, the host's)
 * runs first and reaches the recorder only if it chains to the action it found, as those
 * libraries do (docs/CRASH.md).
 *
 * A second fault while the handler runs hits a blocked crash signal: the kernel then resets
 * it to the default action and kills the process (force_sig), with no handler involved.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../log/log.h"
#include "crash.h"
#include "crash_internal.h"
#include "crash_dir.h"

sw__crash_state_t sw__crash = {.fd = -1, .dir_fd = -1};

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};
#define NSIGNALS (sizeof crash_signals / sizeof crash_signals[0])

/* The actions the program had, written by arm before each handler is installed (sigaction's
   old-action output) and only read by the handler afterwards. */
static struct sigaction previous[NSIGNALS];
static bool installed;

/* Threads the slot table had no room for (sw__crash_stats). */
_Atomic uint64_t sw__crash_unregistered;

bool sw__crash_supported(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    return false;
#else
    return true;
#endif
#else
    return true;
#endif
}

/* Signal context. */
static int signal_index(int signo)
{
    for (size_t i = 0; i < NSIGNALS; i++) {
        if (crash_signals[i] == signo) {
            return (int)i;
        }
    }
    return -1;
}

static void on_crash(int signo, siginfo_t *si, void *uc);

/* Signal context. Runs the program's own disposition of the signal (see the top). */
static void chain(int signo, siginfo_t *si, void *uc, int32_t tid, bool sent)
{
    int idx = signal_index(signo);
    const struct sigaction *prev = idx >= 0 ? &previous[idx] : NULL;
    bool fn = prev != NULL && ((prev->sa_flags & SA_SIGINFO) != 0
                                   ? prev->sa_sigaction != NULL && prev->sa_sigaction != on_crash
                                   : prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN);
    if (fn) {
        if ((prev->sa_flags & SA_RESETHAND) != 0) {
            struct sigaction dfl;
            memset(&dfl, 0, sizeof dfl);
            dfl.sa_handler = SIG_DFL;
            sigaction(signo, &dfl, NULL);
        }
        if ((prev->sa_flags & SA_SIGINFO) != 0) {
            prev->sa_sigaction(signo, si, uc);
        } else {
            prev->sa_handler(signo);
        }
        return; /* as the program's handler decided (a fault that returns faults again) */
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(signo, &dfl, NULL);
    if (sent) {
        /* Pending while this handler runs (the signal is blocked in it), delivered with the
           default action when it returns. */
        syscall(SYS_tgkill, getpid(), tid, signo);
    }
    /* A fault: returning re-runs the faulting instruction, now under the default action. */
}

/* Signal context: the handler of the six crash signals. */
static void on_crash(int signo, siginfo_t *si, void *uc)
{
    int saved_errno = errno;
    bool sent = si == NULL || si->si_code <= 0;
    int idx = signal_index(signo);
    if (sent && signo != SIGABRT && idx >= 0 && (previous[idx].sa_flags & SA_SIGINFO) == 0 &&
        previous[idx].sa_handler == SIG_IGN) {
        errno = saved_errno; /* the program ignores this signal when it is sent: no crash */
        return;
    }
    int32_t tid = sw__crash_gettid();
    /* acquire: partner of arm's release store; the spool and tables are ready. */
    if (atomic_load_explicit(&sw__crash.armed, memory_order_acquire) && sw__crash.pid == getpid()) {
        int32_t expected = 0;
        /* acq_rel: one recorder at a time; the release at its end publishes the spool to a
           thread that waited (partner: the acquire loads below). */
        if (atomic_compare_exchange_strong_explicit(&sw__crash.recording, &expected, tid,
                                                    memory_order_acq_rel, memory_order_acquire)) {
            sw__crash_record(signo, si, uc, tid);
            atomic_store_explicit(&sw__crash.recording, 0, memory_order_release);
        } else if (expected != tid) {
            /* Another thread is recording: let it finish (at most ~2 s) before this thread
               dies, which would end the process under it. */
            struct timespec ms = {0, 1000000};
            for (int i = 0;
                 i < 2000 && atomic_load_explicit(&sw__crash.recording, memory_order_acquire) != 0;
                 i++) {
                nanosleep(&ms, NULL);
            }
        }
    }
    chain(signo, si, uc, tid, sent);
    errno = saved_errno;
}

static void handlers_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NSIGNALS; i++) {
        sigaddset(&sa.sa_mask, crash_signals[i]);
    }
    for (size_t i = 0; i < NSIGNALS; i++) {
        struct sigaction old;
        if (sigaction(crash_signals[i], NULL, &old) != 0) {
            continue;
        }
        if ((old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction == on_crash) {
            continue; /* still ours from an earlier run: previous[i] holds the program's */
        }
        previous[i] = old;
        sigaction(crash_signals[i], &sa, NULL);
    }
    installed = true;
}

/* Puts back the program's actions where the recorder's handler is still the installed one
   (one installed later stays: it may chain to ours, which keeps running, disarmed). */
static void handlers_remove(void)
{
    for (size_t i = 0; i < NSIGNALS && installed; i++) {
        struct sigaction cur;
        if (sigaction(crash_signals[i], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) != 0 &&
            cur.sa_sigaction == on_crash) {
            sigaction(crash_signals[i], &previous[i], NULL);
        }
    }
    installed = false;
}

/* The spool's header, as sw_init writes it: ARMED, names, pid. */
static void header_init(const sw_config_t *cfg)
{
    sw__crash_header_t *h = (sw__crash_header_t *)(void *)sw__crash.map;
    memset(sw__crash.map, 0, SW__CRASH_HEADER_BYTES);
    memcpy(h->magic, SW__CRASH_MAGIC, 8);
    h->version = SW__CRASH_VERSION;
    h->header_bytes = SW__CRASH_HEADER_BYTES;
    h->spool_bytes = SW__CRASH_SPOOL_BYTES;
    h->state = SW__CRASH_ARMED;
    h->pid = (uint32_t)getpid();
    size_t n = strnlen(cfg->service_name, SW__CRASH_NAME_MAX - 1);
    memcpy(h->service, cfg->service_name, n);
    h->service_len = (uint32_t)n;
    n = strnlen(cfg->instance_name, SW__CRASH_NAME_MAX - 1);
    memcpy(h->instance, cfg->instance_name, n);
    h->instance_len = (uint32_t)n;
}

/* Creates, sizes, locks and maps this process's spool in the open directory. */
static int spool_create(const sw_config_t *cfg, int dir_fd)
{
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) {
        rnd = (uint32_t)time(NULL);
    }
    snprintf(sw__crash.name, sizeof sw__crash.name, "%s.%d.%08x%s",
             sw__crash_service_key(cfg->service_name), (int)getpid(), rnd, SW__CRASH_SUFFIX);
    int fd =
        openat(dir_fd, sw__crash.name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        return -errno;
    }
    int rc = posix_fallocate(fd, 0, SW__CRASH_SPOOL_BYTES);
    if (rc == EOPNOTSUPP || rc == EINVAL) {
        rc = ftruncate(fd, SW__CRASH_SPOOL_BYTES) == 0 ? 0 : errno;
    }
    void *map = MAP_FAILED;
    if (rc == 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
        map = mmap(NULL, SW__CRASH_SPOOL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (map == MAP_FAILED) {
        rc = rc != 0 ? rc : errno;
        close(fd);
        unlinkat(dir_fd, sw__crash.name, 0);
        return -rc;
    }
    sw__crash.fd = fd;
    sw__crash.map = map;
    header_init(cfg);
    return 0;
}

int sw__crash_arm(const sw_config_t *cfg)
{
    if (!cfg->crash_recorder || !sw__crash_supported()) {
        return 0;
    }
    char err[1300];
    int dir_fd = sw__crash_dir_open(cfg, sw__crash.path, sizeof sw__crash.path, err, sizeof err);
    if (dir_fd < 0) {
        sw__log(SW_LOG_ERROR, "%s; the crash recorder stays off", err);
        return SW_ECONFIG;
    }
    int rc = spool_create(cfg, dir_fd);
    if (rc != 0) {
        sw__log(SW_LOG_ERROR,
                "SW_AGENT_CRASH_DIR=%s: cannot create the crash spool (%s); the crash recorder "
                "stays off",
                sw__crash.path, strerror(-rc));
        close(dir_fd);
        return SW_EIO;
    }
    sw__crash.dir_fd = dir_fd;
    sw__crash.pid = getpid();
    for (uint32_t i = 0; i < SW__CRASH_SLOTS; i++) {
        atomic_store_explicit(&sw__crash.slots[i].tid, 0, memory_order_relaxed);
        atomic_store_explicit(&sw__crash.slots[i].ctx, NULL, memory_order_relaxed);
        sw__crash.slots[i].altstack = NULL;
    }
    sw__crash_modules_refresh();
    /* The first backtrace loads libgcc's unwinder (dlopen, malloc): here, not in the
       handler. */
    void *warm[4];
    (void)backtrace(warm, 4);
    /* release: the spool, the tables and the slots are ready (partner: on_crash's acquire). */
    atomic_store_explicit(&sw__crash.armed, true, memory_order_release);
    handlers_install();
    return 0;
}

void sw__crash_disarm(void)
{
    if (sw__crash.map == NULL) {
        return;
    }
    atomic_store_explicit(&sw__crash.armed, false, memory_order_release);
    handlers_remove();
    /* acquire: partner of the recorder's release; a crash being recorded now keeps its
       mapping (the process is ending anyway). */
    if (atomic_load_explicit(&sw__crash.recording, memory_order_acquire) == 0) {
        munmap(sw__crash.map, SW__CRASH_SPOOL_BYTES);
    }
    sw__crash.map = NULL;
    unlinkat(sw__crash.dir_fd, sw__crash.name, 0);
    close(sw__crash.fd);
    close(sw__crash.dir_fd);
    sw__crash.fd = sw__crash.dir_fd = -1;
    sw__crash.name[0] = '\0';
}

void sw__crash_after_fork_child(void)
{
    if (sw__crash.map == NULL) {
        return;
    }
    /* The mapping is shared with the parent's file: the child never writes it. Closing the
       descriptor keeps the parent's lock (it holds its own descriptor). */
    atomic_store_explicit(&sw__crash.armed, false, memory_order_relaxed);
    munmap(sw__crash.map, SW__CRASH_SPOOL_BYTES);
    sw__crash.map = NULL;
    close(sw__crash.fd);
    close(sw__crash.dir_fd);
    sw__crash.fd = sw__crash.dir_fd = -1;
    sw__crash.name[0] = '\0';
}

/* An alternate signal stack for the calling thread unless it has one: 64 KiB above a guard
   page. Returns the mapping or NULL. */
static void *altstack_give(void)
{
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0 || (cur.ss_flags & SS_DISABLE) == 0) {
        return NULL; /* the program's own (or an earlier run's) stays */
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *m = mmap(NULL, page + SW__CRASH_ALTSTACK, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (m == MAP_FAILED) {
        return NULL;
    }
    mprotect(m, page, PROT_NONE);
    stack_t ss = {.ss_sp = m + page, .ss_size = SW__CRASH_ALTSTACK, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(m, page + SW__CRASH_ALTSTACK);
        return NULL;
    }
    return m;
}

void sw__crash_thread_joined(sw__context_t *c)
{
    /* relaxed: arm ran on this or an ordered thread (sw_init before any join). */
    if (!atomic_load_explicit(&sw__crash.armed, memory_order_relaxed)) {
        return;
    }
    int32_t tid = sw__crash_gettid();
    sw__crash_slot_t *slot = NULL;
    for (uint32_t i = 0; i < SW__CRASH_SLOTS && slot == NULL; i++) {
        if (atomic_load_explicit(&sw__crash.slots[i].tid, memory_order_relaxed) == tid) {
            slot = &sw__crash.slots[i];
        }
    }
    for (uint32_t i = 0; i < SW__CRASH_SLOTS && slot == NULL; i++) {
        int32_t free_tid = 0;
        /* relaxed claim (-1: taken, not yet visible to the handler, which skips tid <= 0). */
        if (atomic_compare_exchange_strong_explicit(&sw__crash.slots[i].tid, &free_tid, -1,
                                                    memory_order_relaxed, memory_order_relaxed)) {
            slot = &sw__crash.slots[i];
        }
    }
    if (slot == NULL) {
        /* More threads than slots: this one's crash records no segment. relaxed: a count. */
        atomic_fetch_add_explicit(&sw__crash_unregistered, 1, memory_order_relaxed);
        return;
    }
    atomic_store_explicit(&slot->ctx, c, memory_order_relaxed);
    if (slot->altstack == NULL) {
        slot->altstack = altstack_give();
    }
    /* release: ctx is set before the handler (acquire on tid) may use it. */
    atomic_store_explicit(&slot->tid, tid, memory_order_release);
    sw__crash_modules_refresh();
}

void sw__crash_thread_exiting(sw__context_t *c)
{
    (void)c;
    int32_t tid = sw__crash_gettid();
    for (uint32_t i = 0; i < SW__CRASH_SLOTS; i++) {
        sw__crash_slot_t *slot = &sw__crash.slots[i];
        if (atomic_load_explicit(&slot->tid, memory_order_relaxed) != tid) {
            continue;
        }
        void *stack = slot->altstack;
        slot->altstack = NULL;
        atomic_store_explicit(&slot->ctx, NULL, memory_order_relaxed);
        /* release: the slot is free only after it is emptied (partner: a claimer's CAS sees
           0 and then writes it). */
        atomic_store_explicit(&slot->tid, 0, memory_order_release);
        if (stack != NULL) {
            stack_t off = {.ss_flags = SS_DISABLE};
            if (sigaltstack(&off, NULL) == 0) {
                munmap(stack, (size_t)sysconf(_SC_PAGESIZE) + SW__CRASH_ALTSTACK);
            }
        }
        return;
    }
}
