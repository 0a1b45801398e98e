/*
 * sasl.c - SaslHandshake v1 and SaslAuthenticate v1..v2 (KIP-152, KIP-368) bodies.
 */
#include <string.h>

#include "wire/protocol.h"

int kp__sasl_handshake_request_write(kp_writer_t *w, int16_t version, const char *mechanism)
{
    if (version != 1) {
        return KP_EINVAL;
    }
    kp__write_string(w, mechanism, strlen(mechanism));
    return w->err;
}

int kp__sasl_handshake_response_read(kp_reader_t *r, int16_t version,
                                     kp_sasl_handshake_response_t *out)
{
    memset(out, 0, sizeof *out);
    if (version != 1) {
        return KP_EINVAL;
    }
    out->error_code = kp__read_i16(r);
    size_t n = kp__read_array_len(r, false, 2, NULL);
    size_t o = 0;
    for (size_t i = 0; i < n && r->err == 0; i++) {
        const char *s = NULL;
        size_t len = 0;
        kp__read_str(r, false, &s, &len);
        for (size_t k = 0; r->err == 0 && k <= len && o + 1 < sizeof out->mechanisms; k++) {
            char c = k < len ? s[k] : ',';
            if (k == len && i + 1 == n) {
                break;
            }
            out->mechanisms[o++] = (c >= 0x20 && c < 0x7f) ? c : '?';
        }
    }
    out->mechanisms[o] = '\0';
    if (r->err != 0) {
        memset(out, 0, sizeof *out);
    }
    return r->err;
}

int kp__sasl_authenticate_request_write(kp_writer_t *w, int16_t version, const void *auth,
                                        size_t len)
{
    if (version < 1 || version > 2) {
        return KP_EINVAL;
    }
    if (version >= 2) {
        kp__write_compact_bytes(w, auth, len);
        kp__write_tagged_fields_empty(w);
    } else {
        kp__write_bytes(w, auth, len);
    }
    return w->err;
}

int kp__sasl_authenticate_response_read(kp_reader_t *r, int16_t version,
                                        kp_sasl_authenticate_response_t *out)
{
    memset(out, 0, sizeof *out);
    if (version < 1 || version > 2) {
        return KP_EINVAL;
    }
    bool flex = version >= 2;
    out->error_code = kp__read_i16(r);
    kp__read_nullable_str(r, flex, &out->error_message, &out->error_message_len);
    kp__read_nullable_bytes(r, flex, &out->auth, &out->auth_len);
    out->session_lifetime_ms = kp__read_i64(r);
    if (flex) {
        kp__read_tagged_fields_skip(r);
    }
    if (r->err != 0) {
        memset(out, 0, sizeof *out);
    }
    return r->err;
}
