/*
 * gzip.h - gzip (RFC 1952) framing of deflate via zlib, for RecordBatch codec 1.
 * Pure functions, any thread; each call uses its own zlib stream.
 */
#ifndef KP_WIRE_GZIP_H
#define KP_WIRE_GZIP_H

#include <stddef.h>
#include <stdint.h>

#include "kproducer.h"

/* Java's GZIPOutputStream default (Deflater.DEFAULT_COMPRESSION, zlib level 6). */
#define KP_GZIP_LEVEL_DEFAULT (-1)

/* Most bytes kp__gzip_compress can produce for in_len input bytes. */
size_t kp__gzip_bound(size_t in_len);
/* Compresses in[0..in_len) into out[0..out_cap) as one gzip member. level: -1 or 1..9.
 * Returns 0 and *out_len; KP_ENOSPACE when out_cap is too small; KP_EINVAL for a bad level;
 * KP_ENOMEM / KP_ECOMPRESSION for zlib failures. */
int kp__gzip_compress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap, int level,
                      size_t *out_len);
/* Decompresses gzip data (one or more members) into a new heap buffer (free()) of at most
 * max_out bytes. Returns 0, *out and *out_len; KP_ECOMPRESSION for bad data or output over
 * max_out (a bomb); KP_ENOMEM. */
int kp__gzip_decompress(const uint8_t *in, size_t in_len, size_t max_out, uint8_t **out,
                        size_t *out_len);

#endif /* KP_WIRE_GZIP_H */
