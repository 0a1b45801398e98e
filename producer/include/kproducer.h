/*
 * kproducer.h - a Kafka producer core in C, with the Java producer's design and configuration
 * names: BufferPool, RecordAccumulator, Sender thread, InFlightRequests, Selector, Metadata.
 *
 * This is the library's one public header. Everything under producer/src/ is internal.
 *
 * Errors: every function that can fail returns KP_OK (0) or a negative KP_E* code from the
 * table below, and its comment lists every code it can return; a delivery report carries one
 * too. kp_err_name and kp_strerror turn a code into text. Where the code alone cannot say what
 * was wrong (which property, which value), a message is also written to the caller's errbuf.
 * The one function without a code is kp_conf_new: out of memory is its only failure, so it
 * returns NULL for it, like malloc.
 */
#ifndef KPRODUCER_H
#define KPRODUCER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Error codes of the library: KP_OK (0) is success, every error is a negative code from this
 * table, in the library's own range -201..-299 (libdatacarrier uses -101..-199 and
 * libskywalking -301..-399, so a code names one library's error whichever library printed
 * it). A new code is appended at the end of the table with the next free number (the range
 * has room up to -299); never renumber. kp_err_name and kp_strerror pick it up from the
 * table, and tests/unit/test_error_codes.c checks that it has a name and a message.
 */
#define KP_ERRNO_MAP(X)                                                                 \
    X(INVAL, -201, "invalid argument")                                                  \
    X(NOMEM, -202, "out of memory")                                                     \
    X(TRUNCATED, -203, "message truncated: a length points past the end of the buffer") \
    X(MALFORMED, -204, "malformed message field")                                       \
    X(NOSPACE, -205, "not enough room in the buffer")                                   \
    X(UNSUPPORTED_VERSION, -206, "no API version supported by both client and broker")  \
    X(CONF, -207, "invalid configuration")                                              \
    X(COMPRESSION, -208, "compression or decompression failed")                         \
    X(CORRUPT, -209, "checksum mismatch")                                               \
    X(MSG_SIZE_TOO_LARGE, -210, "record larger than max.request.size or buffer.memory") \
    X(METADATA_TIMEOUT, -211, "no metadata from any broker within max.block.ms")        \
    X(UNKNOWN_TOPIC, -212, "topic not present in metadata after max.block.ms")          \
    X(BUFFER_TIMEOUT, -213, "no buffer memory freed within max.block.ms")               \
    X(DELIVERY_TIMEOUT, -214, "record not acknowledged within delivery.timeout.ms")     \
    X(CLOSED, -215, "producer closed before the record could be delivered")             \
    X(BROKER, -216, "the broker rejected the record with a non-retriable error")        \
    X(UNKNOWN_PARTITION, -217, "partition out of range for the topic")                  \
    X(RETRIES_EXHAUSTED, -218, "retriable error after all retries were used")           \
    X(TIMED_OUT, -219, "operation timed out")                                           \
    X(NETWORK, -220, "broker connection failed: refused, unreachable, reset or closed") \
    X(AUTH, -221, "SASL authentication failed (wrong credentials or mechanism)")        \
    X(TLS, -222, "TLS handshake with the broker failed")                                \
    X(TLS_UNTRUSTED, -223, "the broker's certificate is not trusted (ssl.truststore)")  \
    X(TLS_HOSTNAME, -224, "the broker's certificate does not match its host name")      \
    X(LIMIT, -225, "a broker's answer exceeds a limit of this library (kp_last_error)")

typedef enum kp_errno {
    KP_OK = 0,
#define KP_ERRNO_ENUM(name, code, text) KP_E##name = code,
    KP_ERRNO_MAP(KP_ERRNO_ENUM)
#undef KP_ERRNO_ENUM
} kp_errno_t;

/* Returns "KP_OK" for 0, "KP_EINVAL" etc. for a code of the table, "unknown" for anything
 * else. Never NULL; any thread. */
const char *kp_err_name(int code);
/* Returns the human message for a code ("success" for 0, "unknown error" for a number not in
 * the table). Never NULL; any thread. */
const char *kp_strerror(int code);

