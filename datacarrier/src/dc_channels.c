/*
 * dc_channels.c - choosing a channel (partitioners) and storing into it: dc_produce with
 * the IF_POSSIBLE retry-then-drop and the BLOCKING wait.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dc_carrier.h"
#include "dc_consumer.h"
#include "dc_ring.h"
#include "datacarrier.h"

/* Both thread-locals below are read on every dc_produce. In the static TLS block (initial-exec),
   as the agent's own thread context is, except in the objects built for libskywalking.so
   (DC__TLS_DYNAMIC, datacarrier/CMakeLists.txt), which may be loaded with dlopen. */
#ifdef DC__TLS_DYNAMIC
#define DC__TLS_MODEL
#else
#define DC__TLS_MODEL __attribute__((tls_model("initial-exec")))
#endif

/* The rolling partitioner's per-thread base for the current produce: attempt 0 takes the
   next value of the carrier's counter, later attempts of the same produce step from it, so a
   retry always lands on another channel (for attempt < channel_count). Thread-local, not
   shared: a produce's attempts run on one thread without any other partitioner call between
   them, since a partition function must not call dc_produce. */
static _Thread_local uint32_t rolling_base DC__TLS_MODEL;

/* This thread's kernel id, cached: gettid is a system call. 0 = not read yet. */
static _Thread_local uint32_t thread_id DC__TLS_MODEL;

static uint32_t partition_rolling(void *state, uint32_t channel_count, uint32_t attempt)
{
    if (attempt == 0) {
        /* relaxed: the counter only spreads produces; no data is published through it. */
        rolling_base =
            atomic_fetch_add_explicit((_Atomic uint32_t *)state, 1, memory_order_relaxed);
    }
    return (uint32_t)((rolling_base + (uint64_t)attempt) % channel_count);
}

/* hot: placed with the other functions of the produce path (GCC .text.hot). */
__attribute__((hot)) static uint32_t partition_thread(void *state, uint32_t channel_count,
                                                      uint32_t attempt)
{
    (void)state;
    if (thread_id == 0) {
        thread_id = (uint32_t)syscall(SYS_gettid);
    }
    return (uint32_t)((thread_id + (uint64_t)attempt) % channel_count);
}

dc_partitioner_t dc_partitioner_rolling(uint32_t max_retry)
{
    return (dc_partitioner_t){
        .partition = partition_rolling, .state = NULL, .max_retry = max_retry};
}

dc_partitioner_t dc_partitioner_thread(uint32_t max_retry)
{
    return (dc_partitioner_t){.partition = partition_thread, .state = NULL, .max_retry = max_retry};
}

/* Used by dc_carrier_create to point the built-in rolling partitioner at its own counter. */
bool dc__partitioner_is_rolling(const dc_partitioner_t *p)
{
    return p->partition == partition_rolling;
}

static inline dc__ring_t *channel_pick(dc_carrier_t *c, uint32_t attempt)
{
    uint32_t k = c->partitioner.partition(c->partitioner.state, c->channel_count, attempt);
    if (k >= c->channel_count) {
        k %= c->channel_count; /* a misbehaving user partitioner must not index out of range */
    }
    return &c->rings[k];
}

static void count(_Atomic uint64_t *counter)
{
    /* relaxed: a statistic, read by dc_carrier_stats. */
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

/* Everything after a first attempt that found the ring full or closed. */
static __attribute__((noinline)) bool produce_slow(dc_carrier_t *c, void *item, dc__ring_t *ring,
                                                   dc__push_result_t res)
{
    if (res == DC__PUSH_FULL && c->strategy == DC_STRATEGY_BLOCKING) {
        res = dc__ring_push_wait(ring, item);
    }
    for (uint32_t attempt = 1; res == DC__PUSH_FULL && attempt < c->attempts; attempt++) {
        ring = channel_pick(c, attempt);
        res = dc__ring_push(ring, item);
    }
    switch (res) {
    case DC__PUSH_OK:
        dc__consumer_notify(ring);
        return true;
    case DC__PUSH_FULL:
        count(&ring->dropped);
        return false;
    case DC__PUSH_CLOSED:
    default:
        count(&ring->rejected);
        return false;
    }
}

/* hot: as partition_thread. */
__attribute__((hot)) bool dc_produce(dc_carrier_t *c, void *item)
{
    if (__builtin_expect(c == NULL || item == NULL, 0)) {
        return false;
    }
    dc__ring_t *ring = channel_pick(c, 0);
    dc__push_result_t res = dc__ring_push(ring, item);
    if (__builtin_expect(res == DC__PUSH_OK, 1)) {
        dc__consumer_notify(ring);
        return true;
    }
    return produce_slow(c, item, ring, res);
}
