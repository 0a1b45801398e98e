/*
 * fuzz_kafka_sasl.c - SaslHandshake v1 and SaslAuthenticate v1/v2 response decoders on
 * arbitrary bytes. Input: byte 0 selects the decoder (even: SaslHandshake; odd:
 * SaslAuthenticate v1 or v2 by bit 1), the rest is the response body. A decoded response's
 * borrowed strings lie inside the input; the mechanism list is terminated.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const void *p, size_t n, const uint8_t *data, size_t size)
{
    if (n > 0 && ((const uint8_t *)p < data || (const uint8_t *)p + n > data + size)) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    kp_reader_t r;
    kp__reader_init(&r, data + 1, size - 1);
    if (data[0] % 2 == 0) {
        kp_sasl_handshake_response_t hs;
        if (kp__sasl_handshake_response_read(&r, 1, &hs) == 0 &&
            memchr(hs.mechanisms, '\0', sizeof hs.mechanisms) == NULL) {
            abort();
        }
        return 0;
    }
    int16_t version = (int16_t)(1 + (data[0] >> 1) % 2);
    kp_sasl_authenticate_response_t a;
    if (kp__sasl_authenticate_response_read(&r, version, &a) == 0) {
        inside(a.error_message, a.error_message_len, data, size);
        inside(a.auth, a.auth_len, data, size);
    }
    return 0;
}
