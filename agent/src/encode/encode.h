/*
 * encode.h - a finished segment as SkyWalking v3 SegmentObject bytes (internal). Written
 * directly (agent/src/encode/segment_encode.c), byte for byte what protobuf-c would pack.
 * Runs on the thread that finished the segment (encode/chunk.h); allocates only for segments
 * with more than a few hundred spans and attributes (their per-span scratch).
 */
#ifndef SW_ENCODE_ENCODE_H
#define SW_ENCODE_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../segment/segment.h"

/* A growable byte buffer. */
typedef struct sw__bytes {
    uint8_t *data;
    size_t len;
    size_t cap;
} sw__bytes_t;

/* Makes room for `more` bytes after len. Returns 0 or SW_ENOMEM (buffer unchanged). */
int sw__bytes_reserve(sw__bytes_t *b, size_t more);
void sw__bytes_free(sw__bytes_t *b);

/* What every segment of the process carries; set once by sw_init, then only read (any thread). */
typedef struct sw__encoder {
    uint8_t *process_fields; /* the service and instance fields, encoded once */
    size_t process_fields_len;
} sw__encoder_t;

/*
 * Sets the service and instance names that every following segment carries (encoded once here,
 * copied into each segment). Returns 0 or SW_ENOMEM (the previous names stay).
 */
int sw__encoder_set_process(sw__encoder_t *enc, const char *service, const char *instance);

/*
 * Appends the packed SegmentObject of `seg` to `out`: its bytes are out->data[*at .. out->len)
 * (after the call; the bytes between the old out->len and *at are unused and unspecified).
 * Returns 0 or SW_ENOMEM (out unchanged). Any thread.
 */
int sw__encode_segment(const sw__encoder_t *enc, const sw__segment_t *seg, sw__bytes_t *out,
                       size_t *at);

/* The lengths of a segment's two ids, measured once per encoding. */
typedef struct sw__ids_len {
    size_t trace_id;
    size_t segment_id;
} sw__ids_len_t;

static inline sw__ids_len_t sw__ids_len(const sw__segment_t *seg)
{
    return (sw__ids_len_t){strlen(seg->trace_id), strlen(seg->segment_id)};
}

/* Room that fits seg in most cases (a guess: sw__encode_segment_room checks). */
size_t sw__encode_room_guess(const sw__encoder_t *enc, const sw__segment_t *seg,
                             const sw__ids_len_t *ids);

/* Encodes seg backwards into [start, end): *first is its first byte, the last is end - 1.
   Returns 0, SW_ELIMIT (does not fit; the room holds garbage) or SW_ENOMEM. Any thread; the
   encoder is only read. */
int sw__encode_segment_room(const sw__encoder_t *enc, const sw__segment_t *seg,
                            const sw__ids_len_t *ids, uint8_t *start, uint8_t *end,
                            uint8_t **first);

void sw__encoder_free(sw__encoder_t *enc);

#endif /* SW_ENCODE_ENCODE_H */
