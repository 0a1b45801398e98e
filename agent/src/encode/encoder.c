/*
 * encode.c - the growable byte buffer and freeing the encoder. The SegmentObject writer itself
 * is agent/src/encode/segment_encode.c.
 */
#include "encode.h"

#include <stdlib.h>
#include <string.h>

#include "skywalking.h"

int sw__bytes_reserve(sw__bytes_t *b, size_t more)
{
    if (b->cap - b->len >= more) {
        return 0;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < more) {
        cap *= 2;
    }
    uint8_t *grown = realloc(b->data, cap);
    if (grown == NULL) {
        return SW_ENOMEM;
    }
    b->data = grown;
    b->cap = cap;
    return 0;
}

void sw__bytes_free(sw__bytes_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void sw__encoder_free(sw__encoder_t *enc)
{
    free(enc->process_fields);
    enc->process_fields = NULL;
    enc->process_fields_len = 0;
}
