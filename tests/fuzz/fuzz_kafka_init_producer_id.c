/*
 * fuzz_kafka_init_producer_id.c - InitProducerId response decoder on arbitrary bytes.
 * Input: byte 0 selects the version (0..4), the rest is the response body.
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
    int16_t version = (int16_t)(data[0] % 5);
    kp_reader_t r;
    kp__reader_init(&r, data + 1, size - 1);
    kp_init_producer_id_response_t resp;
    (void)kp__init_producer_id_response_read(&r, version, &resp);
    int32_t corr;
    kp__reader_init(&r, data + 1, size - 1);
    (void)kp__response_header_read(&r, KP_API_INIT_PRODUCER_ID, version, &corr);
    return 0;
}
