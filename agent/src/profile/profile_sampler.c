/*
 * profile_sampler.c - the profiled segments' slots, the sampling signal and its handler. See
 * profile_sampler.h for the states and who moves them.
 */
#include "profile_sampler.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "profile_unwind.h"
#include "skywalking.h"

enum { SLOT_FREE = 0, SLOT_CLAIMED, SLOT_ACTIVE, SLOT_ENDED };
enum { SAMPLE_IDLE = 0, SAMPLE_REQUESTED, SAMPLE_WRITING, SAMPLE_DONE };

typedef struct slot {
    _Atomic uint32_t state;
    _Atomic uint32_t sample;
    /* Written by the thread that claims (begin) or attaches, before it stores ACTIVE with
       release or, for attach, before the next sample is requested; read by the handler on the
       same thread and by the profiler after its acquire load of `state`. */
    _Atomic(const sw__segment_t *) seg; /* identity only: never dereferenced */
    const sw__profile_task_t *task;     /* the task it was claimed under */
    _Atomic int32_t tid;
    _Atomic uintptr_t stack_lo, stack_hi; /* the sampled thread's stack */
    int64_t begin_ms;
    char segment_id[SW__SEGMENT_ID_MAX];
    /* The sample: written by the handler between WRITING and DONE (release), read by the
       profiler after its acquire load of DONE. */
    int64_t time_ms;
    uint32_t depth;
    uintptr_t *frames;
    /* The profiler's own. */
    int32_t sequence;
} slot_t;

/* The run's slots, set by sw__profile_sampler_init before any task is published and freed by
   destroy after the last: global because the signal handler must find them without an
   argument. Never changed while a task is published. */
static slot_t *slots;
static uint32_t slot_count;
static uint32_t max_depth;
static sw__profile_current_fn current_segment;
/* Segments the published task has claimed (its MaxSamplingCount bounds them); reset by
   sampler_start. relaxed: a count, ordering nothing. */
static _Atomic uint32_t claimed_total;
/* Counters (relaxed: statistics). */
static _Atomic uint64_t st_requested, st_taken, st_skipped, st_handler_ns;
/* The program's disposition of the signal before ours, and whether ours is in: the profiler's
   thread only (install/restore). */
static struct sigaction old_action;
static bool installed;

_Atomic(const sw__profile_task_t *) sw__profile_task_now;

static int32_t thread_id(void)
{
    return (int32_t)syscall(SYS_gettid);
}

/* The calling thread's stack bounds (pthread_getattr_np; for the main thread glibc reads
   /proc/self/maps): only on the slow path of a profiled segment. */
static void stack_bounds(slot_t *s)
{
    uintptr_t lo = 0, hi = 0;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *addr = NULL;
        size_t size = 0;
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            lo = (uintptr_t)addr;
            hi = lo + size;
        }
        pthread_attr_destroy(&attr);
    }
    atomic_store_explicit(&s->stack_lo, lo, memory_order_relaxed);
    atomic_store_explicit(&s->stack_hi, hi, memory_order_relaxed);
}

bool sw__profile_wants(const sw__profile_task_t *task, const char *op)
{
    return op != NULL && strcmp(op, task->endpoint) == 0 &&
           atomic_load_explicit(&claimed_total, memory_order_relaxed) < task->max_sampling_count;
}

