/*
 * producer_impl.h - struct kp_producer: what the application threads and the sender thread
 * share, and the sender's own state.
 *
 * Shared: conf (read-only after creation), pool, acc and md (their own locks), `state`,
 * `pending`, the stats counters (atomics), `done_lock`/`done_cond` (flush/close waiters).
 * Everything under "sender only" is touched by the sender thread alone (and by kp_close()
 * after the sender thread was joined).
 */
#ifndef KP_CORE_PRODUCER_IMPL_H
#define KP_CORE_PRODUCER_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/accumulator.h"
#include "core/buffer_pool.h"
#include "core/conf.h"
#include "core/connection.h"
#include "core/metadata.h"

enum { KP__RUNNING = 0, KP__CLOSING = 1, KP__FORCE_CLOSE = 2 };

/* Batches drained for one node in one pass of the sender loop. */
typedef struct kp__drain_list {
    kp__batch_t **v;
    int n;
    int cap;
    size_t bytes;
} kp__drain_list_t;

struct kp_producer {
    struct kp_conf conf;
    bool idempotent;
    kp_buffer_pool_t *pool;
    kp__accumulator_t acc;
    kp__metadata_t md;
    pthread_t thread;
    /* The epoll set (sender only after creation) and the eventfd that wakes it, with their
     * inodes, by which sender_epoll.c knows whether a descriptor is still the producer's.
     * wakefd: replaced by the sender (release) when the program closed it, read by
     * kp__producer_wake on any thread (acquire); wakefd_ino and epfd* are the sender's. */
    int epfd;
    uint64_t epfd_ino;
    atomic_int wakefd;
    uint64_t wakefd_ino;
    /* Coalesces wakeups: set (acq_rel exchange) by the thread that writes the eventfd, cleared
     * (release store) by the sender before it reads the eventfd; partner: each other. */
    atomic_bool wake_pending;
    /* KP__RUNNING / CLOSING / FORCE_CLOSE: CLOSING written by kp_stop_accepting (seq_cst, see
     * in_send), FORCE_CLOSE by kp_close (release); read by kp_send and the sender (acquire):
     * the partner of each store is every acquire load. */
    atomic_int state;
    /* Threads inside kp_send: incremented (seq_cst) before kp_send reads `state` (seq_cst),
     * decremented (seq_cst) on the way out; kp_close stores `state` (seq_cst) and then waits
     * under done_lock until it is 0, so that no caller is left inside when the producer is
     * freed. seq_cst on all four makes the store/load pairs a Dekker handshake: either the
     * caller sees CLOSING, or kp_close sees it counted. A caller that sees state != RUNNING
     * on the way out decrements under done_lock and broadcasts done_cond; one that sees RUNNING
     * only decrements, and kp_close's wait re-checks every millisecond (send_leave). */
    atomic_int in_send;
    /* Records accepted and not yet reported; decremented by the sender after the callbacks.
     * Read under done_lock by waiters; the sender broadcasts done_cond under done_lock when it
     * reaches 0, so a waiter cannot miss the transition. */
    atomic_llong pending;
    pthread_mutex_t done_lock;
    pthread_cond_t done_cond; /* CLOCK_MONOTONIC */
    /* Stats, relaxed: independent counters, read as a snapshot. */
    atomic_ullong st_sent, st_acked, st_failed, st_retried, st_batches, st_bytes;
    atomic_uint st_in_flight;
    /* The last connection-level failure (kp_last_error): written by the sender, read by any
     * thread, both under error_lock. */
    pthread_mutex_t error_lock;
    int last_error;
    char last_error_msg[512];
    /* Security, immutable after creation: the TLS client context (tls.c, NULL without TLS)
     * and the SASL credentials (from sasl.jaas.config or sasl.username/sasl.password). */
    void *tls_ctx;
    char sasl_username[KP__SECRET_MAX];
    char sasl_password[KP__SECRET_MAX];

