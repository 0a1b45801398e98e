/*
 * api_versions.c - ApiVersions (key 18) v0-v3. v3 is flexible, but its response always comes
 * with response header v0, and a broker that does not support our request version answers
 * with a v0 body carrying UNSUPPORTED_VERSION (35) and its own ApiVersions range.
 */
#include "wire/protocol.h"

#include <stdlib.h>
#include <string.h>

#include "wire/kafka_error.h"

#define DEFAULT_SOFTWARE_NAME "skywalking-c"
/* The project's version (producer/CMakeLists.txt); "dev" where the file is built outside the
   library (the fuzzers). */
#ifdef KP__SOFTWARE_VERSION
#define DEFAULT_SOFTWARE_VERSION KP__SOFTWARE_VERSION
#else
#define DEFAULT_SOFTWARE_VERSION "dev"
#endif

int kp__api_versions_request_write(kp_writer_t *w, int16_t version, const char *software_name,
                                   const char *software_version)
{
    if (version < 0 || version > 3) {
        return KP_EINVAL;
    }
    if (version >= 3) {
        const char *name = software_name ? software_name : DEFAULT_SOFTWARE_NAME;
        const char *ver = software_version ? software_version : DEFAULT_SOFTWARE_VERSION;
        kp__write_compact_string(w, name, strlen(name));
        kp__write_compact_string(w, ver, strlen(ver));
        kp__write_tagged_fields_empty(w);
    }
    return w->err;
}

void kp__api_versions_response_free(kp_api_versions_response_t *resp)
{
    free(resp->apis);
    resp->apis = NULL;
    resp->n_apis = 0;
}

/* Parses the body as `version`; on error out->apis is freed. */
static int parse_body(kp_reader_t *r, int16_t version, kp_api_versions_response_t *out)
{
    bool flexible = version >= 3;
    memset(out, 0, sizeof *out);
    out->decoded_as_version = version;
    out->error_code = kp__read_i16(r);
    /* api_key, min, max: 6 bytes each (+1 tagged-field byte when flexible). */
    size_t n = kp__read_array_len(r, flexible, flexible ? 7 : 6, NULL);
    if (r->err == 0 && n > 0) {
        out->apis = calloc(n, sizeof *out->apis);
        if (out->apis == NULL) {
            r->err = KP_ENOMEM;
        }
    }
    for (size_t i = 0; i < n && r->err == 0; i++) {
        out->apis[i].api_key = kp__read_i16(r);
        out->apis[i].min_version = kp__read_i16(r);
        out->apis[i].max_version = kp__read_i16(r);
        if (flexible) {
            kp__read_tagged_fields_skip(r);
        }
        out->n_apis = i + 1;
    }
    if (version >= 1) {
        out->throttle_time_ms = kp__read_i32(r);
    }
    if (flexible) {
        kp__read_tagged_fields_skip(r); /* SupportedFeatures, FinalizedFeatures, ... */
    }
    if (r->err != 0) {
        kp__api_versions_response_free(out);
    }
    return r->err;
}

int kp__api_versions_response_read(kp_reader_t *r, int16_t version, kp_api_versions_response_t *out)
{
    memset(out, 0, sizeof *out);
    if (version < 0 || version > 3) {
        return KP_EINVAL;
    }
    kp_reader_t start = *r;
    int rc = parse_body(r, version, out);
    if (version == 0) {
        return rc;
    }
    if (rc == 0 && out->error_code != KP_KAFKA_ERR_UNSUPPORTED_VERSION) {
        return 0;
    }
    /* Either the broker said UNSUPPORTED_VERSION or the body did not parse as `version`: the
     * broker may have answered with a v0 body. Keep the first result if v0 fails too. */
    kp_reader_t retry = start;
    kp_api_versions_response_t v0;
    if (parse_body(&retry, 0, &v0) == 0) {
        kp__api_versions_response_free(out);
        *out = v0;
        *r = retry;
        return 0;
    }
    return rc;
}
