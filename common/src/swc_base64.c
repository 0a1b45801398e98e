/*
 * swc_base64.c - strict standard base64 (swc_base64.h).
 */
#include "swc_base64.h"

#include <stdint.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

long swc__base64_encode(const void *in, size_t n, char *out, size_t out_len)
{
    size_t need = swc__base64_encoded_len(n);
    if (out_len < need + 1) {
        return -1;
    }
    const unsigned char *p = in;
    char *o = out;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = alphabet[v >> 18];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = alphabet[(v >> 6) & 63];
        *o++ = alphabet[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        *o++ = alphabet[v >> 18];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = '=';
        *o++ = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        *o++ = alphabet[v >> 18];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = alphabet[(v >> 6) & 63];
        *o++ = '=';
    }
    *o = '\0';
    return (long)need;
}

/* Value of a base64 character, or -1. */
static int sextet(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == '+') {
        return 62;
    }
    if (c == '/') {
        return 63;
    }
    return -1;
}

long swc__base64_decode(const char *in, size_t n, char *out, size_t out_len)
{
    if (n % 4 != 0) {
        return -1;
    }
    size_t pad = 0;
    if (n >= 1 && in[n - 1] == '=') {
        pad++;
    }
    if (n >= 2 && in[n - 2] == '=') {
        pad++;
    }
    size_t len = n / 4 * 3 - pad;
    if (out_len < len + 1) {
        return -1;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        size_t p = i + 4 == n ? pad : 0; /* padding characters in this quantum */
        uint32_t v = 0;
        for (size_t k = 0; k < 4; k++) {
            int s = 0;
            if (k < 4 - p) {
                s = sextet((unsigned char)in[i + k]);
                if (s < 0) {
                    return -1; /* includes '=' anywhere but the end */
                }
            }
            v = v << 6 | (uint32_t)s;
        }
        out[o++] = (char)(v >> 16);
        if (p < 2) {
            out[o++] = (char)((v >> 8) & 0xFF);
        }
        if (p < 1) {
            out[o++] = (char)(v & 0xFF);
        }
    }
    out[len] = '\0';
    return (long)len;
}
