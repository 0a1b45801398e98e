/*
 * fuzz_scram.c - the parsers of what a broker (or a user) hands the SASL code, on any bytes:
 * the SCRAM server-first message (nonce, salt, iterations), the server-final message, and a
 * sasl.jaas.config entry. Each returns 0 or its error code with a terminated message; an
 * accepted server-first message has a nonce that extends ours, a salt and bounded iterations;
 * a failed JAAS parse leaves the password buffer empty.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf.h"
#include "core/jaas.h"
#include "core/scram.h"
#include "kproducer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NONCE "fyko+d2lbbFgONRv9qkxdawL"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char text[4096];
    if (size >= sizeof text) {
        size = sizeof text - 1;
    }
    memcpy(text, data, size);
    text[size] = '\0';
    char err[256], out[64];
    kp__scram_t s;
    if (kp__scram_client_first(&s, 256, "user", NONCE, out, sizeof out) != 0) {
        abort();
    }
    kp__scram_server_first_t sf;
    err[0] = '\0';
    int rc = kp__scram_parse_server_first(&s, (const char *)data, size, &sf, err, sizeof err);
    if (rc == 0) {
        if (sf.nonce_len <= strlen(NONCE) || memcmp(sf.nonce, NONCE, strlen(NONCE)) != 0 ||
            sf.salt_len == 0 || sf.iterations < KP__SCRAM_MIN_ITERATIONS ||
            sf.iterations > KP__SCRAM_MAX_ITERATIONS) {
            abort();
        }
    } else if (rc != KP_EMALFORMED || memchr(err, '\0', sizeof err) == NULL || err[0] == '\0') {
        abort();
    }
    s.sig_len = 32; /* the signature a client-final would have left: zeros */
    rc = kp__scram_verify_server_final(&s, (const char *)data, size, err, sizeof err);
    if (rc != 0 && rc != KP_EAUTH && rc != KP_EMALFORMED) {
        abort();
    }
    char user[64], pass[64];
    for (int mech = KP__SASL_PLAIN; mech <= KP__SASL_SCRAM_SHA_512; mech++) {
        rc = kp__jaas_parse(text, mech, user, sizeof user, pass, sizeof pass, err, sizeof err);
        if (rc != 0 &&
            (rc != KP_ECONF || pass[0] != '\0' || memchr(err, '\0', sizeof err) == NULL)) {
            abort();
        }
    }
    return 0;
}
