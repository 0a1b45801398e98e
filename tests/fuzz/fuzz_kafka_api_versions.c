/*
 * fuzz_kafka_api_versions.c - ApiVersions response decoder on arbitrary bytes.
 * Input: byte 0 selects the version (0..3), the rest is the response body.
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
    int16_t version = (int16_t)(data[0] % 4);
    kp_reader_t r;
    kp__reader_init(&r, data + 1, size - 1);
    kp_api_versions_response_t resp;
    if (kp__api_versions_response_read(&r, version, &resp) == 0) {
        int16_t v;
        for (int16_t key = 0; key < 25; key++) {
            (void)kp__api_version_pick(resp.apis, resp.n_apis, key, &v);
        }
    }
    kp__api_versions_response_free(&resp);
    return 0;
}
