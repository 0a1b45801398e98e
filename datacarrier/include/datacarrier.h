/*
 * datacarrier.h - a bounded, lock-free, multi-producer queue that carries pointers from
 * application threads to a few consumer threads (SkyWalking's DataCarrier, made correct).
 *
 * A carrier holds `channel_size` channels; each channel is a ring of `buffer_size` slots.
 * A producer picks a channel through a partitioner and stores one pointer; consumer threads
 * own channels (`channel % n_threads`) and drain them in batches.
 *
 * Concurrency contract:
 *
 *   operation              may run concurrently with
 *   ---------------------  ---------------------------------------------------------------
 *   dc_produce             any number of dc_produce, the consumer threads, dc_carrier_stats,
 *                          dc_carrier_shutdown (a produce racing shutdown either stores an
 *                          item that is then consumed, or returns false; never both, never lost)
 *   dc_carrier_stats       everything
 *   dc_consume             nothing else that starts or stops consumers (call it once)
 *   dc_carrier_shutdown    dc_produce, dc_carrier_stats; call it once, from one thread
 *   dc_carrier_destroy     nothing: all producers must have returned
 *
 * Nothing on the produce or consume path allocates memory.
 *
 * Errors: every function that can fail returns DC_OK (0) or a negative DC_E* code from the
 * table below, and its comment lists every code it can return; dc_err_name and dc_strerror
 * turn a code into text. dc_carrier_create also writes which argument was wrong to an errbuf
 * (DC_EINVAL alone cannot say it). dc_produce is the one exception: it returns a bool,
 * because a full ring or a closed carrier is an outcome the carrier counts, not an error.
 */
#ifndef DATACARRIER_H
#define DATACARRIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Error codes: DC_OK (0) is success, every error is a negative code from this table, in the
 * library's own range -101..-199 (libkproducer uses -201..-299 and libskywalking -301..-399,
 * so a code names one library's error whichever library printed it). Append a new code at the
 * end with the next free number; never renumber.
 */
#define DC_ERRNO_MAP(X)                                                    \
    X(INVAL, -101, "invalid argument")                                     \
    X(NOMEM, -102, "out of memory")                                        \
    X(STATE, -103, "operation not allowed in the carrier's current state") \
    X(THREAD, -104, "could not start a consumer thread")

typedef enum dc_errno {
    DC_OK = 0,
#define DC_ERRNO_ENUM(name, code, text) DC_E##name = code,
    DC_ERRNO_MAP(DC_ERRNO_ENUM)
#undef DC_ERRNO_ENUM
} dc_errno_t;

/* Returns "DC_OK" for 0, "DC_EINVAL" etc. for a code of the table, "unknown" for anything
 * else. Never NULL; any thread. */
const char *dc_err_name(int code);
/* Returns the human message for a code ("success" for 0, "unknown error" for a number not in
 * the table). Never NULL; any thread. */
const char *dc_strerror(int code);

typedef struct dc_carrier dc_carrier_t;

/* What a producer does when the chosen ring is full. */
typedef enum dc_strategy {
    /* Wait (futex/condvar, not a spin) until a slot frees or the carrier shuts down. */
    DC_STRATEGY_BLOCKING = 0,
    /* Try other channels up to the partitioner's max_retry, then drop and count. */
    DC_STRATEGY_IF_POSSIBLE = 1,
} dc_strategy_t;

/*
 * Chooses the channel for one attempt of one produce. `attempt` counts from 0 and grows on
 * every retry, so a partitioner can move to another channel. Must return a value below
 * `channel_count`, be thread-safe and must not block. `state` is dc_partitioner_t.state.
 */
typedef uint32_t (*dc_partition_fn)(void *state, uint32_t channel_count, uint32_t attempt);

typedef struct dc_partitioner {
    dc_partition_fn partition; /* required */
    void *state;               /* passed to partition; owned by the caller, outlives the carrier */
    uint32_t max_retry;        /* IF_POSSIBLE: attempts before a drop (0 counts as 1) */
} dc_partitioner_t;

/*
 * Built-in partitioners (they cannot fail; any thread). `rolling` spreads produces round-robin with
 * one atomic counter that the carrier owns (state is ignored). `thread` maps the producing thread
 * to a channel (thread id % channels, then +attempt): a producer keeps to one ring, and two
 * producers share a ring (and contend on it) when their thread ids fall on the same channel.
 */
dc_partitioner_t dc_partitioner_rolling(uint32_t max_retry);
dc_partitioner_t dc_partitioner_thread(uint32_t max_retry);