/*
 * Limits on what a broker may answer. A broker, or anyone between it and the producer (the
 * default security.protocol is PLAINTEXT), must not be able to make the host process allocate
 * without bound or loop for long. An answer beyond one of these is refused: the connection is
 * closed and reconnected with backoff, kp_last_error() returns KP_ELIMIT with a message naming
 * the broker and the limit, and a kp_send() waiting for the metadata of a topic it does not
 * know yet returns KP_ELIMIT at once. Kafka's own recommendations stay far below them.
 *   KP_METADATA_MAX_BROKERS     brokers in one Metadata answer (and replicas of a partition)
 *   KP_METADATA_MAX_PARTITIONS  partitions of one topic
 *   KP_METADATA_MAX_TOPICS      topics in one Metadata answer, and topics one producer sends
 *                               to (kp_send to one more returns KP_ELIMIT)
 *   KP_MAX_CONNECTIONS          broker connections open at once; beyond it the producer closes
 *                               its longest idle connection (nothing in flight) first, or
 *                               waits for one to become idle
 * Response frames: ApiVersions, SASL, InitProducerId answers at most KP_MAX_CONTROL_FRAME
 * bytes, Metadata answers KP_MAX_METADATA_FRAME, Produce answers KP_MAX_PRODUCE_FRAME plus
 * 64 KiB per partition in the request; a larger size prefix closes the connection.
 * A SASL session lifetime (SaslAuthenticate v1+, KIP-368) is re-authenticated at 85..95% of
 * it, but never sooner than KP_SASL_REAUTH_MIN_MS after the last authentication, and a
 * lifetime above 30 days counts as 30 days.
 */
#define KP_METADATA_MAX_BROKERS    1024
#define KP_METADATA_MAX_PARTITIONS 16384
#define KP_METADATA_MAX_TOPICS     4096
#define KP_MAX_CONNECTIONS         64
#define KP_MAX_CONTROL_FRAME       (64 * 1024)
#define KP_MAX_METADATA_FRAME      (4 * 1024 * 1024)
#define KP_MAX_PRODUCE_FRAME       (1024 * 1024)
#define KP_SASL_REAUTH_MIN_MS      2000

/* ---------------------------------------------------------------------------------------- */
/* Configuration                                                                             */
/* ---------------------------------------------------------------------------------------- */

/*
 * A set of producer properties with the Java client's names and defaults: bootstrap.servers,
 * client.id, acks (all|-1|0|1; all), enable.idempotence (true), batch.size (16384), linger.ms
 * (5), buffer.memory (33554432), max.block.ms (60000), max.in.flight.requests.per.connection
 * (5), max.request.size (1048576), retries (2147483647), retry.backoff.ms (100),
 * retry.backoff.max.ms (1000), delivery.timeout.ms (120000), request.timeout.ms (30000),
 * compression.type (none|gzip|lz4|zstd), metadata.max.age.ms (300000), connections.max.idle.ms
 * (540000), reconnect.backoff.ms (50), reconnect.backoff.max.ms (1000). Beyond the Java
 * client: batch.max.size (262144; KIP-782): a partition's open batch grows past batch.size, in
 * batch.size blocks, while an older batch of that partition waits to be sent; at most
 * max.request.size; batch.size or less disables growth.
 *
 * Security (the Java client's names, librdkafka's as aliases): security.protocol
 * (PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL; PLAINTEXT); ssl.truststore.type and
 * ssl.keystore.type (PEM only); ssl.truststore.location (alias ssl.ca.location; empty: the
 * system's CA store); ssl.keystore.location (alias ssl.certificate.location: a PEM file with
 * the client certificate chain, and the private key unless ssl.key.location names another
 * file); ssl.key.password (for an encrypted key); ssl.endpoint.identification.algorithm
 * (https: the broker certificate must name the host; empty: not checked); sasl.mechanism
 * (PLAIN|SCRAM-SHA-256|SCRAM-SHA-512; PLAIN); sasl.jaas.config (PlainLoginModule or
 * ScramLoginModule with username= and password= options) or sasl.username and
 * sasl.password. Secret values (ssl.key.password, sasl.password, sasl.jaas.config) never
 * appear in a message of this library.
 *
 * A conf is not thread-safe: one thread builds it, then hands it to kp_producer_new().
 */
typedef struct kp_conf kp_conf_t;

/* Returns a new conf holding every default, or NULL when out of memory (its only failure). The
 * caller owns it and frees it with kp_conf_destroy(). Any thread; never blocks. */
kp_conf_t *kp_conf_new(void);

/* Frees a conf. NULL is a no-op. Cannot fail. */
void kp_conf_destroy(kp_conf_t *conf);

/* Sets property `name` to `value`. Returns KP_OK; KP_EINVAL (conf, name or value NULL); or
 * KP_ECONF (an unknown property, a value that does not parse or is out of range, a string
 * too long) with a message naming the property and the wrong value in errbuf (when errbuf is
 * not NULL; truncated to errlen). On failure the conf is unchanged. Never blocks. */
