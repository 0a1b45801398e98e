/*
 * protocol.c - API version ranges, flexible-version thresholds, version negotiation, request
 * and response headers.
 */
#include "wire/protocol.h"

#include <string.h>

/* Our range and the first flexible version of every API this layer speaks. */
typedef struct api_info {
    int16_t api_key;
    int16_t min_version;
    int16_t max_version;
    int16_t first_flexible;
} api_info_t;

static const api_info_t apis[] = {
    {KP_API_PRODUCE, 3, 11, 9},
    {KP_API_METADATA, 1, 12, 9},
    {KP_API_API_VERSIONS, 0, 3, 3},
    {KP_API_INIT_PRODUCER_ID, 0, 4, 2},
    {KP_API_SASL_HANDSHAKE, 1, 1, INT16_MAX},
    {KP_API_SASL_AUTHENTICATE, 1, 2, 2},
};

static const api_info_t *api_find(int16_t api_key)
{
    for (size_t i = 0; i < sizeof apis / sizeof apis[0]; i++) {
        if (apis[i].api_key == api_key) {
            return &apis[i];
        }
    }
    return NULL;
}

int kp__api_supported_range(int16_t api_key, int16_t *min_version, int16_t *max_version)
{
    const api_info_t *api = api_find(api_key);
    if (api == NULL) {
        return KP_EINVAL;
    }
    *min_version = api->min_version;
    *max_version = api->max_version;
    return 0;
}

bool kp__api_is_flexible(int16_t api_key, int16_t version)
{
    const api_info_t *api = api_find(api_key);
    return api != NULL && version >= api->first_flexible;
}

int kp__request_header_version(int16_t api_key, int16_t version)
{
    return kp__api_is_flexible(api_key, version) ? 2 : 1;
}

int kp__response_header_version(int16_t api_key, int16_t version)
{
    if (api_key == KP_API_API_VERSIONS) {
        return 0;
    }
    return kp__api_is_flexible(api_key, version) ? 1 : 0;
}

int kp__api_version_pick(const kp_api_version_range_t *broker_apis, size_t n_apis, int16_t api_key,
                         int16_t *version)
{
    const api_info_t *ours = api_find(api_key);
    if (ours == NULL) {
        return KP_EINVAL;
    }
    for (size_t i = 0; i < n_apis; i++) {
        const kp_api_version_range_t *b = &broker_apis[i];
        if (b->api_key != api_key) {
            continue;
        }
        int16_t v = ours->max_version < b->max_version ? ours->max_version : b->max_version;
        if (v < ours->min_version || v < b->min_version) {
            return KP_EUNSUPPORTED_VERSION;
        }
        *version = v;
        return 0;
    }
    return KP_EUNSUPPORTED_VERSION;
}

int kp__request_begin(kp_writer_t *w, int16_t api_key, int16_t version, int32_t correlation_id,
                      const char *client_id, size_t *frame_start)
{
    const api_info_t *api = api_find(api_key);
    if (api == NULL || version < api->min_version || version > api->max_version) {
        return KP_EINVAL;
    }
    *frame_start = w->len;
    kp__write_i32(w, 0); /* size, patched by kp__request_end */
    kp__write_i16(w, api_key);
    kp__write_i16(w, version);
    kp__write_i32(w, correlation_id);
    /* client_id stays a non-compact nullable string in header v2 too. */
    kp__write_nullable_string(w, client_id, client_id ? strlen(client_id) : 0);
    if (version >= api->first_flexible) {
        kp__write_tagged_fields_empty(w);
    }
    return w->err;
}

int kp__request_end(kp_writer_t *w, size_t frame_start)
{
    if (w->err != 0) {
        return w->err;
    }
    if (frame_start > w->len || w->len - frame_start < 4 ||
        w->len - frame_start - 4 > (size_t)INT32_MAX) {
        return KP_EINVAL;
    }
    kp__write_i32_at(w, frame_start, (int32_t)(w->len - frame_start - 4));
    return w->err;
}

int kp__response_header_read(kp_reader_t *r, int16_t api_key, int16_t version,
                             int32_t *correlation_id)
{
    *correlation_id = kp__read_i32(r);
    if (kp__response_header_version(api_key, version) >= 1) {
        kp__read_tagged_fields_skip(r);
    }
    return r->err;
}