/*
 * Creates a carrier and stores it in *out. `name` is copied (used in thread names and
 * messages). Ring sizes are rounded up to a power of two. Any thread; allocates all memory up
 * front. Returns:
 *   DC_OK      *out is the carrier; the caller frees it with dc_carrier_destroy.
 *   DC_EINVAL  out or name NULL, a zero size, buffer_size above 2^30, channel_size x
 *              buffer_size overflowing the size of memory, an unknown strategy or a NULL
 *              partition function; the reason, naming the argument, is written to errbuf
 *              (when errbuf is not NULL, truncated to errlen).
 *   DC_ENOMEM  the rings could not be allocated (errbuf says how many slots were asked for).
 * On an error *out is NULL (when out is not) and nothing is left allocated.
 */
int dc_carrier_create(const char *name, uint32_t channel_size, uint32_t buffer_size,
                      dc_strategy_t strategy, dc_partitioner_t partitioner, dc_carrier_t **out,
                      char *errbuf, size_t errlen);

/*
 * Stores `item`. Returns true when stored; false when the item was dropped (IF_POSSIBLE and
 * every attempt found a full ring; counted in stats.dropped), the carrier is shut down
 * (counted in stats.rejected), or carrier or item is NULL (not counted). On false the caller
 * still owns the item. Any thread. IF_POSSIBLE never blocks; BLOCKING may wait for a
 * consumer, not for a lock.
 * A bool, not a DC_E* code: a full or closed ring is the carrier's designed answer under load
 * or at shutdown (the stats count it), not an error, and the hot path stays one test; callers
 * that must tell the two apart read dc_carrier_stats.
 */
bool dc_produce(dc_carrier_t *carrier, void *item);

/* Receives a batch drained by one consumer thread. `items` is valid only during the call. */
typedef void (*dc_consume_fn)(void *ctx, void **items, size_t count);
/* Called once, after shutdown has delivered every stored item, on the shutdown caller. */
typedef void (*dc_on_exit_fn)(void *ctx);

/*
 * Starts `n_threads` consumer threads (1..channel_size); channel k belongs to thread
 * k % n_threads. With DC_STRATEGY_IF_POSSIBLE a thread that finds its rings empty first naps
 * `consume_cycle_ms` (0 means 20; cut short when a ring gets half full), so that steady traffic
 * is handled in batches; if they are still empty it sleeps until the next store wakes it (no
 * timed wake-ups while nothing is stored). An item therefore waits at most about one cycle
 * before consume is called (plus consume's own time); a longer cycle costs fewer wake-ups.
 * BLOCKING carriers skip the nap.
 * Returns:
 *   DC_OK       the threads run; consume is called until dc_carrier_shutdown.
 *   DC_EINVAL   carrier or consume NULL, n_threads 0 or above the carrier's channel count.
 *   DC_ESTATE   already consuming, or shut down.
 *   DC_ENOMEM   the consumers' batch arrays could not be allocated.
 *   DC_ETHREAD  a thread could not be started (the ones started are stopped again; no item is
 *               lost and the carrier stays as it was, so dc_consume may be called again).
 * Call once.
 */
int dc_consume(dc_carrier_t *carrier, dc_consume_fn consume, dc_on_exit_fn on_exit, void *ctx,
               uint32_t n_threads, uint32_t consume_cycle_ms);

/*
 * Stops accepting items, lets the consumer threads drain everything stored, joins them and
 * calls on_exit. Without consumers, nothing is delivered and the items stay countable as
 * stats.pending. Blocks until the consumers are done. Returns DC_OK, DC_EINVAL (carrier NULL)
 * or DC_ESTATE (already shut down).
 */
int dc_carrier_shutdown(dc_carrier_t *carrier);

/* Frees the carrier; shuts it down first if needed. Items still stored are not freed. NULL is
 * a no-op. Cannot fail. */
void dc_carrier_destroy(dc_carrier_t *carrier);

typedef struct dc_stats {
    uint64_t produced; /* stored by dc_produce */
    uint64_t consumed; /* handed to consume_fn */
    uint64_t dropped;  /* IF_POSSIBLE: every attempt found a full ring */
    uint64_t rejected; /* produced after shutdown began */
    uint64_t pending;  /* produced - consumed at the moment of reading */
} dc_stats_t;

/*
 * Reads the counters. Exact once producers and consumers are quiescent; while they run each
 * counter is a consistent snapshot of itself. Any thread, never blocks. Cannot fail: a NULL
 * carrier reads as all zeros, a NULL stats is ignored.
 */
void dc_carrier_stats(const dc_carrier_t *carrier, dc_stats_t *stats);

#ifdef __cplusplus
}
#endif

#endif /* DATACARRIER_H */
