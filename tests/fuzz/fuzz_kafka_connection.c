/*
 * fuzz_kafka_connection.c - the producer connection's receive path on a byte stream as if from
 * a broker: 4-byte size framing (kp__conn_read over a real socket), the match of each frame to
 * the oldest written request by its response header and correlation id
 * (kp__conn_response_request), and the decoder of the matched request's API.
 *
 * Input: byte 0 gives the number of requests in flight (1..6); then two bytes per request
 * (API: ApiVersions, Metadata, Produce, InitProducerId; version); the rest is what the broker
 * sends. Request i has correlation id 1000 + i; the last one may still be unwritten (bit 7 of
 * byte 0). Any stream is answered by frames delivered, or by a refusal, never a fault.
 *
 * Size prefixes between 64 KiB and the largest limit of a connection (KP_MAX_METADATA_FRAME;
 * control APIs accept KP_MAX_CONTROL_FRAME, kp__conn_frame_limit) are folded into 64..68 KiB
 * before the stream is sent: such a frame can never arrive whole in a fuzz input anyway, and
 * under ASan each large buffer costs time. Folded prefixes are still refused for the control
 * APIs; prefixes above the limit are kept (the refusal path).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/connection.h"
#include "wire/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const int16_t apis[4] = {KP_API_API_VERSIONS, KP_API_METADATA, KP_API_PRODUCE,
                                KP_API_INIT_PRODUCER_ID};
static const int16_t min_version[4] = {0, 1, 3, 0};
static const int16_t versions[4] = {4, 12, 9, 5}; /* counts: 0..3, 1..12, 3..11, 0..4 */

/* Decodes the body of a matched response with its API's decoder. */
static void body_decode(const kp__request_t *r, kp_reader_t *rd)
{
    switch (r->api_key) {
    case KP_API_API_VERSIONS: {
        kp_api_versions_response_t resp;
        (void)kp__api_versions_response_read(rd, r->version, &resp);
        kp__api_versions_response_free(&resp);
        break;
    }
    case KP_API_METADATA: {
        kp_metadata_response_t resp;
        (void)kp__metadata_response_read(rd, r->version, &resp);
        kp__metadata_response_free(&resp);
        break;
    }
    case KP_API_PRODUCE: {
        kp_produce_response_t resp;
        (void)kp__produce_response_read(rd, r->version, &resp);
        kp__produce_response_free(&resp);
        break;
    }
    default: {
        kp_init_producer_id_response_t resp;
        (void)kp__init_producer_id_response_read(rd, r->version, &resp);
        break;
    }
    }
}

/* As the sender's on_frame: a frame that answers nothing drops the connection (-1). */
static int on_frame(kp__conn_t *c, uint8_t *frame, size_t len, void *arg)
{
    int *answered = arg;
    kp_reader_t rd;
    kp__reader_init(&rd, frame, len);
    kp__request_t *r = kp__conn_response_request(c, &rd);
    if (r == NULL) {
        return -1;
    }
    if (r->correlation_id != 1000 + *answered) { /* answers come in request order */
        abort();
    }
    kp__in_flight_pop(&c->in_flight);
    body_decode(r, &rd);
    kp__request_free(r);
    (*answered)++;
    return 0;
}

static int requests_queue(kp__conn_t *c, const uint8_t *data, size_t size, size_t *used)
{
    int n = 1 + data[0] % 6;
    if (size < 1 + 2 * (size_t)n) {
        return -1;
    }
    for (int i = 0; i < n; i++) {
        kp__request_t *r = calloc(1, sizeof *r);
        if (r == NULL) {
            abort();
        }
        int a = data[1 + 2 * i] % 4;
        r->api_key = apis[a];
        r->version = (int16_t)(min_version[a] + data[2 + 2 * i] % versions[a]);
        r->correlation_id = 1000 + i;
        r->expect_response = true;
        kp__in_flight_push(&c->in_flight, r);
    }
    /* Everything written, or all but the last request (bit 7). */
    c->in_flight.unsent = (data[0] & 0x80) ? c->in_flight.tail : NULL;
    *used = 1 + 2 * (size_t)n;
    return n;
}

#define FOLD_FROM (64u * 1024)
#define FRAME_MAX ((uint32_t)KP_MAX_METADATA_FRAME) /* kp__conn_frame_limit's largest */

/* Folds the size prefixes of the stream in place (see the top of the file). */
static void sizes_fold(uint8_t *s, size_t len)
{
    size_t pos = 0;
    while (pos + 4 <= len) {
        uint32_t n = (uint32_t)s[pos] << 24 | (uint32_t)s[pos + 1] << 16 |
                     (uint32_t)s[pos + 2] << 8 | s[pos + 3];
        if (n > FRAME_MAX) {
            return; /* refused: the rest is never read */
        }
        if (n > FOLD_FROM) {
            n = FOLD_FROM + n % 4096;
            s[pos] = (uint8_t)(n >> 24);
            s[pos + 1] = (uint8_t)(n >> 16);
            s[pos + 2] = (uint8_t)(n >> 8);
            s[pos + 3] = (uint8_t)n;
        }
        pos += 4 + (size_t)n;
    }
}

/* Reads and discards what a refused stream left in the socket. */
static void drain(int fd)
{
    uint8_t buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* One socket pair for the whole run (creating one per input costs most of the time). */
    static int sv[2] = {-1, -1};
    if (sv[0] < 0 && socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) {
        abort();
    }
    if (size < 3) {
        return 0;
    }
    kp__conn_t c;
    memset(&c, 0, sizeof c);
    size_t used = 0;
    int queued = requests_queue(&c, data, size, &used);
    if (queued > 0) {
        /* The stream fits in the socket buffer (libFuzzer's inputs are a few KiB); the read
           ends where the socket would block, as between two epoll events. */
        static uint8_t stream[1 << 16];
        size_t n = size - used < sizeof stream ? size - used : sizeof stream;
        memcpy(stream, data + used, n);
        sizes_fold(stream, n);
        if (write(sv[1], stream, n) != (ssize_t)n) {
            abort();
        }
        c.fd = sv[0];
        int answered = 0;
        (void)kp__conn_read(&c, on_frame, &answered);
        if (answered > queued) {
            abort();
        }
        drain(sv[0]);
    }
    free(c.frame);
    kp__request_t *r;
    while ((r = kp__in_flight_pop(&c.in_flight)) != NULL) {
        kp__request_free(r);
    }
    return 0;
}
