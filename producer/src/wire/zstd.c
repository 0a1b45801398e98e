/*
 * zstd.c - Zstandard frames for RecordBatch codec 4 (see zstd.h).
 */
#include "wire/zstd.h"
#include "wire/inflate_buffer.h"

#include <stdlib.h>
#include <zstd.h>
#include <zstd_errors.h>

size_t kp__zstd_bound(size_t in_len)
{
    return ZSTD_compressBound(in_len);
}

int kp__zstd_compress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap, int level,
                      size_t *out_len)
{
    *out_len = 0;
    if ((in == NULL && in_len > 0) || out == NULL || level < 1 || level > ZSTD_maxCLevel()) {
        return KP_EINVAL;
    }
    static const uint8_t empty[1];
    size_t n = ZSTD_compress(out, out_cap, in_len ? in : empty, in_len, level);
    if (ZSTD_isError(n)) {
        return ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall ? KP_ENOSPACE : KP_ECOMPRESSION;
    }
    *out_len = n;
    return 0;
}

int kp__zstd_decompress(const uint8_t *in, size_t in_len, size_t max_out, uint8_t **out,
                        size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (in == NULL || in_len == 0) {
        return KP_ECOMPRESSION;
    }
    ZSTD_DStream *ds = ZSTD_createDStream();
    if (ds == NULL) {
        return KP_ENOMEM;
    }
    uint8_t *buf;
    size_t cap;
    int err = kp__inflate_buffer_open(in_len, max_out, &buf, &cap);
    ZSTD_inBuffer ib = {in, in_len, 0};
    size_t len = 0, hint = 1;
    while (err == 0 && (ib.pos < ib.size || hint != 0)) {
        if (len == cap && (err = kp__inflate_buffer_grow(&buf, &cap, max_out)) != 0) {
            break;
        }
        ZSTD_outBuffer ob = {buf + len, cap - len, 0};
        size_t before = ib.pos;
        hint = ZSTD_decompressStream(ds, &ob, &ib);
        if (ZSTD_isError(hint)) {
            err = KP_ECOMPRESSION;
            break;
        }
        len += ob.pos;
        if (ob.pos == 0 && ib.pos == before && ob.pos < ob.size) {
            err = KP_ECOMPRESSION; /* no progress with room left: the input ended in a frame */
        }
    }
    ZSTD_freeDStream(ds);
    if (err != 0) {
        free(buf);
        return err;
    }
    *out = buf;
    *out_len = len;
    return 0;
}
