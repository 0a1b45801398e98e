/*
 * pem.c - counting the certificates of a PEM bundle (see pem.h).
 */
#include "pem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "swc_base64.h"
#include "skywalking.h"

static const char begin_line[] = "-----BEGIN CERTIFICATE-----";
static const char end_line[] = "-----END CERTIFICATE-----";

static int is_pem_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Whether der[0..n) is exactly one DER SEQUENCE (tag 0x30, definite length). */
static int der_sequence_whole(const uint8_t *der, size_t n)
{
    if (n < 2 || der[0] != 0x30) {
        return 0;
    }
    size_t len, header;
    if (der[1] < 0x80) {
        len = der[1];
        header = 2;
    } else {
        size_t bytes = der[1] & 0x7fu;
        if (bytes == 0 || bytes > 4 || n < 2 + bytes) {
            return 0;
        }
        len = 0;
        for (size_t i = 0; i < bytes; i++) {
            len = len << 8 | der[2 + i];
        }
        header = 2 + bytes;
    }
    return len > 0 && header + len == n;
}

/* Checks one block body: base64 lines that decode to one DER SEQUENCE. */
static int body_valid(const char *body, size_t n)
{
    char *b64 = malloc(n + 1);
    char *der = malloc(n / 4 * 3 + 4);
    int ok = b64 != NULL && der != NULL;
    size_t m = 0;
    for (size_t i = 0; ok && i < n; i++) {
        if (!is_pem_space(body[i])) {
            b64[m++] = body[i];
        }
    }
    long dlen = ok && m > 0 ? swc__base64_decode(b64, m, der, n / 4 * 3 + 4) : SW_EINVAL;
    ok = dlen > 0 && der_sequence_whole((const uint8_t *)der, (size_t)dlen);
    free(b64);
    free(der);
    return ok;
}

long sw__pem_certificates_count(const char *text, size_t len)
{
    long count = 0;
    const char *p = text, *end = text + len;
    for (;;) {
        const char *b = memmem(p, (size_t)(end - p), begin_line, sizeof begin_line - 1);
        if (b == NULL) {
            return count;
        }
        const char *body = b + sizeof begin_line - 1;
        const char *e = memmem(body, (size_t)(end - body), end_line, sizeof end_line - 1);
        if (e == NULL || !body_valid(body, (size_t)(e - body))) {
            return SW_EINVAL;
        }
        count++;
        p = e + sizeof end_line - 1;
    }
}
