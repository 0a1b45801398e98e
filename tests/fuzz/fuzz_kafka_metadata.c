/*
 * fuzz_kafka_metadata.c - Metadata response decoder on arbitrary bytes.
 * Input: byte 0 selects the version (1..12), the rest is the response body.
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
    int16_t version = (int16_t)(1 + data[0] % 12);
    kp_reader_t r;
    kp__reader_init(&r, data + 1, size - 1);
    kp_metadata_response_t resp;
    if (kp__metadata_response_read(&r, version, &resp) == 0) {
        /* Touch every decoded string and array so ASan sees any bad pointer. */
        size_t sum = 0;
        for (size_t i = 0; i < resp.n_brokers; i++) {
            sum += (size_t)resp.brokers[i].host[0] + (resp.brokers[i].rack ? 1u : 0u);
        }
        for (size_t t = 0; t < resp.n_topics; t++) {
            for (size_t p = 0; p < resp.topics[t].n_partitions; p++) {
                const kp_metadata_partition_t *part = &resp.topics[t].partitions[p];
                for (size_t k = 0; k < part->n_replicas; k++) {
                    sum += (size_t)part->replicas[k];
                }
                for (size_t k = 0; k < part->n_isr; k++) {
                    sum += (size_t)part->isr[k];
                }
            }
        }
        (void)sum;
    }
    kp__metadata_response_free(&resp);
    return 0;
}