    /* ---- sender only ---- */
    kp__conn_t **conns; /* sorted by node_id, bootstrap ones (negative ids) first */
    int n_conns;
    int n_bootstrap;
    kp__drain_list_t *drain; /* one per conn, index-aligned with conns */
    int pruned_version;      /* md.version when conns were last pruned */
    int32_t next_correlation;
    /* What handles the answers to Produce and to every other API: set by kp__sender_run, so
       that sender_io.c and sender_conns.c dispatch to sender_produce.c and sender_control.c
       without calling up into them (docs/ARCHITECTURE.md, section 4b, step 6). */
    const struct kp__request_handler *produce_handler;
    const struct kp__request_handler *control_handler;
    bool metadata_in_flight;
    bool pid_in_flight;
    bool need_pid; /* idempotence: (re)acquire a producer id before sending */
    int64_t producer_id;
    int16_t producer_epoch;
    int64_t produce_in_flight; /* Produce requests awaiting a response */
};

/* Wakes the sender from its poll. Any thread. */
void kp__producer_wake(void *producer);

/* The sender thread's body. */
void *kp__sender_run(void *producer);

/* ---- sender internals (sender.c, sender_io.c, sender_produce.c) ---- */

/* The connection table (sender_conns.c). Connection for a node id (a binary search), created
 * from metadata on first use; NULL when unknown or out of memory. Inserting moves entries of
 * conns and drain (pointers to connections stay valid, indices do not). */
kp__conn_t *kp__sender_conn(kp_producer_t *p, int32_t node_id);
/* The index of node_id's connection in conns, or -1. */
int kp__sender_conn_index(const kp_producer_t *p, int32_t node_id);
/* True when one more socket may be opened: fewer than KP_MAX_CONNECTIONS are open, or the
 * longest idle one (ready, nothing queued) was closed to make room. */
bool kp__sender_conn_room(kp_producer_t *p, int64_t now);
/* Frees the connections of brokers no longer in the metadata that are closed and hold
 * nothing. Not while any caller holds a conn pointer or index (the loop's top only). */
void kp__sender_conns_prune(kp_producer_t *p);
/* Starts connecting when the backoff allows. */
void kp__sender_maybe_connect(kp_producer_t *p, kp__conn_t *c, int64_t now);
/* Frames and queues a request on a connection and tries to write it. Takes ownership of
 * batches (may be NULL). Returns 0 or a negative error (the caller still owns batches). */
int kp__sender_send(kp_producer_t *p, kp__conn_t *c, int16_t api, int16_t version,
                    kp_writer_t *body, bool expect_response, kp__batch_t **batches, int n,
                    int64_t now);
/* Closes a connection with nothing in flight without counting a failure or asking for
 * metadata (making room under KP_MAX_CONNECTIONS): it may connect again at once. */
void kp__sender_close_idle(kp_producer_t *p, kp__conn_t *c, int64_t now);
/* Closes a connection and fails or retries everything it had in flight. */
void kp__sender_disconnect(kp_producer_t *p, kp__conn_t *c, int64_t now);
/* Polls the sockets for up to timeout_ms and handles what happened. */
void kp__sender_poll(kp_producer_t *p, int64_t timeout_ms);

/* The epoll set and wakeup eventfd (sender_epoll.c). Open: makes both and registers the
 * eventfd; returns 0 or KP_ENOMEM (what was made is in epfd/wakefd for producer_free). */
int kp__sender_epoll_open(kp_producer_t *p);
/* epoll_wait failed with EBADF or EINVAL (the program closed the epoll set): makes a new one,
 * a new eventfd if that was closed too, registers every connection whose socket is still
 * the producer's, and drops the others without closing their numbers. When no new set can be
 * made, records why for kp_last_error and waits timeout_ms instead. */
void kp__sender_epoll_recover(kp_producer_t *p, int64_t now, int64_t timeout_ms);
/*
 * What an epoll event of the producer's set carries (data.u64): a tag in the high 32 bits and,
 * for a connection, its node id in the low 32 (looked up again, never a pointer). An event
 * with another tag did not come from our set: the program closed it and made an epoll set of
 * its own under the same number, which the sender must not read (kp__sender_poll recovers).
 */
#define KP__EPOLL_KEY_WAKE UINT64_C(0x6b70657700000000) /* "kpew": the wakeup eventfd */
#define KP__EPOLL_TAG_CONN UINT64_C(0x6b70656300000000) /* "kpec": a connection */
static inline uint64_t kp__epoll_key_conn(int32_t node_id)
{
    return KP__EPOLL_TAG_CONN | (uint32_t)node_id;
}
/* True when p->epfd is still the producer's epoll set (its eventfd is registered in it). */
bool kp__sender_epoll_ours(const kp_producer_t *p);
/* True when fd is open and still the file of inode ino (kp__fd_ino when it was opened). */
bool kp__sender_fd_ours(int fd, uint64_t ino);