void sw__profile_begin(const sw__profile_task_t *task, const sw__segment_t *seg,
                       const char *segment_id, int64_t begin_ms)
{
    for (uint32_t i = 0; i < slot_count; i++) {
        slot_t *s = &slots[i];
        uint32_t expect = SLOT_FREE;
        /* acquire: the profiler's release store of FREE (it is done with the slot). */
        if (!atomic_compare_exchange_strong_explicit(&s->state, &expect, SLOT_CLAIMED,
                                                     memory_order_acquire, memory_order_relaxed)) {
            continue;
        }
        /* The Java agent's count: segments begun profiling, at most MaxSamplingCount. */
        if (atomic_fetch_add_explicit(&claimed_total, 1, memory_order_relaxed) >=
            task->max_sampling_count) {
            atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
            return;
        }
        atomic_store_explicit(&s->seg, seg, memory_order_relaxed);
        s->task = task;
        s->begin_ms = begin_ms;
        size_t n = strnlen(segment_id, sizeof s->segment_id - 1);
        memcpy(s->segment_id, segment_id, n);
        s->segment_id[n] = '\0';
        s->sequence = 0;
        stack_bounds(s);
        atomic_store_explicit(&s->tid, thread_id(), memory_order_relaxed);
        atomic_store_explicit(&s->sample, SAMPLE_IDLE, memory_order_relaxed);
        /* release: the fields above before the profiler's acquire load of ACTIVE. */
        atomic_store_explicit(&s->state, SLOT_ACTIVE, memory_order_release);
        return;
    }
}

void sw__profile_attach(const sw__segment_t *seg)
{
    for (uint32_t i = 0; i < slot_count; i++) {
        slot_t *s = &slots[i];
        if (atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_ACTIVE &&
            atomic_load_explicit(&s->seg, memory_order_relaxed) == seg) {
            /* The handler reads the bounds only on a thread that runs `seg`, which is this one
               from now until it detaches (the API refuses a second attach elsewhere). */
            stack_bounds(s);
            atomic_store_explicit(&s->tid, thread_id(), memory_order_relaxed);
        }
    }
}

void sw__profile_end(const sw__segment_t *seg)
{
    for (uint32_t i = 0; i < slot_count; i++) {
        slot_t *s = &slots[i];
        if (atomic_load_explicit(&s->seg, memory_order_relaxed) != seg) {
            continue;
        }
        uint32_t expect = SLOT_ACTIVE;
        /* release: nothing of ours to publish; pairs with the profiler's acquire for form. */
        atomic_compare_exchange_strong_explicit(&s->state, &expect, SLOT_ENDED,
                                                memory_order_release, memory_order_relaxed);
    }
}

/* ---- the handler ------------------------------------------------------------------------- */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The handler of SW__PROFILE_SIGNAL. Async-signal-safe: atomics, syscall(gettid),
   clock_gettime and reads of this thread's own stack; no allocation, no lock, errno kept. A
   signal with no REQUESTED sample for this thread (sent by someone else, or late) does
   nothing. */
static void on_signal(int sig, siginfo_t *info, void *ucontext)
{
    (void)sig;
    (void)info;
    int saved_errno = errno;
    uint64_t t0 = mono_ns();
    int32_t me = thread_id();
    for (uint32_t i = 0; i < slot_count; i++) {
        slot_t *s = &slots[i];
        if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_ACTIVE ||
            atomic_load_explicit(&s->tid, memory_order_relaxed) != me) {
            continue;
        }
        uint32_t expect = SAMPLE_REQUESTED;
        /* acquire: the profiler's request (and its release store of IDLE before it). */
        if (!atomic_compare_exchange_strong_explicit(&s->sample, &expect, SAMPLE_WRITING,
                                                     memory_order_acquire, memory_order_relaxed)) {
            continue;
        }
        uint32_t depth = 0;
        if (current_segment != NULL &&
            current_segment() == atomic_load_explicit(&s->seg, memory_order_relaxed)) {
            depth = sw__profile_unwind(
                ucontext, atomic_load_explicit(&s->stack_lo, memory_order_relaxed),
                atomic_load_explicit(&s->stack_hi, memory_order_relaxed), s->frames, max_depth);
        }
        s->depth = depth;
        s->time_ms = wall_ms();
        atomic_fetch_add_explicit(depth != 0 ? &st_taken : &st_skipped, 1, memory_order_relaxed);
        /* release: frames, depth and time before the profiler's acquire load of DONE. */
        atomic_store_explicit(&s->sample, SAMPLE_DONE, memory_order_release);
    }
    atomic_fetch_add_explicit(&st_handler_ns, mono_ns() - t0, memory_order_relaxed);
    errno = saved_errno;
}

