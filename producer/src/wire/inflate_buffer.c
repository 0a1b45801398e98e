/*
 * inflate_buffer.c - see inflate_buffer.h.
 */
#include "wire/inflate_buffer.h"

#include <stdlib.h>

#include "kproducer.h"

int kp__inflate_buffer_open(size_t in_len, size_t max_out, uint8_t **buf, size_t *cap)
{
    size_t n = in_len * 4 < 4096 ? 4096 : in_len * 4;
    if (n > max_out) {
        n = max_out > 0 ? max_out : 1;
    }
    *buf = malloc(n);
    *cap = *buf != NULL ? n : 0;
    return *buf != NULL ? 0 : KP_ENOMEM;
}

int kp__inflate_buffer_grow(uint8_t **buf, size_t *cap, size_t max_out)
{
    if (*cap >= max_out) {
        return KP_ECOMPRESSION; /* the output would exceed max_out */
    }
    size_t next = *cap * 2;
    if (next > max_out || next < *cap) {
        next = max_out;
    }
    uint8_t *grown = realloc(*buf, next);
    if (grown == NULL) {
        return KP_ENOMEM;
    }
    *buf = grown;
    *cap = next;
    return 0;
}
