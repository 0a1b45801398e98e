/*
 * agent.c - the agent's lifecycle: sw_init, sw_shutdown, sw_stats, and the fork hook.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"
#include "config/config.h"
#include "segment/clock.h"
#include "core/agent_state.h"
#include "core/context.h"
#include "config/dynamic_config.h"
#include "crash/crash.h"
#include "util/utf8.h"
#include "log/log.h"
#include "applog/log_report.h"
#include "pipeline/pipeline.h"
#include "profile/profiler.h"
#include "swc_errbuf.h"
#include "util/locality.h"

/*
 * lifecycle serialises sw_init and sw_shutdown (global: the agent is process-wide). It
 * protects epoch_counter and the atexit/atfork flags. It is never taken on a span path.
 */
static pthread_mutex_t lifecycle = PTHREAD_MUTEX_INITIALIZER;
static uint32_t epoch_counter;
static bool hooks_registered;
/* The run's profiler (gRPC reporter with SW_AGENT_PROFILE_ACTIVE), or NULL; protected by
   lifecycle. */
static sw__profiler_t *profiler;

static int shutdown_impl(bool release_memory);

/* At exit other threads may still be inside span calls: drain and flush, but free nothing
   they could still touch (the process is ending; the memory stays reachable). */
static void at_exit(void)
{
    if (atomic_load_explicit(&sw__epoch, memory_order_acquire) != 0) {
        (void)shutdown_impl(false);
    }
}

static void after_fork_child(void)
{
    sw__profiler_after_fork_child();
    profiler = NULL; /* the parent's threads are not in the child */
    sw__agent_after_fork_child();
}

/* Everything of sw_init that can fail, with the lifecycle lock held. */
static int init_locked(const sw_config_t *cfg, char *errbuf, size_t errlen)
{
    sw__agent_t *a = &sw__agent;
    /* The span clock probes the CPU (a sysfs read) here rather than in a first span, and starts
       its calibration (segment/clock.h). */
    (void)sw__now_ns();
    if (cfg != NULL) {
        a->config = *cfg;
        if (sw__config_secure()) {
            sw__log(SW_LOG_INFO,
                    "the process runs with elevated privileges (AT_SECURE): the agent uses only "
                    "the configuration the program passed to sw_init, nothing from the "
                    "environment");
        }
    } else {
        sw_config_init(&a->config);
        int rc = sw_config_load(&a->config, errbuf, errlen);
        if (rc != 0) {
            return rc;
        }
    }
    int rc = sw__config_finalize(&a->config, errbuf, errlen);
    if (rc == 0) {
        /* The names go into every message's proto3 string fields: valid UTF-8 (util/utf8.h). */
        sw__utf8_fix(a->config.service_name, strlen(a->config.service_name));
        sw__utf8_fix(a->config.instance_name, strlen(a->config.instance_name));
        /* The ignore list and the span limit (configuration discovery may change them). */
        rc = sw__dyncfg_init(&a->config, a->config.span_limit_per_segment, &a->sampler, errbuf,
                             errlen);
    }
    if (rc != 0) {
        return rc;
    }
    sw__ids_seed();
    uint64_t max_blocks = a->config.max_segments != 0
                              ? a->config.max_segments
                              : sw__segment_pool_default_max(sw__pipeline_slots(&a->config));
    if (sw__segment_pool_init(&a->pool, a->config.span_limit_per_segment,
                              a->config.segment_arena_bytes, max_blocks) != 0) {
        sw__dyncfg_release();
        swc__errbuf_printf(errbuf, errlen,
                           "SW_AGENT_SPAN_LIMIT / SW_AGENT_SEGMENT_ARENA_BYTES / "
                           "SW_AGENT_MAX_SEGMENTS out of range");
        return SW_ECONFIG;
    }
    sw__chunk_pool_init(&a->chunks, sw__chunk_pool_default_max(max_blocks));
    if (sw__encoder_set_process(&a->encoder, a->config.service_name, a->config.instance_name) !=
        0) {
        sw__dyncfg_release();
        swc__errbuf_printf(errbuf, errlen, "out of memory");
        return SW_ENOMEM;
    }
    sw__sampler_init(&a->sampler, a->config.sample_n_per_3_secs);
    atomic_store_explicit(&a->report_counters.reported, 0, memory_order_relaxed);
    atomic_store_explicit(&a->report_counters.failed, 0, memory_order_relaxed);
    rc = sw__pipeline_start(&a->config, &a->chunks, &a->pool, &a->encoder, &a->report_counters,
                            sw_stats, &a->pipeline, errbuf, errlen);
    if (rc != 0) {
        sw__encoder_free(&a->encoder);
        sw__dyncfg_release();
        return rc;
    }
    a->carrier = sw__pipeline_carrier(a->pipeline);
    rc = sw__profiler_start(&a->config, sw__context_current_segment, &profiler, errbuf, errlen);
    if (rc != 0) {
        sw__pipeline_stop(a->pipeline);
        a->pipeline = NULL;
        a->carrier = NULL;
        sw__encoder_free(&a->encoder);
        sw__dyncfg_release();
        return rc;
    }
    /* The crash recorder: this process's spool and handlers (crash/crash.h; cannot fail
       sw_init). What crashed processes of the service left is sent once the run is
       published (sw_init). */
    if (a->thread_joined == NULL) { /* once: threads of earlier runs may read them now */
        a->thread_joined = sw__crash_thread_joined;
        a->thread_exiting = sw__crash_thread_exiting;
    }
    (void)sw__crash_arm(&a->config);
    return 0;
}

