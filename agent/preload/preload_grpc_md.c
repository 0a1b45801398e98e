/*
 * preload_grpc_md.c - the metadata of the gRPC plugin (preload_grpc.h): the propagation entries
 * a client call sends, and the incoming headers copied out of a server call's metadata. No
 * interposer here, so that the fuzz target (tests/fuzz/fuzz_grpc_metadata.c) can link it.
 */
#include <grpc/slice.h>
#include <string.h>

#include "../src/core/propagate.h"
#include "preload_grpc.h"

size_t sw__grpc_propagation_build(sw_span_ref_t span, grpc_metadata *md)
{
    char sw8[SW_SW8_MAX], corr[SW_CORRELATION_HEADER_MAX], x[SW_SW8_X_MAX];
    char tp[SW_TRACEPARENT_MAX], ts[SW_TRACESTATE_MAX];
    sw8[0] = corr[0] = x[0] = tp[0] = ts[0] = '\0';
    if (sw__propagation_sw8() &&
        sw_span_ref_inject(span, sw8, sizeof sw8, corr, sizeof corr, x, sizeof x) != SW_OK) {
        sw8[0] = corr[0] = x[0] = '\0';
    }
    if (sw__propagation_w3c() &&
        sw_span_ref_inject_w3c(span, tp, sizeof tp, ts, sizeof ts) != SW_OK) {
        tp[0] = ts[0] = '\0';
    }
    static const char *const keys[SW__GRPC_PROPAGATION_MAX] = {"sw8", "sw8-correlation", "sw8-x",
                                                               "traceparent", "tracestate"};
    const char *values[SW__GRPC_PROPAGATION_MAX] = {sw8, corr, x, tp, ts};
    size_t n = 0;
    for (size_t i = 0; i < SW__GRPC_PROPAGATION_MAX; i++) {
        if (values[i][0] == '\0') {
            continue;
        }
        memset(&md[n], 0, sizeof md[n]);
        md[n].key = grpc_slice_from_static_string(keys[i]);
        md[n].value = grpc_slice_from_copied_buffer(values[i], strlen(values[i]));
        n++;
    }
    return n;
}

void sw__grpc_headers_from_metadata(const grpc_metadata_array *md, sw__grpc_headers_t *h)
{
    memset(h, 0, sizeof *h);
    static const char *const keys[SW__GRPC_PROPAGATION_MAX] = {"sw8", "sw8-correlation", "sw8-x",
                                                               "traceparent", "tracestate"};
    char *bufs[SW__GRPC_PROPAGATION_MAX] = {h->sw8, h->correlation, h->x, h->traceparent,
                                            h->tracestate};
    const size_t lens[SW__GRPC_PROPAGATION_MAX] = {sizeof h->sw8, sizeof h->correlation,
                                                   sizeof h->x, sizeof h->traceparent,
                                                   sizeof h->tracestate};
    for (size_t i = 0; md != NULL && i < md->count; i++) {
        const grpc_metadata *e = &md->metadata[i];
        size_t klen = GRPC_SLICE_LENGTH(e->key);
        size_t vlen = GRPC_SLICE_LENGTH(e->value);
        const char *k = (const char *)GRPC_SLICE_START_PTR(e->key);
        for (size_t j = 0; j < SW__GRPC_PROPAGATION_MAX; j++) {
            /* The first of each; a value too long for its header, or with a NUL byte, is not one
               an agent wrote. */
            if (bufs[j][0] == '\0' && klen == strlen(keys[j]) && memcmp(k, keys[j], klen) == 0 &&
                vlen > 0 && vlen < lens[j] &&
                memchr(GRPC_SLICE_START_PTR(e->value), 0, vlen) == NULL) {
                memcpy(bufs[j], GRPC_SLICE_START_PTR(e->value), vlen);
                bufs[j][vlen] = '\0';
            }
        }
    }
    h->in.sw8 = h->sw8[0] != '\0' ? h->sw8 : NULL;
    h->in.sw8_correlation = h->correlation[0] != '\0' ? h->correlation : NULL;
    h->in.sw8_x = h->x[0] != '\0' ? h->x : NULL;
    h->in.traceparent = h->traceparent[0] != '\0' ? h->traceparent : NULL;
    h->in.tracestate = h->tracestate[0] != '\0' ? h->tracestate : NULL;
}
