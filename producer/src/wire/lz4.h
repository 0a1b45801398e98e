/*
 * lz4.h - RecordBatch codec 3: the LZ4 frame format through liblz4's LZ4F API, framed as the
 * Java client's Lz4BlockOutputStream writes it: version 1, independent blocks of at most
 * 64 KiB, no block checksums, no content size, no content checksum, and the frame descriptor
 * checksum over the descriptor only (the corrected checksum of KIP-57, required for magic >= 1).
 * Pure functions, any thread; each call uses its own liblz4 context.
 */
#ifndef KP_WIRE_LZ4_H
#define KP_WIRE_LZ4_H

#include <stddef.h>
#include <stdint.h>

#include "kproducer.h"

/* Most bytes kp__lz4_compress can produce for in_len input bytes. */
size_t kp__lz4_bound(size_t in_len);
/* Compresses in[0..in_len) into out[0..out_cap) as one LZ4 frame (LZ4's fast compressor, the
 * Java client's choice at its default level). Returns 0 and *out_len; KP_ENOSPACE when out_cap
 * is too small; KP_EINVAL for bad arguments; KP_ECOMPRESSION for a liblz4 failure. */
int kp__lz4_compress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
                     size_t *out_len);
/* Decompresses LZ4 frames (one or more, concatenated) into a new heap buffer (free()) of at
 * most max_out bytes. Returns 0, *out and *out_len; KP_ECOMPRESSION for bad data or output
 * over max_out; KP_ENOMEM. */
int kp__lz4_decompress(const uint8_t *in, size_t in_len, size_t max_out, uint8_t **out,
                       size_t *out_len);

#endif /* KP_WIRE_LZ4_H */
