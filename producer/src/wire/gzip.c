/*
 * gzip.c - gzip framing of deflate through zlib (windowBits 15 + 16 selects the gzip wrapper).
 */
#include "wire/gzip.h"
#include "wire/inflate_buffer.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

size_t kp__gzip_bound(size_t in_len)
{
    /* compressBound covers zlib's 6-byte wrapper; gzip's header and trailer take 18. */
    return (size_t)compressBound((uLong)in_len) + 32;
}

int kp__gzip_compress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap, int level,
                      size_t *out_len)
{
    *out_len = 0;
    if (level != -1 && (level < 1 || level > 9)) {
        return KP_EINVAL;
    }
    if (in_len > UINT_MAX || (in == NULL && in_len > 0) || out == NULL) {
        return KP_EINVAL;
    }
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    int rc = deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    if (rc != Z_OK) {
        return rc == Z_MEM_ERROR ? KP_ENOMEM : KP_ECOMPRESSION;
    }
    static const uint8_t empty[1];
    zs.next_in = (Bytef *)(in_len ? in : empty); /* zlib's API is not const-correct */
    zs.avail_in = (uInt)in_len;
    zs.next_out = out;
    zs.avail_out = out_cap > UINT_MAX ? UINT_MAX : (uInt)out_cap;
    rc = deflate(&zs, Z_FINISH);
    size_t produced = zs.total_out;
    deflateEnd(&zs);
    if (rc == Z_STREAM_END) {
        *out_len = produced;
        return 0;
    }
    return (rc == Z_OK || rc == Z_BUF_ERROR) ? KP_ENOSPACE : KP_ECOMPRESSION;
}

int kp__gzip_decompress(const uint8_t *in, size_t in_len, size_t max_out, uint8_t **out,
                        size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (in == NULL || in_len == 0 || in_len > UINT_MAX) {
        return KP_ECOMPRESSION;
    }
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 15 + 16) != Z_OK) {
        return KP_ENOMEM;
    }
    uint8_t *buf;
    size_t cap;
    int err = kp__inflate_buffer_open(in_len, max_out, &buf, &cap);
    size_t len = 0;
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)in_len;
    while (err == 0) {
        if (len == cap && (err = kp__inflate_buffer_grow(&buf, &cap, max_out)) != 0) {
            break;
        }
        size_t room = cap - len > UINT_MAX ? UINT_MAX : cap - len;
        zs.next_out = buf + len;
        zs.avail_out = (uInt)room;
        int rc = inflate(&zs, Z_NO_FLUSH);
        len += room - zs.avail_out;
        if (rc == Z_STREAM_END) {
            if (zs.avail_in == 0) {
                break;
            }
            if (inflateReset(&zs) != Z_OK) { /* another gzip member follows */
                err = KP_ECOMPRESSION;
            }
        } else if (rc == Z_BUF_ERROR && zs.avail_out != 0) {
            err = KP_ECOMPRESSION; /* input ended inside the stream */
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            err = rc == Z_MEM_ERROR ? KP_ENOMEM : KP_ECOMPRESSION;
        }
    }
    inflateEnd(&zs);
    if (err != 0) {
        free(buf);
        return err;
    }
    *out = buf;
    *out_len = len;
    return 0;
}