/* ---- the profiler's thread --------------------------------------------------------------- */

int sw__profile_sampler_init(uint32_t parallel, uint32_t depth, sw__profile_current_fn current)
{
    if (parallel == 0 || parallel > SW__PROFILE_PARALLEL_MAX || depth == 0 ||
        depth > SW__PROFILE_DEPTH_MAX) {
        return SW_EINVAL;
    }
    if (slots != NULL && parallel == slot_count && depth == max_depth) {
        current_segment = current; /* a later run with the same sizes reuses them */
        return 0;
    }
    /* Slots of an earlier run with other sizes stay allocated: an application thread of that run
       may still be inside a hook (see sw__profile_sampler_destroy). */
    slots = calloc(parallel, sizeof *slots);
    if (slots == NULL) {
        slot_count = 0;
        return SW_ENOMEM;
    }
    for (uint32_t i = 0; i < parallel; i++) {
        slots[i].frames = calloc(depth, sizeof(uintptr_t));
        if (slots[i].frames == NULL) {
            slot_count = i;
            sw__profile_sampler_destroy();
            return SW_ENOMEM;
        }
    }
    slot_count = parallel;
    max_depth = depth;
    current_segment = current;
    return 0;
}

void sw__profile_sampler_destroy(void)
{
    for (uint32_t i = 0; i < slot_count; i++) {
        free(slots[i].frames);
    }
    free(slots);
    slots = NULL;
    slot_count = 0;
}

int sw__profile_signal_install(void)
{
    if (installed) {
        return 0;
    }
    struct sigaction now;
    (void)sw__profile_unwind_load(); /* optional: frame pointers alone without it */
    if (sigaction(SW__PROFILE_SIGNAL, NULL, &now) != 0) {
        return SW_EBUSY;
    }
    if ((now.sa_flags & SA_SIGINFO) != 0 ||
        (now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN)) {
        return SW_EBUSY; /* the program's own: never taken over */
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SW__PROFILE_SIGNAL, &sa, &old_action) != 0) {
        return SW_EBUSY;
    }
    installed = true;
    return 0;
}

void sw__profile_signal_restore(void)
{
    if (!installed) {
        return;
    }
    installed = false;
    struct sigaction now;
    if (sigaction(SW__PROFILE_SIGNAL, NULL, &now) != 0 || (now.sa_flags & SA_SIGINFO) == 0 ||
        now.sa_sigaction != on_signal) {
        return; /* the program installed its own since: it stays */
    }
    /* A signal sent just before may still be pending on some thread: it must find a handler,
       not the default action (which ends the process). Ours does nothing without a request,
       so it stays while any could be pending; SIG_IGN drops pending ones at once. */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SW__PROFILE_SIGNAL, &ign, NULL);
    sigaction(SW__PROFILE_SIGNAL, &old_action, NULL);
}

/* Takes a REQUESTED sample back, or waits (bounded) for a handler that is writing one. Returns
   with the sample IDLE or DONE. */
static void sample_settle(slot_t *s)
{
    uint32_t expect = SAMPLE_REQUESTED;
    atomic_compare_exchange_strong_explicit(&s->sample, &expect, SAMPLE_IDLE, memory_order_acq_rel,
                                            memory_order_acquire);
    for (int spins = 0;
         spins < 100000 && atomic_load_explicit(&s->sample, memory_order_acquire) == SAMPLE_WRITING;
         spins++) {
        sched_yield(); /* a handler runs between WRITING and DONE only: microseconds */
    }
}