int sw_init(const sw_config_t *cfg)
{
    pthread_mutex_lock(&lifecycle);
    if (atomic_load_explicit(&sw__epoch, memory_order_relaxed) != 0) {
        pthread_mutex_unlock(&lifecycle);
        return SW_ESTATE;
    }
    char err[768] = "";
    int rc = init_locked(cfg, err, sizeof err);
    if (rc != 0) {
        pthread_mutex_unlock(&lifecycle);
        sw__log(SW_LOG_ERROR, "%s (%s); the agent stays off", err[0] ? err : "sw_init",
                sw_err_name(rc));
        return rc;
    }
    uint32_t e = ++epoch_counter;
    if (e == 0) {
        e = ++epoch_counter;
    }
    pthread_mutex_lock(&sw__agent.registry_lock);
    memset(&sw__agent.retired, 0, sizeof sw__agent.retired);
    memset(&sw__agent.last_run, 0, sizeof sw__agent.last_run);
    sw__agent.registry_head = NULL;
    sw__agent.run_epoch = e;
    pthread_mutex_unlock(&sw__agent.registry_lock);
    /* release: publishes the agent state; partner: the acquire load in sw__context_join. */
    atomic_store_explicit(&sw__epoch, e, memory_order_release);
    sw__crash_ship(&sw__agent.config); /* counted in this run's statistics */
    if (!hooks_registered) {
        hooks_registered = true;
        atexit(at_exit);
        pthread_atfork(NULL, NULL, after_fork_child);
    }
    pthread_mutex_unlock(&lifecycle);
    return 0;
}

int sw_shutdown(void)
{
    return shutdown_impl(true);
}

