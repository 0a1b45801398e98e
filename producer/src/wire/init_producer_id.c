/*
 * init_producer_id.c - InitProducerId (key 22) v0-v4: flexible from v2; the request carries
 * the current producer id and epoch from v3 (KIP-360, to bump the epoch).
 */
#include "wire/protocol.h"

#include <string.h>

int kp__init_producer_id_request_write(kp_writer_t *w, int16_t version,
                                       const kp_init_producer_id_request_t *req)
{
    if (version < 0 || version > 4) {
        return KP_EINVAL;
    }
    bool flexible = version >= 2;
    const char *tid = req->transactional_id;
    kp__write_nullable_str(w, flexible, tid, tid ? strlen(tid) : 0);
    kp__write_i32(w, req->transaction_timeout_ms);
    if (version >= 3) {
        kp__write_i64(w, req->producer_id);
        kp__write_i16(w, req->producer_epoch);
    }
    if (flexible) {
        kp__write_tagged_fields_empty(w);
    }
    return w->err;
}

int kp__init_producer_id_response_read(kp_reader_t *r, int16_t version,
                                       kp_init_producer_id_response_t *out)
{
    memset(out, 0, sizeof *out);
    if (version < 0 || version > 4) {
        return KP_EINVAL;
    }
    out->throttle_time_ms = kp__read_i32(r);
    out->error_code = kp__read_i16(r);
    out->producer_id = kp__read_i64(r);
    out->producer_epoch = kp__read_i16(r);
    if (version >= 2) {
        kp__read_tagged_fields_skip(r);
    }
    if (r->err != 0) {
        memset(out, 0, sizeof *out);
    }
    return r->err;
}
