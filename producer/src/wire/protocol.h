/*
 * protocol.h - the Kafka requests and responses the producer uses, per version.
 *
 *   API             key  versions we speak   flexible from   notes
 *   Produce           0  3..11               9               v3+ = RecordBatch v2; v13 (topic ids)
 * never sent Metadata          3  1..12               9               topic id in responses from
 * v10 ApiVersions      18  0..3                3               response header is ALWAYS v0
 *   InitProducerId   22  0..4                2               producer id/epoch in the request from
 * v3
 *   SaslHandshake    17  1                   never           the mechanism
 *   SaslAuthenticate 36  1..2                2               session_lifetime_ms (KIP-368)
 *
 * Framing: every request on the wire is int32 size + header + body. kp__request_begin writes the
 * size placeholder and the header; the body encoder follows; kp__request_end patches the size.
 * Responses: the network layer strips the 4-byte size; kp__response_header_read reads the
 * correlation id (and tagged fields for header v1) and leaves the reader on the body, which the
 * matching kp_*_response_read decodes.
 *
 * Encoders write into a kp_writer_t (normally growable) and return 0 or a negative kp error
 * (KP_EINVAL for a version outside our range or an argument that version cannot carry).
 * Decoders read from a kp_reader_t positioned at the body, fill a plain C struct whose arrays and
 * strings are heap-allocated, and return 0 or KP_ETRUNCATED / KP_EMALFORMED / KP_ENOMEM /
 * KP_EINVAL (version out of range); on error the struct holds nothing that needs freeing (the
 * free function is still safe to call). Free with the response's kp_*_response_free.
 *
 * Threads: all functions are pure over their arguments; call from any thread.
 */
#ifndef KP_WIRE_PROTOCOL_H
#define KP_WIRE_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/codec.h"

enum {
    KP_API_PRODUCE = 0,
    KP_API_METADATA = 3,
    KP_API_API_VERSIONS = 18,
    KP_API_INIT_PRODUCER_ID = 22,
    KP_API_SASL_HANDSHAKE = 17,
    KP_API_SASL_AUTHENTICATE = 36,
};

/* ---- versions ---- */

typedef struct kp_api_version_range {
    int16_t api_key;
    int16_t min_version;
    int16_t max_version;
} kp_api_version_range_t;

/* Our own range for api_key. Returns 0, or KP_EINVAL for an API this layer does not speak. */
int kp__api_supported_range(int16_t api_key, int16_t *min_version, int16_t *max_version);
/* True when (api_key, version) uses the flexible encoding (compact strings, tagged fields). */
bool kp__api_is_flexible(int16_t api_key, int16_t version);
/* Request header version: 2 for flexible versions, else 1. */
int kp__request_header_version(int16_t api_key, int16_t version);
/* Response header version: 1 for flexible versions, else 0; ApiVersions is always 0. */
int kp__response_header_version(int16_t api_key, int16_t version);
/* Picks the version to use for api_key: min(our max, broker max), checked against both
 * minimums. broker_apis: the list from an ApiVersions response. Returns 0 and *version, or
 * KP_EUNSUPPORTED_VERSION when the broker does not list the API or the ranges do not overlap,
 * or KP_EINVAL for an API we do not speak. */
int kp__api_version_pick(const kp_api_version_range_t *broker_apis, size_t n_apis, int16_t api_key,
                         int16_t *version);

/* ---- headers and framing ---- */

/* Starts a framed request: writes the int32 size placeholder, then request header v1 or v2
 * (chosen from api_key/version): api_key, api_version, correlation_id, client_id (nullable
 * int16 string even in v2), and for v2 an empty tagged-field section. Returns the frame's start
 * offset in *frame_start (pass it to kp__request_end). Returns 0 or w->err / KP_EINVAL. */
int kp__request_begin(kp_writer_t *w, int16_t api_key, int16_t version, int32_t correlation_id,
                      const char *client_id, size_t *frame_start);
/* Finishes the frame started at frame_start: patches its size. Returns 0 or w->err. */
int kp__request_end(kp_writer_t *w, size_t frame_start);
/* Reads a response header of the version kp__response_header_version(api_key, version) gives:
 * the correlation id, and for v1 skips the tagged fields. r is then at the body. */
int kp__response_header_read(kp_reader_t *r, int16_t api_key, int16_t version,
                             int32_t *correlation_id);

/* ---- ApiVersions (key 18) ---- */

