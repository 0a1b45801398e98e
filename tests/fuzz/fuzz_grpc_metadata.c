/*
 * fuzz_grpc_metadata.c - libFuzzer target for the gRPC plugin's reading of a server call's
 * metadata (sw__grpc_headers_from_metadata, agent/preload/preload_grpc_md.c): any metadata a
 * client sends (keys and values of any bytes and length, repeated keys) is copied without a
 * fault, every header found is NUL-terminated inside its buffer, and a header is present exactly
 * when the metadata holds its key with a value that fits and has no NUL byte (the first such). The
 * values themselves go to the sw8 and W3C parsers, fuzzed by fuzz_sw8 and fuzz_w3c.
 *
 * Input: entries separated by 0xFF bytes; each is "key:value" (no ':' means an empty value).
 */
#include <grpc/slice.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "preload_grpc.h"

#define ENTRIES_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The header the oracle expects for `key`: the first entry's value when it is not empty and
   shorter than `cap` (else the search goes on). */
static const uint8_t *expected(const grpc_metadata_array *md, const char *key, size_t cap,
                               size_t *len)
{
    for (size_t i = 0; i < md->count; i++) {
        const grpc_slice *k = &md->metadata[i].key, *v = &md->metadata[i].value;
        if (GRPC_SLICE_LENGTH(*k) == strlen(key) &&
            memcmp(GRPC_SLICE_START_PTR(*k), key, strlen(key)) == 0 && GRPC_SLICE_LENGTH(*v) > 0 &&
            GRPC_SLICE_LENGTH(*v) < cap &&
            memchr(GRPC_SLICE_START_PTR(*v), 0, GRPC_SLICE_LENGTH(*v)) == NULL) {
            *len = GRPC_SLICE_LENGTH(*v);
            return GRPC_SLICE_START_PTR(*v);
        }
    }
    return NULL;
}

static void check(const grpc_metadata_array *md, const char *key, const char *got, const char *buf,
                  size_t cap)
{
    size_t len = 0;
    const uint8_t *want = expected(md, key, cap, &len);
    if (want == NULL) {
        if (got != NULL) {
            abort(); /* a header the metadata does not hold */
        }
        return;
    }
    if (got != buf || strnlen(buf, cap) >= cap || strlen(buf) != len ||
        memcmp(buf, want, len) != 0) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sw__grpc_headers_t h; /* ~4 KiB */
    grpc_metadata entries[ENTRIES_MAX];
    grpc_metadata_array md = {.count = 0, .capacity = ENTRIES_MAX, .metadata = entries};
    size_t at = 0;
    while (at <= size && md.count < ENTRIES_MAX) {
        const uint8_t *end = memchr(data + at, 0xFF, size - at);
        size_t n = end != NULL ? (size_t)(end - (data + at)) : size - at;
        const uint8_t *colon = memchr(data + at, ':', n);
        size_t klen = colon != NULL ? (size_t)(colon - (data + at)) : n;
        grpc_metadata *e = &entries[md.count++];
        memset(e, 0, sizeof *e);
        e->key = grpc_slice_from_static_buffer(data + at, klen);
        e->value = colon != NULL ? grpc_slice_from_static_buffer(colon + 1, n - klen - 1)
                                 : grpc_slice_from_static_buffer(data + at + n, 0);
        at += n + 1;
    }
    sw__grpc_headers_from_metadata(&md, &h);
    check(&md, "sw8", h.in.sw8, h.sw8, sizeof h.sw8);
    check(&md, "sw8-correlation", h.in.sw8_correlation, h.correlation, sizeof h.correlation);
    check(&md, "sw8-x", h.in.sw8_x, h.x, sizeof h.x);
    check(&md, "traceparent", h.in.traceparent, h.traceparent, sizeof h.traceparent);
    check(&md, "tracestate", h.in.tracestate, h.tracestate, sizeof h.tracestate);
    sw__grpc_headers_from_metadata(NULL, &h);
    if (h.in.sw8 != NULL || h.in.traceparent != NULL) {
        abort();
    }
    return 0;
}
