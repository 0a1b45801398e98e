/*
 * kafka_error.h - the error codes a Kafka broker puts in responses (int16), with their names,
 * and how the producer treats each one.
 *
 * Classification (DESIGN.md "Errors", extended with the Java client's retriable errors):
 *   SUCCESS            0, and 46 DUPLICATE_SEQUENCE_NUMBER (the broker already has the batch)
 *   RETRIABLE_REFRESH  3, 5, 6, 13, 56: retry after a metadata refresh (leader moved / gone);
 *                      also 8, 9, 72, 74, 75, 100, 103 (Java: InvalidMetadataException)
 *   RETRIABLE          7, 19, 20, 89: retry as is after backoff; also 2 CORRUPT_MESSAGE,
 *                      14, 15, 16, 41, 70, 71, 78, 80, 83, 84, 88, 106 (Java: the other
 *                      RetriableException subclasses)
 *   SPLIT              10 MESSAGE_TOO_LARGE on a batch of more than one record: split, retry
 *   FATAL              10 on a one-record batch, 18, 29, 45, 47, 59, 87, -1, and every code
 *                      not listed above (fail the batch; never retry an unknown condition)
 * Pure functions, any thread.
 */
#ifndef KP_WIRE_KAFKA_ERROR_H
#define KP_WIRE_KAFKA_ERROR_H

#include <stdbool.h>
#include <stdint.h>

#define KP_KAFKA_ERROR_MAP(X)                    \
    X(UNKNOWN_SERVER_ERROR, -1)                  \
    X(NONE, 0)                                   \
    X(OFFSET_OUT_OF_RANGE, 1)                    \
    X(CORRUPT_MESSAGE, 2)                        \
    X(UNKNOWN_TOPIC_OR_PARTITION, 3)             \
    X(INVALID_FETCH_SIZE, 4)                     \
    X(LEADER_NOT_AVAILABLE, 5)                   \
    X(NOT_LEADER_OR_FOLLOWER, 6)                 \
    X(REQUEST_TIMED_OUT, 7)                      \
    X(BROKER_NOT_AVAILABLE, 8)                   \
    X(REPLICA_NOT_AVAILABLE, 9)                  \
    X(MESSAGE_TOO_LARGE, 10)                     \
    X(STALE_CONTROLLER_EPOCH, 11)                \
    X(OFFSET_METADATA_TOO_LARGE, 12)             \
    X(NETWORK_EXCEPTION, 13)                     \
    X(COORDINATOR_LOAD_IN_PROGRESS, 14)          \
    X(COORDINATOR_NOT_AVAILABLE, 15)             \
    X(NOT_COORDINATOR, 16)                       \
    X(INVALID_TOPIC_EXCEPTION, 17)               \
    X(RECORD_LIST_TOO_LARGE, 18)                 \
    X(NOT_ENOUGH_REPLICAS, 19)                   \
    X(NOT_ENOUGH_REPLICAS_AFTER_APPEND, 20)      \
    X(INVALID_REQUIRED_ACKS, 21)                 \
    X(ILLEGAL_GENERATION, 22)                    \
    X(INCONSISTENT_GROUP_PROTOCOL, 23)           \
    X(INVALID_GROUP_ID, 24)                      \
    X(UNKNOWN_MEMBER_ID, 25)                     \
    X(INVALID_SESSION_TIMEOUT, 26)               \
    X(REBALANCE_IN_PROGRESS, 27)                 \
    X(INVALID_COMMIT_OFFSET_SIZE, 28)            \
    X(TOPIC_AUTHORIZATION_FAILED, 29)            \
    X(GROUP_AUTHORIZATION_FAILED, 30)            \
    X(CLUSTER_AUTHORIZATION_FAILED, 31)          \
    X(INVALID_TIMESTAMP, 32)                     \
    X(UNSUPPORTED_SASL_MECHANISM, 33)            \
    X(ILLEGAL_SASL_STATE, 34)                    \
    X(UNSUPPORTED_VERSION, 35)                   \
    X(TOPIC_ALREADY_EXISTS, 36)                  \
    X(INVALID_PARTITIONS, 37)                    \
    X(INVALID_REPLICATION_FACTOR, 38)            \
    X(INVALID_REPLICA_ASSIGNMENT, 39)            \
    X(INVALID_CONFIG, 40)                        \
    X(NOT_CONTROLLER, 41)                        \
    X(INVALID_REQUEST, 42)                       \
    X(UNSUPPORTED_FOR_MESSAGE_FORMAT, 43)        \
    X(POLICY_VIOLATION, 44)                      \
    X(OUT_OF_ORDER_SEQUENCE_NUMBER, 45)          \
    X(DUPLICATE_SEQUENCE_NUMBER, 46)             \
    X(INVALID_PRODUCER_EPOCH, 47)                \
    X(INVALID_TXN_STATE, 48)                     \
    X(INVALID_PRODUCER_ID_MAPPING, 49)           \
    X(INVALID_TRANSACTION_TIMEOUT, 50)           \
    X(CONCURRENT_TRANSACTIONS, 51)               \
    X(TRANSACTION_COORDINATOR_FENCED, 52)        \
    X(TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 53) \
    X(SECURITY_DISABLED, 54)                     \
    X(OPERATION_NOT_ATTEMPTED, 55)               \
    X(KAFKA_STORAGE_ERROR, 56)                   \
    X(LOG_DIR_NOT_FOUND, 57)                     \
    X(SASL_AUTHENTICATION_FAILED, 58)            \
    X(UNKNOWN_PRODUCER_ID, 59)                   \
    X(REASSIGNMENT_IN_PROGRESS, 60)              \
    X(DELEGATION_TOKEN_AUTH_DISABLED, 61)        \
    X(DELEGATION_TOKEN_NOT_FOUND, 62)            \
    X(DELEGATION_TOKEN_OWNER_MISMATCH, 63)       \
    X(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, 64)  \
    X(DELEGATION_TOKEN_AUTHORIZATION_FAILED, 65) \
    X(DELEGATION_TOKEN_EXPIRED, 66)              \
    X(INVALID_PRINCIPAL_TYPE, 67)                \
    X(NON_EMPTY_GROUP, 68)                       \
    X(GROUP_ID_NOT_FOUND, 69)                    \
    X(FETCH_SESSION_ID_NOT_FOUND, 70)            \
    X(INVALID_FETCH_SESSION_EPOCH, 71)           \
    X(LISTENER_NOT_FOUND, 72)                    \
    X(TOPIC_DELETION_DISABLED, 73)               \
    X(FENCED_LEADER_EPOCH, 74)                   \
    X(UNKNOWN_LEADER_EPOCH, 75)                  \
    X(UNSUPPORTED_COMPRESSION_TYPE, 76)          \
    X(STALE_BROKER_EPOCH, 77)                    \
    X(OFFSET_NOT_AVAILABLE, 78)                  \
    X(MEMBER_ID_REQUIRED, 79)                    \
    X(PREFERRED_LEADER_NOT_AVAILABLE, 80)        \
    X(GROUP_MAX_SIZE_REACHED, 81)                \
    X(FENCED_INSTANCE_ID, 82)                    \
    X(ELIGIBLE_LEADERS_NOT_AVAILABLE, 83)        \
    X(ELECTION_NOT_NEEDED, 84)                   \
    X(NO_REASSIGNMENT_IN_PROGRESS, 85)           \
    X(GROUP_SUBSCRIBED_TO_TOPIC, 86)             \
    X(INVALID_RECORD, 87)                        \
    X(UNSTABLE_OFFSET_COMMIT, 88)                \
    X(THROTTLING_QUOTA_EXCEEDED, 89)             \
    X(PRODUCER_FENCED, 90)                       \
    X(RESOURCE_NOT_FOUND, 91)                    \
    X(DUPLICATE_RESOURCE, 92)                    \
    X(UNACCEPTABLE_CREDENTIAL, 93)               \
    X(INCONSISTENT_VOTER_SET, 94)                \
    X(INVALID_UPDATE_VERSION, 95)                \
    X(FEATURE_UPDATE_FAILED, 96)                 \
    X(PRINCIPAL_DESERIALIZATION_FAILURE, 97)     \
    X(SNAPSHOT_NOT_FOUND, 98)                    \
    X(POSITION_OUT_OF_RANGE, 99)                 \
    X(UNKNOWN_TOPIC_ID, 100)                     \
    X(DUPLICATE_BROKER_REGISTRATION, 101)        \
    X(BROKER_ID_NOT_REGISTERED, 102)             \
    X(INCONSISTENT_TOPIC_ID, 103)                \
    X(INCONSISTENT_CLUSTER_ID, 104)              \
    X(TRANSACTIONAL_ID_NOT_FOUND, 105)           \
    X(FETCH_SESSION_TOPIC_ID_ERROR, 106)         \
    X(INELIGIBLE_REPLICA, 107)                   \
    X(NEW_LEADER_ELECTED, 108)                   \
    X(OFFSET_MOVED_TO_TIERED_STORAGE, 109)       \
    X(FENCED_MEMBER_EPOCH, 110)                  \
    X(UNRELEASED_INSTANCE_ID, 111)               \
    X(UNSUPPORTED_ASSIGNOR, 112)                 \
    X(STALE_MEMBER_EPOCH, 113)                   \
    X(MISMATCHED_ENDPOINT_TYPE, 114)             \
    X(UNSUPPORTED_ENDPOINT_TYPE, 115)            \
    X(UNKNOWN_CONTROLLER_ID, 116)                \
    X(UNKNOWN_SUBSCRIPTION_ID, 117)              \
    X(TELEMETRY_TOO_LARGE, 118)                  \
    X(INVALID_REGISTRATION, 119)                 \
    X(TRANSACTION_ABORTABLE, 120)