static void harvest(slot_t *s, void (*fn)(const sw__profile_sample_t *, void *), void *arg)
{
    /* acquire: the handler's release store of DONE (frames, depth, time). */
    if (atomic_load_explicit(&s->sample, memory_order_acquire) != SAMPLE_DONE) {
        return;
    }
    if (s->depth != 0 && fn != NULL) {
        sw__profile_sample_t out = {s->segment_id, s->time_ms, s->sequence++, s->frames, s->depth};
        fn(&out, arg);
    }
    /* release: we are done reading frames before the handler may write them again. */
    atomic_store_explicit(&s->sample, SAMPLE_IDLE, memory_order_release);
}

void sw__profile_sampler_start(const sw__profile_task_t *task)
{
    for (uint32_t i = 0; i < slot_count; i++) {
        /* A slot left by the last task goes; one that a late begin of the last task is still
           filling (CLAIMED) is left to it, and the first tick frees it (its task is not this
           one). release: the settled sample before the next claimer's acquire. */
        slot_t *s = &slots[i];
        sample_settle(s);
        for (uint32_t from = SLOT_ACTIVE; from <= SLOT_ENDED; from++) {
            uint32_t expect = from;
            atomic_compare_exchange_strong_explicit(&s->state, &expect, SLOT_FREE,
                                                    memory_order_release, memory_order_relaxed);
        }
    }
    atomic_store_explicit(&claimed_total, 0, memory_order_relaxed);
    /* release: the slots are ready before any thread sees the task (acquire in the hooks). */
    atomic_store_explicit(&sw__profile_task_now, task, memory_order_release);
}

void sw__profile_sampler_stop(void (*fn)(const sw__profile_sample_t *, void *), void *arg)
{
    atomic_store_explicit(&sw__profile_task_now, NULL, memory_order_release);
    for (uint32_t i = 0; i < slot_count; i++) {
        slot_t *s = &slots[i];
        sample_settle(s);
        harvest(s, fn, arg);
        /* A begin that claimed before the task went away may still fill the slot: it then
           sits ACTIVE under the old task, and the next sampler_start empties it. */
        uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st == SLOT_ACTIVE || st == SLOT_ENDED) {
            atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
        }
    }
}

size_t sw__profile_sampler_tick(int64_t now_ms, void (*fn)(const sw__profile_sample_t *, void *),
                                void *arg)
{
    const sw__profile_task_t *task =
        atomic_load_explicit(&sw__profile_task_now, memory_order_relaxed);
    size_t requested = 0;
    pid_t pid = getpid();
    for (uint32_t i = 0; i < slot_count; i++) {
        slot_t *s = &slots[i];
        uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st != SLOT_ACTIVE && st != SLOT_ENDED) {
            continue;
        }
        harvest(s, fn, arg);
        if (st == SLOT_ENDED || s->task != task) {
            sample_settle(s);
            harvest(s, fn, arg);
            atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
            continue;
        }
        if (now_ms - s->begin_ms < (int64_t)task->min_duration_ms ||
            atomic_load_explicit(&s->sample, memory_order_relaxed) != SAMPLE_IDLE) {
            continue;
        }
        atomic_store_explicit(&s->sample, SAMPLE_REQUESTED, memory_order_release);
        int32_t tid = atomic_load_explicit(&s->tid, memory_order_relaxed);
        if (syscall(SYS_tgkill, pid, tid, SW__PROFILE_SIGNAL) != 0) {
            /* The thread is gone (its segment with it): the slot lets go. */
            sample_settle(s);
            atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
            continue;
        }
        atomic_fetch_add_explicit(&st_requested, 1, memory_order_relaxed);
        requested++;
    }
    return requested;
}

void sw__profile_sampler_stats(sw__profile_sampler_stats_t *out)
{
    out->requested = atomic_load_explicit(&st_requested, memory_order_relaxed);
    out->taken = atomic_load_explicit(&st_taken, memory_order_relaxed);
    out->skipped = atomic_load_explicit(&st_skipped, memory_order_relaxed);
    out->handler_ns = atomic_load_explicit(&st_handler_ns, memory_order_relaxed);
}
