/*
 * lz4.c - LZ4 frames for RecordBatch codec 3 (see lz4.h).
 */
#include "wire/lz4.h"
#include "wire/inflate_buffer.h"

#include <lz4frame.h>
#include <stdlib.h>
#include <string.h>

/* The frame Kafka's Lz4BlockOutputStream writes (see lz4.h). */
static void kafka_prefs(LZ4F_preferences_t *prefs)
{
    memset(prefs, 0, sizeof(*prefs));
    prefs->frameInfo.blockSizeID = LZ4F_max64KB;
    prefs->frameInfo.blockMode = LZ4F_blockIndependent;
    prefs->frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
    prefs->frameInfo.blockChecksumFlag = LZ4F_noBlockChecksum;
    prefs->frameInfo.frameType = LZ4F_frame;
    prefs->compressionLevel = 0; /* the fast compressor */
}

size_t kp__lz4_bound(size_t in_len)
{
    LZ4F_preferences_t prefs;
    kafka_prefs(&prefs);
    return LZ4F_compressFrameBound(in_len, &prefs);
}

int kp__lz4_compress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
                     size_t *out_len)
{
    *out_len = 0;
    if ((in == NULL && in_len > 0) || out == NULL) {
        return KP_EINVAL;
    }
    LZ4F_preferences_t prefs;
    kafka_prefs(&prefs);
    if (out_cap < LZ4F_compressFrameBound(in_len, &prefs)) {
        return KP_ENOSPACE; /* LZ4F_compressFrame requires the bound */
    }
    static const uint8_t empty[1];
    size_t n = LZ4F_compressFrame(out, out_cap, in_len ? in : empty, in_len, &prefs);
    if (LZ4F_isError(n)) {
        return KP_ECOMPRESSION;
    }
    *out_len = n;
    return 0;
}

int kp__lz4_decompress(const uint8_t *in, size_t in_len, size_t max_out, uint8_t **out,
                       size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (in == NULL || in_len == 0) {
        return KP_ECOMPRESSION;
    }
    LZ4F_dctx *dctx = NULL;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION))) {
        return KP_ENOMEM;
    }
    uint8_t *buf;
    size_t cap;
    int err = kp__inflate_buffer_open(in_len, max_out, &buf, &cap);
    size_t len = 0, pos = 0, hint = 1;
    while (err == 0 && (pos < in_len || hint != 0)) {
        if (len == cap && (err = kp__inflate_buffer_grow(&buf, &cap, max_out)) != 0) {
            break;
        }
        size_t dst = cap - len, src = in_len - pos;
        hint = LZ4F_decompress(dctx, buf + len, &dst, in + pos, &src, NULL);
        if (LZ4F_isError(hint)) {
            err = KP_ECOMPRESSION;
            break;
        }
        len += dst;
        pos += src;
        if (dst == 0 && src == 0 && len < cap) {
            err = KP_ECOMPRESSION; /* no progress with room left: the input ended in a frame */
        }
    }
    LZ4F_freeDecompressionContext(dctx);
    if (err != 0) {
        free(buf);
        return err;
    }
    *out = buf;
    *out_len = len;
    return 0;
}
