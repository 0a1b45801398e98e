/*
 * inflate_buffer.h - the growing output buffer that the gzip, lz4 and zstd decompressors
 * (gzip.c, lz4.c, zstd.c) write into, bounded by the caller's max_out.
 */
#ifndef KP_WIRE_INFLATE_BUFFER_H
#define KP_WIRE_INFLATE_BUFFER_H

#include <stddef.h>
#include <stdint.h>

/* Allocates the first buffer for in_len compressed bytes: 4x in_len, at least 4 KiB, at most
 * max_out (at least 1 byte). Returns 0 with *buf and *cap set, or KP_ENOMEM (*buf NULL). */
int kp__inflate_buffer_open(size_t in_len, size_t max_out, uint8_t **buf, size_t *cap);

/* Doubles *buf, up to max_out bytes. Returns 0; KP_ECOMPRESSION when *cap already is max_out
 * (the output would exceed it); KP_ENOMEM (then *buf and *cap are unchanged and still valid:
 * the caller frees *buf). */
int kp__inflate_buffer_grow(uint8_t **buf, size_t *cap, size_t max_out);

#endif /* KP_WIRE_INFLATE_BUFFER_H */