/* Records a connection-level failure for kp_last_error (code 0 clears it, unless it is
 * KP_ELIMIT). The metadata
 * waiters of kp_send learn KP_EAUTH / KP_ETLS* at once (kp__metadata_fail_waiters). */
void kp__sender_set_error(kp_producer_t *p, int code, const char *msg);
/* A broker's answer beyond a limit of kproducer.h: KP_ELIMIT with msg for kp_last_error (a
 * connection becoming ready does not clear it) and for the metadata waiters of kp_send. */
void kp__sender_limit_error(kp_producer_t *p, const char *msg);
/* A Metadata answer was accepted: a KP_ELIMIT in kp_last_error is over. */
void kp__sender_clear_limit_error(kp_producer_t *p);

/* Sends Metadata / InitProducerId when due (sender_control.c). */
void kp__sender_maybe_update_metadata(kp_producer_t *p, int64_t now);
void kp__sender_maybe_init_pid(kp_producer_t *p, int64_t now);
/* Handles a response frame of a control API; returns 0, or a KP_E* code (the response could not
 * be decoded or used: KP_ETRUNCATED, KP_EMALFORMED, KP_EUNSUPPORTED_VERSION, KP_ENOMEM...)
 * after which the caller drops the connection. */
int kp__sender_handle_control(kp_producer_t *p, kp__conn_t *c, kp__request_t *r, kp_reader_t *body,
                              int64_t now);

/*
 * What the requests of one kind need from the sender's I/O: the handler of their answers, of
 * a request written that expects none (Produce with acks=0; NULL when the kind has none), and
 * of a request its connection lost before the answer (retried or failed). Sender thread.
 */
typedef struct kp__request_handler {
    int (*response)(kp_producer_t *p, kp__conn_t *c, kp__request_t *r, kp_reader_t *body,
                    int64_t now);
    void (*written)(kp_producer_t *p, kp__request_t *r);
    void (*failed)(kp_producer_t *p, kp__request_t *r, int64_t now);
} kp__request_handler_t;
extern const kp__request_handler_t kp__sender_control_handler; /* sender_control.c */
extern const kp__request_handler_t kp__sender_produce_handler; /* sender_produce.c */

/* The handler of requests of `api` (p's, set by kp__sender_run). */
static inline const kp__request_handler_t *kp__sender_handler(const kp_producer_t *p, int16_t api)
{
    return api == KP_API_PRODUCE ? p->produce_handler : p->control_handler;
}

/* Produce path (sender_produce.c). */
int64_t kp__sender_send_produce(kp_producer_t *p, int64_t now);
/* Handles a Produce response; returns 0, or KP_EMALFORMED when it was not a valid answer to r
 * (r was then handled as disconnected and the caller must close the connection). */
int kp__sender_handle_produce(kp_producer_t *p, kp__conn_t *c, kp__request_t *r, kp_reader_t *body,
                              int64_t now);
void kp__sender_produce_failed(kp_producer_t *p, kp__request_t *r, int64_t now);
void kp__sender_produce_written(kp_producer_t *p, kp__request_t *r);
/* Fails the batches whose delivery.timeout.ms has passed with KP_EDELIVERY_TIMEOUT, or, with
 * `all` (the producer is closing), every queued batch with KP_ECLOSED. */
void kp__sender_expire(kp_producer_t *p, int64_t now, bool all);
/* MESSAGE_TOO_LARGE on a batch of more than one record (sender_split.c): splits b into
 * batches of at most half its record bytes (and at most batch.size), which keep b's order
 * and sequence numbers and go back to the front of the partition, and frees b without
 * running callbacks. Returns 0, or a negative error when b could not be split (b is then
 * untouched and the caller fails it). */
int kp__sender_split(kp_producer_t *p, kp__batch_t *b, int64_t now);
/* Completes a batch: callbacks, counters, block back to the pool. */
void kp__sender_complete(kp_producer_t *p, kp__batch_t *b, int error, int64_t base_offset);

#endif /* KP_CORE_PRODUCER_IMPL_H */
