/*
 * zstd.h - RecordBatch codec 4: Zstandard frames through libzstd, as the Java client writes
 * them (ZstdOutputStream; level 3, Kafka's compression.zstd.level default). A broker accepts
 * codec 4 only in Produce v7 and later. Pure functions, any thread; each call uses its own
 * libzstd context.
 */
#ifndef KP_WIRE_ZSTD_H
#define KP_WIRE_ZSTD_H

#include <stddef.h>
#include <stdint.h>

#include "kproducer.h"

#define KP_ZSTD_LEVEL_DEFAULT 3

/* Most bytes kp__zstd_compress can produce for in_len input bytes. */
size_t kp__zstd_bound(size_t in_len);
/* Compresses in[0..in_len) into out[0..out_cap) as one zstd frame. level: 1..22. Returns 0
 * and *out_len; KP_ENOSPACE when out_cap is too small; KP_EINVAL for bad arguments;
 * KP_ECOMPRESSION for a libzstd failure. */
int kp__zstd_compress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap, int level,
                      size_t *out_len);
/* Decompresses zstd frames (one or more) into a new heap buffer (free()) of at most max_out
 * bytes. Returns 0, *out and *out_len; KP_ECOMPRESSION for bad data or output over max_out;
 * KP_ENOMEM. */
int kp__zstd_decompress(const uint8_t *in, size_t in_len, size_t max_out, uint8_t **out,
                        size_t *out_len);

#endif /* KP_WIRE_ZSTD_H */
