/*
 * fuzz_kafka_produce.c - Produce response decoder on arbitrary bytes.
 * Input: byte 0 selects the version (3..11), the rest is the response body.
 */
#include <stddef.h>
#include <stdint.h>

#include "wire/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    int16_t version = (int16_t)(3 + data[0] % 9);
    kp_reader_t r;
    kp__reader_init(&r, data + 1, size - 1);
    kp_produce_response_t resp;
    if (kp__produce_response_read(&r, version, &resp) == 0) {
        size_t sum = 0;
        for (size_t t = 0; t < resp.n_topics; t++) {
            sum += (size_t)resp.topics[t].topic[0];
            for (size_t p = 0; p < resp.topics[t].n_partitions; p++) {
                const kp_produce_partition_response_t *part = &resp.topics[t].partitions[p];
                for (size_t e = 0; e < part->n_record_errors; e++) {
                    sum += part->record_errors[e].message ? 1u : 0u;
                }
            }
        }
        (void)sum;
    }
    kp__produce_response_free(&resp);
    return 0;
}
