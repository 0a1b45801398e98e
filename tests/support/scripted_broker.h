/*
 * scripted_broker.h - a TEST DOUBLE of a Kafka broker, for the errors a real broker will not
 * produce on demand. It speaks just enough of the protocol for the producer's sender:
 * ApiVersions (v0..v3), Metadata v1, InitProducerId v0 and Produce v3 (it advertises only
 * those versions), one node (id 0) on a loopback port, one topic.
 *
 * It keeps a log per partition and checks sequences like a broker does for an idempotent
 * producer: a batch whose base sequence follows the producer's last one is appended; one
 * equal to an earlier appended batch's is a duplicate (answered DUPLICATE_SEQUENCE_NUMBER
 * with the original offset); anything else is OUT_OF_ORDER_SEQUENCE_NUMBER. A batch without
 * a producer id is always appended. As in Kafka, the first batch of a producer id the
 * partition has no state for may carry any sequence.
 *
 * A script (a function the test gives) sees every Produce request when it arrives, before
 * anything is appended, and may inject an error per partition, set throttle_time_ms, hold
 * the response, release what is held, close the connection, or damage the response.
 *
 * Threads: the broker runs one thread. Every field of sb_broker_t below "lock" and the
 * script's calls are under `lock`; the test reads them with sb_lock()/sb_unlock().
 */
#ifndef SCRIPTED_BROKER_H
#define SCRIPTED_BROKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SB_MAX_PARTITIONS 8
#define SB_MAX_IDS        256 /* record ids kept per batch */
#define SB_MAX_REQUESTS   4096
#define SB_MAX_LOG        65536 /* records per partition */

/* What the script does with a Produce request (sb_request_t.action). */
enum {
    SB_ANSWER = 0, /* answer it (after whatever is held, in order) */
    SB_HOLD,       /* keep its response (its batches are appended as usual) */
    SB_RELEASE,    /* answer everything held, then this one */
    SB_DISCONNECT, /* close the connection: nothing held nor this one is answered */
};

/* How the response is damaged (sb_request_t.damage). */
enum {
    SB_DAMAGE_NONE = 0,
    SB_DAMAGE_EXTRA_PARTITION,   /* also answers a partition that was not asked for */
    SB_DAMAGE_MISSING_PARTITION, /* leaves out the last partition */
    SB_DAMAGE_CORRELATION,       /* a correlation id off by one */
    SB_DAMAGE_TRUNCATED,         /* the body cut short (frame size matches) */
    SB_DAMAGE_UNKNOWN_ERROR,     /* error code 12345 on the first partition */
};

typedef struct sb_batch {
    int32_t partition;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t count;
    long ids[SB_MAX_IDS]; /* record values parsed as decimal ids (first SB_MAX_IDS) */
    int16_t inject;       /* script: answer with this error instead (nothing appended) */
    int16_t error;        /* the error answered */
    int64_t offset;       /* the base offset answered (-1 on errors) */
} sb_batch_t;

typedef struct sb_request {
    int index;           /* Produce requests in arrival order, from 0 */
    int conn;            /* connection number, from 0 */
    int64_t at_ms;       /* CLOCK_MONOTONIC arrival */
    int64_t answered_ms; /* when its response was written, or -1 */
    int16_t acks;
    int n;
    sb_batch_t batches[SB_MAX_PARTITIONS];
    /* script: */
    int32_t throttle_ms;
    int32_t delay_ms; /* answer this much later (later responses wait behind it) */
    int action;
    int damage;
} sb_request_t;

typedef struct sb_broker sb_broker_t;
typedef void (*sb_script_fn)(void *arg, sb_broker_t *sb, sb_request_t *req);

struct sb_broker {
    int listen_fd;
    int port;
    char bootstrap[64]; /* "127.0.0.1:port" */
    char topic[64];
    int32_t n_partitions;
    pthread_t thread;
    int stop_fd; /* eventfd: stop the thread */
    pthread_mutex_t lock;
    /* lock: */
    sb_script_fn script;
    void *script_arg;
    sb_request_t *requests; /* SB_MAX_REQUESTS */
    int n_requests;
    long *log[SB_MAX_PARTITIONS]; /* record ids in offset order */
    int64_t log_len[SB_MAX_PARTITIONS];
    int n_conns;               /* connections accepted */
    int n_metadata;            /* Metadata requests */
    int n_init_pid;            /* InitProducerId requests */
    int64_t next_pid;          /* handed out by InitProducerId */
    int n_closed_by_client;    /* connections the client closed */
    int damage_metadata;       /* test: the next this many Metadata responses number the last
                                  partition 1000 * n_partitions */
    struct sb_pstate *pstates; /* per partition: the sequence state of the last producer id */
    /* A hostile broker (tests of kproducer.h's limits). Metadata answers are streamed, never
       built in memory, so the double's own memory stays small whatever it claims. */
    int64_t md_brokers;          /* > 0: Metadata answers list this many brokers, ids 0..n-1, all at
                                    this broker's address */
    int64_t md_partitions;       /* > 0: the topic has this many partitions in Metadata answers,
                                    partition k led by broker k % md_brokers; a Produce to a
                                    partition >= n_partitions is answered as appended, not logged */
    uint32_t api_versions_claim; /* > 0: ApiVersions answers announce a frame this long and
                                    send zeros until the client closes or it is sent */
    int max_open;                /* the most connections open at once */
};

/* Starts a broker on a free loopback port for `topic` with n_partitions (<= 8) and the
 * script (may be NULL: answer everything). Fails the test on error. */
sb_broker_t *sb_start(const char *topic, int32_t n_partitions, sb_script_fn script, void *arg);
/* Stops the thread, closes every socket, frees everything. */
void sb_stop(sb_broker_t *sb);
void sb_lock(sb_broker_t *sb);
void sb_unlock(sb_broker_t *sb);

#endif /* SCRIPTED_BROKER_H */
