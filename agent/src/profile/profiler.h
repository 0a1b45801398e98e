/*
 * profiler.h - trace profiling with the OAP (internal): the ProfileTask service of SkyWalking's
 * gRPC protocol, gRPC reporter only (the OAP takes profile data over gRPC alone).
 *
 * Threads of its own:
 *   - "sw-profile" asks getProfileTaskCommands every SW_AGENT_PROFILE_CHECK_INTERVAL seconds
 *     (first at start) with {service, instance, CreateTime of the last task received}, checks
 *     each ProfileTaskQuery (profile_task.h; also: a TaskId received before, or a task whose time
 *     overlaps the running or waiting one, is refused, logged), and starts the sampling thread
 *     of a task (one runs at a time; one more may wait for it);
 *   - "sw-prof-sample", one per task, wakes every DumpPeriod from StartTime to StartTime +
 *     Duration: it publishes the task to the span path (profile_sampler.h), asks each profiled
 *     segment's thread for its stack by signal once the segment has been open
 *     MinDurationThreshold ms, symbolizes the stacks (symbol/symbolizer.h; never in the
 *     handler), streams them with collectSnapshot (every second, or each 32 snapshots; at most
 *     SW__PROFILE_QUEUE_MAX wait, more are dropped and counted), and at the end stops
 *     publishing, sends what is left and reportTaskFinish.
 *
 * Each thread has its own gRPC connection (grpc_reporter_channel.h) to
 * SW_AGENT_COLLECTOR_BACKEND_SERVICES, with the reporter's token, TLS and deadline.
 */
#ifndef SW_PROFILE_PROFILER_H
#define SW_PROFILE_PROFILER_H

#include <stdbool.h>
#include <stddef.h>

#include "profile_sampler.h"
#include "profile_snapshot.h"
#include "skywalking.h"

typedef struct sw__profiler sw__profiler_t;

/*
 * Starts profiling for a run whose reporter is gRPC and cfg->profile_active is set (otherwise
 * returns 0 with *out NULL: nothing runs). `current` tells the signal handler which segment the
 * interrupted thread records. Returns 0 and *out; SW_ECONFIG (message in errbuf), SW_ENOMEM or
 * SW_ETHREAD, with nothing left running. Lifecycle lock held (sw_init).
 */
int sw__profiler_start(const sw_config_t *cfg, sw__profile_current_fn current, sw__profiler_t **out,
                       char *errbuf, size_t errlen);

/*
 * Stops the threads (a running task stops sampling; its finish is not reported), puts the
 * signal's old disposition back and frees everything but the profiled segments' slots, which
 * stay for the next run: an application thread may still be inside a span path hook. NULL:
 * no-op. Lifecycle lock held (sw_shutdown, and at exit).
 */
void sw__profiler_stop(sw__profiler_t *p);

/* In a forked child: the parent's task is not the child's; the span path stops profiling. */
void sw__profiler_after_fork_child(void);

#endif /* SW_PROFILE_PROFILER_H */