/* Body of ApiVersionsRequest: empty for v0-v2; for v3 client_software_name and _version
 * (the broker checks them against [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?; NULL = defaults
 * "skywalking-c" / the project version). */
int kp__api_versions_request_write(kp_writer_t *w, int16_t version, const char *software_name,
                                   const char *software_version);

typedef struct kp_api_versions_response {
    int16_t error_code;           /* 35 = UNSUPPORTED_VERSION: see below */
    kp_api_version_range_t *apis; /* n_apis entries, heap */
    size_t n_apis;
    int32_t throttle_time_ms;   /* v1+, else 0 */
    int16_t decoded_as_version; /* the body version actually parsed (0 after a fallback) */
} kp_api_versions_response_t;

/* Decodes an ApiVersions response body of `version` (the header is always v0). When the broker
 * does not support our request version it answers with error 35 and a v0 body that lists its
 * own ApiVersions range; this decoder detects that (error 35, or a body that only parses as
 * v0) and parses v0, setting decoded_as_version = 0. The caller then retries with
 * kp__api_version_pick(..., KP_API_API_VERSIONS, ...). */
int kp__api_versions_response_read(kp_reader_t *r, int16_t version,
                                   kp_api_versions_response_t *out);
void kp__api_versions_response_free(kp_api_versions_response_t *resp);

/* ---- SaslHandshake (key 17) and SaslAuthenticate (key 36; KIP-152) ---- */

int kp__sasl_handshake_request_write(kp_writer_t *w, int16_t version, const char *mechanism);

typedef struct kp_sasl_handshake_response {
    int16_t error_code;   /* 33 UNSUPPORTED_SASL_MECHANISM: `mechanisms` lists the enabled ones */
    char mechanisms[256]; /* the broker's list joined with ',' (truncated), for messages */
} kp_sasl_handshake_response_t;

int kp__sasl_handshake_response_read(kp_reader_t *r, int16_t version,
                                     kp_sasl_handshake_response_t *out);

int kp__sasl_authenticate_request_write(kp_writer_t *w, int16_t version, const void *auth,
                                        size_t len);

typedef struct kp_sasl_authenticate_response {
    int16_t error_code;        /* 58 SASL_AUTHENTICATION_FAILED */
    const char *error_message; /* borrowed from the reader's buffer, NULL when null */
    size_t error_message_len;
    const uint8_t *auth; /* borrowed */
    size_t auth_len;
    int64_t session_lifetime_ms; /* 0: no re-authentication asked for */
} kp_sasl_authenticate_response_t;

/* Decodes a SaslAuthenticate response body; the strings point into r's buffer. */
int kp__sasl_authenticate_response_read(kp_reader_t *r, int16_t version,
                                        kp_sasl_authenticate_response_t *out);

/* ---- Metadata (key 3) ---- */

typedef struct kp_metadata_request {
    const char *const *topics; /* topic names (NUL-terminated); ignored when all_topics */
    size_t n_topics;
    bool all_topics;                /* true: null array = every topic (v1+) */
    bool allow_auto_topic_creation; /* v4+; ignored (broker default: true) below v4 */
} kp_metadata_request_t;

int kp__metadata_request_write(kp_writer_t *w, int16_t version, const kp_metadata_request_t *req);

typedef struct kp_metadata_broker {
    int32_t node_id;
    char *host; /* heap, never NULL after a successful decode */
    int32_t port;
    char *rack; /* heap or NULL */
} kp_metadata_broker_t;

typedef struct kp_metadata_partition {
    int16_t error_code;
    int32_t partition;
    int32_t leader_id;    /* -1: no leader */
    int32_t leader_epoch; /* v7+, else -1 */
    int32_t *replicas;
    size_t n_replicas;
    int32_t *isr;
    size_t n_isr;
    int32_t *offline_replicas; /* v5+ */
    size_t n_offline_replicas;
} kp_metadata_partition_t;

typedef struct kp_metadata_topic {
    int16_t error_code;
    char *name;           /* heap; NULL only if the broker sent null (v12+) */
    uint8_t topic_id[16]; /* v10+, else zeros */
    bool is_internal;
    kp_metadata_partition_t *partitions;
    size_t n_partitions;
    int32_t topic_authorized_operations; /* v8+, else INT32_MIN */
} kp_metadata_topic_t;

