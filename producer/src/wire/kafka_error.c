/*
 * kafka_error.c - names and producer classification of Kafka broker error codes.
 */
#include "wire/kafka_error.h"

const char *kp__kafka_error_name(int16_t code)
{
    switch (code) {
#define KP_KAFKA_ERROR_NAME_CASE(name, num) \
    case num:                               \
        return #name;
        KP_KAFKA_ERROR_MAP(KP_KAFKA_ERROR_NAME_CASE)
#undef KP_KAFKA_ERROR_NAME_CASE
    default:
        return "UNKNOWN_ERROR_CODE";
    }
}

bool kp__kafka_error_known(int16_t code)
{
    switch (code) {
#define KP_KAFKA_ERROR_KNOWN_CASE(name, num) case num:
        KP_KAFKA_ERROR_MAP(KP_KAFKA_ERROR_KNOWN_CASE)
#undef KP_KAFKA_ERROR_KNOWN_CASE
        return true;
    default:
        return false;
    }
}

kp_kafka_error_class_t kp__kafka_error_classify(int16_t code, int32_t batch_record_count)
{
    switch (code) {
    case KP_KAFKA_ERR_NONE:
    case KP_KAFKA_ERR_DUPLICATE_SEQUENCE_NUMBER:
        return KP_KAFKA_ERROR_SUCCESS;
    case KP_KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION:
    case KP_KAFKA_ERR_LEADER_NOT_AVAILABLE:
    case KP_KAFKA_ERR_NOT_LEADER_OR_FOLLOWER:
    case KP_KAFKA_ERR_NETWORK_EXCEPTION:
    case KP_KAFKA_ERR_KAFKA_STORAGE_ERROR:
    /* Beyond DESIGN.md: the Java client's InvalidMetadataException subclasses (retriable,
     * and they make the producer refresh metadata), and BROKER_NOT_AVAILABLE. */
    case KP_KAFKA_ERR_BROKER_NOT_AVAILABLE:
    case KP_KAFKA_ERR_REPLICA_NOT_AVAILABLE:
    case KP_KAFKA_ERR_LISTENER_NOT_FOUND:
    case KP_KAFKA_ERR_FENCED_LEADER_EPOCH:
    case KP_KAFKA_ERR_UNKNOWN_LEADER_EPOCH:
    case KP_KAFKA_ERR_UNKNOWN_TOPIC_ID:
    case KP_KAFKA_ERR_INCONSISTENT_TOPIC_ID:
        return KP_KAFKA_ERROR_RETRIABLE_REFRESH;
    case KP_KAFKA_ERR_REQUEST_TIMED_OUT:
    case KP_KAFKA_ERR_NOT_ENOUGH_REPLICAS:
    case KP_KAFKA_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case KP_KAFKA_ERR_THROTTLING_QUOTA_EXCEEDED:
    /* Beyond DESIGN.md: the Java client's other RetriableException subclasses. Most never
     * answer a Produce request; they are listed so that none of them fails a batch. */
    case KP_KAFKA_ERR_CORRUPT_MESSAGE:
    case KP_KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS:
    case KP_KAFKA_ERR_COORDINATOR_NOT_AVAILABLE:
    case KP_KAFKA_ERR_NOT_COORDINATOR:
    case KP_KAFKA_ERR_NOT_CONTROLLER:
    case KP_KAFKA_ERR_FETCH_SESSION_ID_NOT_FOUND:
    case KP_KAFKA_ERR_INVALID_FETCH_SESSION_EPOCH:
    case KP_KAFKA_ERR_OFFSET_NOT_AVAILABLE:
    case KP_KAFKA_ERR_PREFERRED_LEADER_NOT_AVAILABLE:
    case KP_KAFKA_ERR_ELIGIBLE_LEADERS_NOT_AVAILABLE:
    case KP_KAFKA_ERR_ELECTION_NOT_NEEDED:
    case KP_KAFKA_ERR_UNSTABLE_OFFSET_COMMIT:
    case KP_KAFKA_ERR_FETCH_SESSION_TOPIC_ID_ERROR:
        return KP_KAFKA_ERROR_RETRIABLE;
    case KP_KAFKA_ERR_MESSAGE_TOO_LARGE:
        return batch_record_count > 1 ? KP_KAFKA_ERROR_SPLIT : KP_KAFKA_ERROR_FATAL;
    default:
        return KP_KAFKA_ERROR_FATAL;
    }
}

const char *kp__kafka_error_class_name(kp_kafka_error_class_t cls)
{
    switch (cls) {
    case KP_KAFKA_ERROR_SUCCESS:
        return "SUCCESS";
    case KP_KAFKA_ERROR_RETRIABLE_REFRESH:
        return "RETRIABLE_REFRESH";
    case KP_KAFKA_ERROR_RETRIABLE:
        return "RETRIABLE";
    case KP_KAFKA_ERROR_SPLIT:
        return "SPLIT";
    case KP_KAFKA_ERROR_FATAL:
        return "FATAL";
    }
    return "UNKNOWN";
}
