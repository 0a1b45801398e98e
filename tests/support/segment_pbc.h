/*
 * segment_pbc.h - the reference SegmentObject encoder for tests (protobuf-c's packer over
 * message structs built from a finished segment).
 */
#ifndef TEST_SEGMENT_PBC_H
#define TEST_SEGMENT_PBC_H

#include <stddef.h>
#include <stdint.h>

#include "segment/segment.h"

/* Packs `seg` with protobuf-c into a new malloc'd *out (the caller frees); returns its length.
   Aborts when memory runs out (tests only). */
size_t pbc_encode_segment(const sw__segment_t *seg, const char *service, const char *instance,
                          uint8_t **out);

#endif /* TEST_SEGMENT_PBC_H */