typedef struct kp_metadata_response {
    int32_t throttle_time_ms; /* v3+ */
    kp_metadata_broker_t *brokers;
    size_t n_brokers;
    char *cluster_id; /* v2+, heap or NULL */
    int32_t controller_id;
    kp_metadata_topic_t *topics;
    size_t n_topics;
    int32_t cluster_authorized_operations; /* v8-v10, else INT32_MIN */
    /* After KP_ELIMIT: what was over its limit ("brokers", "partitions of a topic", "topics",
       "replicas of a partition"; a static string), how many the answer claimed, the limit. */
    const char *over_what;
    size_t over_count;
    size_t over_limit;
} kp_metadata_response_t;

/* Decodes a Metadata response. Returns 0, or the reader's error (KP_ETRUNCATED,
 * KP_EMALFORMED, KP_ENOMEM) or KP_ELIMIT when an array is longer than kproducer.h's limits
 * (KP_METADATA_MAX_BROKERS, _PARTITIONS, _TOPICS), refused before anything is allocated for
 * it: then out holds nothing but over_what/over_count/over_limit. Fuzzed by
 * fuzz_kafka_metadata. */
int kp__metadata_response_read(kp_reader_t *r, int16_t version, kp_metadata_response_t *out);
void kp__metadata_response_free(kp_metadata_response_t *resp);

/* ---- Produce (key 0) ---- */

typedef struct kp_produce_partition_data {
    int32_t partition;
    const uint8_t *records; /* one closed RecordBatch v2 (borrowed); NULL = null records */
    size_t records_len;
} kp_produce_partition_data_t;

typedef struct kp_produce_topic_data {
    const char *topic; /* NUL-terminated */
    const kp_produce_partition_data_t *partitions;
    size_t n_partitions;
} kp_produce_topic_data_t;

typedef struct kp_produce_request {
    const char *transactional_id; /* NULL for a non-transactional producer */
    int16_t acks;                 /* -1 all, 1 leader, 0 none (then the broker sends no response) */
    int32_t timeout_ms;
    const kp_produce_topic_data_t *topics;
    size_t n_topics;
} kp_produce_request_t;

/* Writes the body; the record bytes are copied into w once. */
int kp__produce_request_write(kp_writer_t *w, int16_t version, const kp_produce_request_t *req);

typedef struct kp_produce_record_error {
    int32_t batch_index;
    char *message; /* heap or NULL */
} kp_produce_record_error_t;

typedef struct kp_produce_partition_response {
    int32_t partition;
    int16_t error_code;
    int64_t base_offset;
    int64_t log_append_time_ms;               /* -1 for CreateTime topics */
    int64_t log_start_offset;                 /* v5+, else -1 */
    kp_produce_record_error_t *record_errors; /* v8+ */
    size_t n_record_errors;
    char *error_message;          /* v8+, heap or NULL */
    int32_t current_leader_id;    /* v10+ tagged CurrentLeader, else -1 */
    int32_t current_leader_epoch; /* v10+ tagged CurrentLeader, else -1 */
} kp_produce_partition_response_t;

typedef struct kp_produce_topic_response {
    char *topic; /* heap */
    kp_produce_partition_response_t *partitions;
    size_t n_partitions;
} kp_produce_topic_response_t;

typedef struct kp_produce_response {
    kp_produce_topic_response_t *topics;
    size_t n_topics;
    int32_t throttle_time_ms;
} kp_produce_response_t;

/* Decodes the body. Top-level tagged field NodeEndpoints (v10+) is skipped. */
int kp__produce_response_read(kp_reader_t *r, int16_t version, kp_produce_response_t *out);
void kp__produce_response_free(kp_produce_response_t *resp);

/* ---- InitProducerId (key 22) ---- */

typedef struct kp_init_producer_id_request {
    const char *transactional_id;   /* NULL for idempotence only */
    int32_t transaction_timeout_ms; /* any value without a transactional id; Java sends 2^31-1 */
    int64_t producer_id;            /* v3+: current id to bump, -1 for a new one */
    int16_t producer_epoch;         /* v3+: current epoch, -1 for a new one */
} kp_init_producer_id_request_t;

int kp__init_producer_id_request_write(kp_writer_t *w, int16_t version,
                                       const kp_init_producer_id_request_t *req);

/* Holds no heap memory: nothing to free. */
typedef struct kp_init_producer_id_response {
    int32_t throttle_time_ms;
    int16_t error_code;
    int64_t producer_id;
    int16_t producer_epoch;
} kp_init_producer_id_response_t;

int kp__init_producer_id_response_read(kp_reader_t *r, int16_t version,
                                       kp_init_producer_id_response_t *out);

#endif /* KP_WIRE_PROTOCOL_H */