static int shutdown_impl(bool release_memory)
{
    pthread_mutex_lock(&lifecycle);
    if (atomic_load_explicit(&sw__epoch, memory_order_relaxed) == 0) {
        pthread_mutex_unlock(&lifecycle);
        return SW_ESTATE;
    }
    /* From here on new spans are no-ops; segments finishing now are rejected and counted. */
    atomic_store_explicit(&sw__epoch, 0, memory_order_release);
    sw__crash_disarm(); /* a normal end: the spool goes */

    sw__profiler_stop(profiler);
    profiler = NULL;
    if (release_memory) {
        sw__pipeline_stop(sw__agent.pipeline);
        sw__agent.pipeline = NULL;
        sw__agent.carrier = NULL;
    } else {
        sw__pipeline_drain(sw__agent.pipeline);
    }
    sw_stats_t st;
    sw__registry_close(&st, release_memory);
    st.segments_reported =
        atomic_load_explicit(&sw__agent.report_counters.reported, memory_order_acquire);
    st.segments_failed =
        atomic_load_explicit(&sw__agent.report_counters.failed, memory_order_acquire);
    if (release_memory) {
        sw__dyncfg_release(); /* the discovery thread stopped with the reporter */
        sw__segment_pool_destroy(&sw__agent.pool);
        sw__chunk_pool_destroy(&sw__agent.chunks);
        sw__encoder_free(&sw__agent.encoder);
        sw__context_drop_stale(&sw__tls_context); /* the caller's own blocks and chunk */
    }
    pthread_mutex_lock(&sw__agent.registry_lock);
    sw__agent.last_run = st;
    pthread_mutex_unlock(&sw__agent.registry_lock);
    pthread_mutex_unlock(&lifecycle);
    return 0;
}

SW__HOT bool sw_enabled(void)
{
    return atomic_load_explicit(&sw__epoch, memory_order_relaxed) != 0;
}

void sw_stats(sw_stats_t *stats)
{
    if (stats == NULL) {
        return;
    }
    if (atomic_load_explicit(&sw__epoch, memory_order_acquire) == 0) {
        pthread_mutex_lock(&sw__agent.registry_lock);
        *stats = sw__agent.last_run;
        pthread_mutex_unlock(&sw__agent.registry_lock);
        sw__log_report_stats(stats); /* kept by log_report.c until the next run */
        return;
    }
    /* Reporter counters first (acquire, partner: the reporters' release adds), so a test that
       sees N reported also sees the pool returns that preceded them. */
    uint64_t reported =
        atomic_load_explicit(&sw__agent.report_counters.reported, memory_order_acquire);
    uint64_t failed = atomic_load_explicit(&sw__agent.report_counters.failed, memory_order_acquire);
    sw__registry_sum(stats);
    stats->segments_reported = reported;
    stats->segments_failed = failed;
    sw__log_report_stats(stats);
}

uint64_t sw__agent_blocks_allocated(void)
{
    return atomic_load_explicit(&sw__agent.pool.allocated, memory_order_relaxed);
}

uint64_t sw__agent_chunk_units(void)
{
    return atomic_load_explicit(&sw__agent.chunks.allocated, memory_order_relaxed);
}

uint64_t sw__agent_blocks_max(void)
{
    return sw__agent.pool.max_blocks; /* written by sw_init before it publishes the run */
}

void sw__agent_after_fork_child(void)
{
    /* The child has one thread and no consumer: the parent's run cannot continue here. Its
       memory (carrier, buffered segments, reporter) is abandoned, never flushed twice; the
       locks may have been held by other parent threads and are re-created. A child may call
       sw_init again to trace with its own reporter thread and a new process uuid. */
    sw__ids_reseed_after_fork();
    sw__crash_after_fork_child();
    sw__log_pipeline_after_fork_child();
    pthread_mutex_init(&lifecycle, NULL);
    pthread_mutex_init(&sw__agent.registry_lock, NULL);
    if (atomic_load_explicit(&sw__epoch, memory_order_relaxed) != 0) {
        atomic_store_explicit(&sw__epoch, 0, memory_order_relaxed);
        sw__agent.pipeline = NULL;
        sw__agent.carrier = NULL;
        sw__agent.registry_head = NULL;
        sw__agent.run_epoch = 0;
        sw__free_list_init(&sw__agent.pool.free);
        sw__free_list_init(&sw__agent.chunks.free);
        sw__dyncfg_forget();
    }
}
