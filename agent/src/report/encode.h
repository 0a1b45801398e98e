/*
 * encode.h - a finished segment as SkyWalking v3 SegmentObject bytes (internal). Written
 * directly (agent/src/encode/segment_encode.c), byte for byte what protobuf-c would pack.
 * Runs on a consumer thread; reuses its scratch memory, so it allocates only while growing.
 */
#ifndef SW_REPORT_ENCODE_H
#define SW_REPORT_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "../core/segment.h"

/* A growable byte buffer. */
typedef struct sw__bytes {
    uint8_t *data;
    size_t len;
    size_t cap;
} sw__bytes_t;

/* Makes room for `more` bytes after len. Returns 0 or SW_ENOMEM (buffer unchanged). */
int sw__bytes_reserve(sw__bytes_t *b, size_t more);
void sw__bytes_free(sw__bytes_t *b);

typedef struct sw__encoder {
    void *scratch; /* per-span attribute chains of one segment */
    size_t scratch_cap;
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
 * Returns 0 or SW_ENOMEM (out unchanged). One thread per encoder.
 */
int sw__encode_segment(sw__encoder_t *enc, const sw__segment_t *seg, sw__bytes_t *out, size_t *at);

void sw__encoder_free(sw__encoder_t *enc);

#endif /* SW_REPORT_ENCODE_H */
