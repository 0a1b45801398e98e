/*
 * agent_state.h - the process-wide agent state of a run and the registry of thread contexts
 * (internal). Included by the code that starts and stops a run (agent.c) and by the span path
 * that hands segments to the pipeline (context.c, propagate.c, span.c, instrument/span_mark.c).
 */
#ifndef SW_CORE_AGENT_STATE_H
#define SW_CORE_AGENT_STATE_H

#include <pthread.h>

#include "../encode/chunk.h"
#include "../encode/encode.h"
#include "../report/reporter.h"
#include "../segment/sampler.h"
#include "../segment/segment_pool.h"
#include "context.h"
#include "datacarrier.h"
#include "skywalking.h"

typedef struct sw__pipeline sw__pipeline_t;

/*
 * Process-wide agent state, global because the API has no handle (one agent per process, like
 * SkyWalking's). Fields above the registry are written only by sw_init before it publishes the
 * epoch and are read-only while the run lasts.
 */
typedef struct sw__agent {
    sw_config_t config; /* the ignore list lives in dynamic_config.c */
    sw__segment_pool_t pool;
    sw__chunk_pool_t chunks;
    sw__encoder_t encoder; /* read-only during the run: the service and instance fields */
    sw__sampler_t sampler;
    dc_carrier_t *carrier;
    sw__pipeline_t *pipeline;

    /* Called on a thread right after it joined a run, and by its thread-exit hook; NULL:
       none (the crash recorder, crash/crash.h, finds threads' contexts through them). Set
       once, by the first sw_init before it publishes its run, and never changed: every
       reader joined a run after that (acquire of the run's publication). */
    void (*thread_joined)(sw__context_t *c);
    void (*thread_exiting)(sw__context_t *c);

    /* The reporter's outcome counters (atomics, see reporter.h); reset by sw_init. */
    sw__report_counters_t report_counters;

    /* registry_lock protects registry_head, the contexts' reg_* fields, run_epoch, retired and
       last_run. */
    pthread_mutex_t registry_lock;
    sw__context_t *registry_head;
    uint32_t run_epoch;  /* the run the registry belongs to; 0 once shutdown closed it */
    sw_stats_t retired;  /* counters of threads that exited during the run */
    sw_stats_t last_run; /* the final counters of the last finished run */
} sw__agent_t;

extern sw__agent_t sw__agent;

/* Registry: sums every thread's counters of the current run plus the retired ones. */
void sw__registry_sum(sw_stats_t *out);

/* sw_shutdown: folds and closes the registry of the run (no thread is registered after);
   release_idle: also gives the blocks and chunk other threads keep back to the run's pools. */
void sw__registry_close(sw_stats_t *out, bool release_idle);

#endif /* SW_CORE_AGENT_STATE_H */