int kp_conf_set(kp_conf_t *conf, const char *name, const char *value, char *errbuf, size_t errlen);

/* Checks the combination of properties (enable.idempotence with acks != all,
 * max.in.flight.requests.per.connection > 5 or retries = 0 with idempotence,
 * delivery.timeout.ms < linger.ms + request.timeout.ms, a missing bootstrap.servers).
 * Returns KP_OK, KP_EINVAL (conf NULL) or KP_ECONF with a message naming the properties in
 * errbuf. kp_producer_new() calls it. Never blocks. */
int kp_conf_validate(const kp_conf_t *conf, char *errbuf, size_t errlen);

/* ---------------------------------------------------------------------------------------- */
/* Producer                                                                                  */
/* ---------------------------------------------------------------------------------------- */

typedef struct kp_producer kp_producer_t;

/* A record header: key is a NUL-terminated string, value may be NULL (a null header value). */
typedef struct kp_header {
    const char *key;
    const void *value;
    size_t value_len;
} kp_header_t;

/*
 * Delivery report for one record: error is KP_OK on success (then partition and offset are the
 * record's place in the log; offset is -1 with acks=0) or one of KP_EDELIVERY_TIMEOUT (not
 * acknowledged within delivery.timeout.ms), KP_ERETRIES_EXHAUSTED, KP_EBROKER (a
 * non-retriable broker error), KP_EMSG_SIZE_TOO_LARGE (the broker refused the batch as too
 * large), KP_EINVAL (the batch or its request could not be built: compression failed),
 * KP_ENOMEM (out of memory for the request, after the retries) or KP_ECLOSED (failed by
 * kp_close). Runs on the producer's sender thread, also for the records kp_close() fails,
 * exactly once for every record kp_send() accepted. It must not block for long and must not
 * call kp_flush()/kp_close(). It may call kp_send() on the same producer: on its own sender
 * thread kp_send never waits, so a record that needs metadata the producer does not have yet
 * or buffer memory that is not free fails at once (KP_EMETADATA_TIMEOUT, KP_EUNKNOWN_TOPIC,
 * KP_EBUFFER_TIMEOUT) instead of stalling the thread that would end the wait.
 */
typedef void (*kp_delivery_cb_t)(void *opaque, int error, int32_t partition, int64_t offset);

/* Counters of a producer; a snapshot, each field read with relaxed ordering. */
typedef struct kp_stats {
    uint64_t records_sent;    /* records written into ProduceRequests (retries included) */
    uint64_t records_acked;   /* delivery reports with error 0 */
    uint64_t records_failed;  /* delivery reports with an error */
    uint64_t records_retried; /* records sent again after a retriable error */
    uint64_t batches_sent;    /* batches written into ProduceRequests */
    uint64_t bytes_sent;      /* bytes written to sockets */
    int64_t pool_available;   /* BufferPool free + unallocated bytes */
    uint32_t pool_waiters;    /* threads blocked in the BufferPool */
    uint32_t requests_in_flight;
} kp_stats_t;

/*
 * Creates a producer from a copy of conf (the caller keeps conf), starts its sender thread and
 * stores the producer in *out. Never connects synchronously: brokers are contacted by the
 * sender thread. Any thread. Returns:
 *   KP_OK      *out is the producer; the caller ends it with kp_close().
 *   KP_EINVAL  conf or out NULL.
 *   KP_ECONF   kp_conf_validate() refused conf, or a bootstrap.servers entry is not
 *              host:port; errbuf names the properties.
 *   KP_ENOMEM  out of memory, file descriptors (epoll, eventfd) or threads.
 * On an error *out is NULL (when out is not) and a message is in errbuf (when not NULL).
 */
int kp_producer_new(const kp_conf_t *conf, kp_producer_t **out, char *errbuf, size_t errlen);

