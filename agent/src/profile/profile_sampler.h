/*
 * profile_sampler.h - which segments are profiled, and their threads' stacks taken in a signal
 * handler (internal).
 *
 * The span path: while no task samples, `sw__profile_task_now` is NULL and the span path pays one
 * relaxed load of it when a segment begins and one when it is handed off (core/context.c), and
 * one per sw_context_attach (core/request.c). While a task samples:
 *
 *   - sw__profile_begin (the thread beginning a segment whose first span's operation is the
 *     task's endpoint) claims one of the SW_AGENT_PROFILE_MAX_PARALLEL slots, as long as the
 *     task has profiled fewer than its MaxSamplingCount segments, and records the thread (its
 *     id and stack bounds) and the time;
 *   - sw__profile_attach (sw_context_attach of a profiled request context) moves the slot to the
 *     attaching thread;
 *   - sw__profile_end (the segment is handed off) lets the slot go.
 *
 * The profiler's thread (profiler.c) asks for a sample by marking a slot's sample REQUESTED and
 * sending SW__PROFILE_SIGNAL to the slot's thread with tgkill. The handler, on that thread,
 * checks that the thread runs the slot's segment now (the current-segment function that the
 * agent hands down; a detached request context is not sampled), walks the frame pointers from
 * the interrupted context into the slot's preallocated frame buffer (bounded by the thread's
 * stack and by SW_AGENT_PROFILE_DUMP_MAX_STACK_DEPTH), and marks the sample DONE. The profiler's
 * thread then reads it, symbolizes it and frees the sample.
 *
 * Slot states (`state`): FREE -> CLAIMED (begin fills it) -> ACTIVE -> ENDED (end) -> FREE (the
 * profiler, once no sample is being written). Sample states (`sample`): IDLE -> REQUESTED
 * (profiler) -> WRITING (handler) -> DONE (handler) -> IDLE (profiler); the profiler may take a
 * REQUESTED back to IDLE. Each transition is a compare-and-swap or a release store by the one
 * side that owns it; see the comments at each.
 *
 * Which calls may run together: begin/attach/end on any application threads at once (they
 * claim slots with compare-and-swap); the handler on any sampled thread; the sampler functions
 * (sw__profile_sampler_*) on the profiler's thread only.
 */
#ifndef SW_PROFILE_PROFILE_SAMPLER_H
#define SW_PROFILE_PROFILE_SAMPLER_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../segment/segment.h"
#include "profile_task.h"

/* The signal that asks a thread for its stack: a real-time signal no library is known to use
   (glibc keeps SIGRTMIN-2 and SIGRTMIN-1 for itself). The agent installs its handler only when
   the program has none for it (SIG_DFL or SIG_IGN), while a task samples, and puts the old
   disposition back when the profiler stops. */
#define SW__PROFILE_SIGNAL (SIGRTMIN + 6)

/* The task that samples now, or NULL: the span path's one load (relaxed). Stored with release
   by the profiler's thread after the slots are ready (partner: the acquire load in the hooks). */
extern _Atomic(const sw__profile_task_t *) sw__profile_task_now;

/* The segment the calling thread records now (the span stack's or an attached request
   context's), or NULL. Must be async-signal-safe: it runs in the handler. */
typedef sw__segment_t *(*sw__profile_current_fn)(void);

/* The most frames a sample keeps: SW_AGENT_PROFILE_DUMP_MAX_STACK_DEPTH's upper bound. */
#define SW__PROFILE_DEPTH_MAX    4096
#define SW__PROFILE_PARALLEL_MAX 64

/* ---- application threads (the span path's slow branch) --------------------------------- */

/* Whether a segment whose first span is `op` should be profiled by `task` (the endpoint
   matches). Cheap; the caller then makes the segment's ids and calls sw__profile_begin. */
bool sw__profile_wants(const sw__profile_task_t *task, const char *op);

/* Claims a slot for `seg` (its id `segment_id`, begun at `begin_ms`) on the calling thread, when
   one is free and the task's count allows. */
void sw__profile_begin(const sw__profile_task_t *task, const sw__segment_t *seg,
                       const char *segment_id, int64_t begin_ms);

/* `seg`, a request context, was attached to the calling thread: a slot of it follows. */
void sw__profile_attach(const sw__segment_t *seg);

/* `seg` ends: its slot (if any) lets go. */
void sw__profile_end(const sw__segment_t *seg);

/* ---- the profiler's thread ------------------------------------------------------------- */

/* One finished sample, as sw__profile_sampler_harvest hands it out. */
typedef struct sw__profile_sample {
    const char *segment_id;
    int64_t time_ms;
    int32_t sequence;        /* 0, 1, ... per profiled segment */
    const uintptr_t *frames; /* innermost first: frames[0] the interrupted pc, then return
                                addresses */
    uint32_t depth;
} sw__profile_sample_t;

/* Allocates `parallel` slots of `depth` frames each (or keeps those of an earlier run of the same
   sizes) and remembers `current`. Returns 0, SW_EINVAL (out of range) or SW_ENOMEM. Once per run,
   before any task. */
int sw__profile_sampler_init(uint32_t parallel, uint32_t depth, sw__profile_current_fn current);

/* Frees the slots. No task may be published, no handler installed, and no application thread
   inside a hook: the agent never calls it (a thread of a finished run may still be in a hook
   that read the task before it went), only single-run tools (tests, the bench). */
void sw__profile_sampler_destroy(void);

/* Installs the handler of SW__PROFILE_SIGNAL. Returns 0, or SW_EBUSY when the program has its
   own handler for it (then profiling stays off; logged by the caller). Idempotent. */
int sw__profile_signal_install(void);

/* Puts the program's old disposition of the signal back. Idempotent. */
void sw__profile_signal_restore(void);

/* Starts sampling for `task` (immutable until the next sw__profile_sampler_stop): empties the
   slots and publishes it. */
void sw__profile_sampler_start(const sw__profile_task_t *task);

/* Stops publishing the task and lets every slot go (waiting, bounded, for a handler that is
   writing). Samples still DONE are handed to `fn` first. */
void sw__profile_sampler_stop(void (*fn)(const sw__profile_sample_t *, void *), void *arg);

/* Hands every DONE sample to fn(sample, arg) and frees it, frees ENDED slots, then asks every
   ACTIVE slot open for at least the task's threshold at `now_ms` for a sample (tgkill). Returns
   the number of samples requested. */
size_t sw__profile_sampler_tick(int64_t now_ms, void (*fn)(const sw__profile_sample_t *, void *),
                                void *arg);

/* Counters of the sampled side, for tests and the bench. */
typedef struct sw__profile_sampler_stats {
    uint64_t requested;  /* signals sent */
    uint64_t taken;      /* samples written by the handler */
    uint64_t skipped;    /* signals that found the thread not running the segment */
    uint64_t handler_ns; /* time spent in the handler, all samples */
} sw__profile_sampler_stats_t;
void sw__profile_sampler_stats(sw__profile_sampler_stats_t *out);

#endif /* SW_PROFILE_PROFILE_SAMPLER_H */