typedef enum kp_kafka_error {
#define KP_KAFKA_ERROR_ENUM(name, code) KP_KAFKA_ERR_##name = code,
    KP_KAFKA_ERROR_MAP(KP_KAFKA_ERROR_ENUM)
#undef KP_KAFKA_ERROR_ENUM
} kp_kafka_error_t;

typedef enum kp_kafka_error_class {
    KP_KAFKA_ERROR_SUCCESS = 0,
    KP_KAFKA_ERROR_RETRIABLE_REFRESH,
    KP_KAFKA_ERROR_RETRIABLE,
    KP_KAFKA_ERROR_SPLIT,
    KP_KAFKA_ERROR_FATAL,
} kp_kafka_error_class_t;

/* "NOT_LEADER_OR_FOLLOWER" etc.; "UNKNOWN_ERROR_CODE" for a code not in the table. Never NULL;
 * static storage. */
const char *kp__kafka_error_name(int16_t code);
/* Whether code is one of the codes above (a response with another code is damaged). */
bool kp__kafka_error_known(int16_t code);
/* How to treat `code` for a batch of batch_record_count records (see the table above). */
kp_kafka_error_class_t kp__kafka_error_classify(int16_t code, int32_t batch_record_count);
/* Name of a class: "SUCCESS", "RETRIABLE_REFRESH", "RETRIABLE", "SPLIT", "FATAL". */
const char *kp__kafka_error_class_name(kp_kafka_error_class_t cls);

#endif /* KP_WIRE_KAFKA_ERROR_H */