/*
 * Appends one record (copied; the caller keeps every buffer) for `topic`. partition is a
 * partition number or -1: then a keyed record goes to murmur2(key) like the Java client and
 * an unkeyed one to the sticky partition. timestamp is in ms since the epoch, 0 = now.
 * Returns KP_OK when accepted: cb(opaque, ...) will then run exactly once. Otherwise returns
 * (and cb never runs):
 *   KP_EINVAL               p or topic NULL, topic empty, partition below -1, a NULL key,
 *                           value or headers with a non-zero length or count, a header with
 *                           a NULL key, more than 4096 headers;
 *   KP_EMSG_SIZE_TOO_LARGE  at once, for a record larger than max.request.size or
 *                           buffer.memory;
 *   KP_EMETADATA_TIMEOUT    no metadata for the topic within max.block.ms;
 *   KP_EUNKNOWN_TOPIC       the brokers answered within max.block.ms that the topic does not
 *                           exist;
 *   KP_EUNKNOWN_PARTITION   partition not below the topic's partition count;
 *   KP_EBUFFER_TIMEOUT      no buffer memory freed within what is left of max.block.ms;
 *   KP_ECLOSED              kp_stop_accepting() or kp_close() has begun;
 *   KP_ENOMEM               out of memory (for the topic's state, more than 16 headers, or
 *                           a batch's memory within buffer.memory);
 *   KP_EAUTH, KP_ETLS, KP_ETLS_UNTRUSTED, KP_ETLS_HOSTNAME
 *                           at once, while the topic's metadata is unknown, when the last
 *                           connection attempt failed authentication (kp_last_error says more);
 *   KP_ELIMIT               at once, while the topic's metadata is unknown, when the last
 *                           Metadata answer exceeded a limit (see KP_METADATA_MAX_BROKERS);
 *                           or the producer already sends to KP_METADATA_MAX_TOPICS topics.
 * Any thread, a delivery callback of p too (then it never waits, see kp_delivery_cb_t);
 * blocks only as described.
 * Shutdown: once kp_close() has begun, a kp_send() blocked waiting for metadata or buffer
 * memory returns KP_ECLOSED at once (it does not sit out max.block.ms), and a kp_send()
 * that starts meanwhile returns KP_ECLOSED; kp_close() waits for every such caller to leave
 * kp_send() before it frees anything. The caller must make sure no kp_send() on p *starts*
 * after kp_close() may have returned (p is freed then).
 */
int kp_send(kp_producer_t *p, const char *topic, int32_t partition, const void *key, size_t key_len,
            const void *value, size_t value_len, const kp_header_t *headers, size_t n_headers,
            int64_t timestamp, kp_delivery_cb_t cb, void *opaque);

/*
 * Makes every buffered record ready to send at once and waits until all records accepted
 * before the call have their delivery report, or timeout_ms (< 0: no limit) passes.
 * Returns KP_OK, KP_EINVAL (p NULL) or KP_ETIMED_OUT (records still pending at the
 * deadline; they stay pending). Any thread except the sender (not from a callback).
 */
int kp_flush(kp_producer_t *p, int timeout_ms);

/*
 * Stops accepting records without freeing anything: a kp_send() blocked on metadata or buffer
 * memory returns KP_ECLOSED at once, and every later kp_send() returns KP_ECLOSED. Records
 * already accepted are still delivered (linger is cut short); p stays valid until kp_close().
 * Lets an owner stop its own sending threads (join them) before kp_close(). Any thread; never
 * blocks; calling it again changes nothing. NULL is a no-op. Cannot fail.
 */
void kp_stop_accepting(kp_producer_t *p);

/*
 * Stops accepting records, delivers what it can within timeout_ms (< 0: no limit), fails
 * every record still pending with KP_ECLOSED (their callbacks run before this returns),
 * stops the sender thread and frees the producer. Returns KP_OK when everything was delivered,
 * KP_ETIMED_OUT when records had to be failed, or KP_EINVAL (p NULL; nothing happens).
 * p is invalid afterwards. Call once, from a thread that is not inside kp_send() on the same
 * producer (not from a callback).
 * Other threads may be inside kp_send() when it is called, even blocked there for up to
 * max.block.ms (broker down, buffer full): kp_close() first wakes them (they return
 * KP_ECLOSED) and waits until they have all left kp_send(), which takes no network time;
 * only then does it wait up to timeout_ms for deliveries. Blocks the calling thread.
 */
int kp_close(kp_producer_t *p, int timeout_ms);

/* Fills *stats with a snapshot of the counters (all zero for a NULL p; a NULL stats is
 * ignored). Any thread; never blocks for long. Cannot fail. */
void kp_stats(kp_producer_t *p, kp_stats_t *stats);

/*
 * The most recent connection-level failure (KP_ETLS*, KP_EAUTH) since a connection last
 * became ready, or the last broker answer refused as beyond a limit (KP_ELIMIT, until a
 * Metadata answer is accepted): returns its code (0: none) and writes a message naming the
 * broker and, for SASL, the mechanism, for KP_ELIMIT the limit, into buf (when not NULL;
 * truncated to len). The message never holds a secret. Any thread; never blocks for long.
 */
int kp_last_error(kp_producer_t *p, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* KPRODUCER_H */
