/*
 * connection.c - a broker connection: non-blocking socket, framing, reconnect backoff.
 */
#include "core/connection.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/tls.h"
#include "wire/protocol.h"

/* Exponential backoff with +-20% jitter: backoff_ms * 2^(failures-1), capped at max. The
 * jitter uses rand_r on a per-connection seed so no global state is shared. */
static int64_t backoff_for(kp__conn_t *c, int64_t backoff_ms, int64_t backoff_max_ms)
{
    int64_t b = backoff_ms;
    for (int i = 1; i < c->failures && b < backoff_max_ms; i++) {
        b *= 2;
    }
    if (b > backoff_max_ms) {
        b = backoff_max_ms;
    }
    unsigned seed = (unsigned)(c->node_id * 7919 + c->failures * 104729 + (int)c->last_activity_ms);
    int64_t jitter = b / 5;
    if (jitter > 0) {
        b += (int64_t)(rand_r(&seed) % (2 * jitter + 1)) - jitter;
    }
    return b;
}

uint64_t kp__fd_ino(int fd)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

void kp__conn_close(kp__conn_t *c, int64_t now, int64_t backoff_ms, int64_t backoff_max_ms)
{
    kp__tls_free(c);
    if (c->fd >= 0 && kp__fd_ino(c->fd) == c->sock_ino) {
        close(c->fd);
    }
    c->fd = -1;
    c->sasl_step = 0;
    c->reauth_waiting = false;
    c->reauth_at_ms = 0;
    OPENSSL_cleanse(&c->scram, sizeof c->scram);
    c->want_write = false;
    c->state = KP__CONN_DISCONNECTED;
    c->failures++;
    c->next_connect_ms = now + backoff_for(c, backoff_ms, backoff_max_ms);
    free(c->frame);
    c->frame = NULL;
    c->frame_len = c->frame_got = c->size_got = 0;
    c->throttle_until_ms = 0; /* throttling is per connection (KIP-219) */
}

int kp__conn_connect(kp__conn_t *c, int64_t now, int64_t backoff_ms, int64_t backoff_max_ms)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    char port[16];
    snprintf(port, sizeof(port), "%d", (int)c->port);
    c->last_activity_ms = now;
    if (getaddrinfo(c->host, port, &hints, &res) != 0 || !res) {
        kp__conn_close(c, now, backoff_ms, backoff_max_ms);
        return KP_ENETWORK;
    }
    int rc = KP_ENETWORK;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS) {
            c->fd = fd;
            c->sock_ino = kp__fd_ino(fd);
            c->state = KP__CONN_CONNECTING;
            rc = 0;
            break;
        }
        rc = KP_ENETWORK;
        close(fd);
    }
    freeaddrinfo(res);
    if (rc != 0) {
        kp__conn_close(c, now, backoff_ms, backoff_max_ms);
    }
    return rc;
}

int kp__conn_finish_connect(kp__conn_t *c)
{
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
        return KP_ENETWORK;
    }
    return 0;
}

bool kp__conn_has_unsent(const kp__conn_t *c)
{
    return c->in_flight.unsent != NULL;
}

long kp__conn_write(kp__conn_t *c, void (*on_written)(kp__conn_t *, kp__request_t *, void *),
                    void *arg)
{
    long total = 0;
    while (c->in_flight.unsent) {
        kp__request_t *r = c->in_flight.unsent;
        ssize_t n;
        if (c->tls) {
            n = kp__tls_write(c, r->buf + r->off, r->len - r->off);
            if (n <= 0) {
                return n == 0 ? total : n; /* 0: would block; else KP_ENETWORK */
            }
        } else {
            n = send(c->fd, r->buf + r->off, r->len - r->off, MSG_NOSIGNAL);
        }
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return total;
            }
            if (errno == EINTR) {
                continue;
            }
            return KP_ENETWORK;
        }
        total += n;
        r->off += (size_t)n;
        if (r->off < r->len) {
            return total;
        }
        kp__request_buf_free(r);
        c->in_flight.unsent = r->next;
        on_written(c, r, arg);
    }
    return total;
}

/* Reads into dst up to n bytes; returns bytes read, 0 if it would block, KP_ENETWORK on EOF or
 * a socket or TLS error. */
static ssize_t read_some(kp__conn_t *c, void *dst, size_t n)
{
    if (c->tls) {
        return kp__tls_read(c, dst, n);
    }
    for (;;) {
        ssize_t got = recv(c->fd, dst, n, 0);
        if (got > 0) {
            return got;
        }
        if (got == 0) {
            return KP_ENETWORK;
        }
        if (errno == EINTR) {
            continue;
        }
        return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : KP_ENETWORK;
    }
}

size_t kp__conn_frame_limit(const kp__conn_t *c)
{
    const kp__request_t *r = c->in_flight.head;
    if (!r || r == c->in_flight.unsent) {
        return KP_MAX_CONTROL_FRAME; /* answers nothing: refused once read */
    }
    switch (r->api_key) {
    case KP_API_METADATA:
        return KP_MAX_METADATA_FRAME;
    case KP_API_PRODUCE: /* per partition: error, offsets, record errors, error message */
        return KP_MAX_PRODUCE_FRAME + (size_t)r->n_batches * 64 * 1024;
    default: /* ApiVersions, SaslHandshake, SaslAuthenticate, InitProducerId */
        return KP_MAX_CONTROL_FRAME;
    }
}

long kp__conn_read(kp__conn_t *c, int (*on_frame)(kp__conn_t *, uint8_t *, size_t, void *),
                   void *arg)
{
    long total = 0;
    for (;;) {
        if (c->size_got < 4) {
            ssize_t n = read_some(c, c->size_buf + c->size_got, 4 - c->size_got);
            if (n <= 0) {
                return n < 0 ? n : total;
            }
            total += n;
            c->size_got += (size_t)n;
            if (c->size_got < 4) {
                continue;
            }
            uint32_t size = (uint32_t)c->size_buf[0] << 24 | (uint32_t)c->size_buf[1] << 16 |
                            (uint32_t)c->size_buf[2] << 8 | c->size_buf[3];
            if (size > kp__conn_frame_limit(c)) {
                c->frame_len = size; /* for the caller's message */
                return KP_ELIMIT;
            }
            c->frame_len = size;
            c->frame_got = 0;
            c->frame = malloc(size ? size : 1);
            if (!c->frame) {
                return KP_ENOMEM;
            }
        }
        if (c->frame_got < c->frame_len) {
            ssize_t n = read_some(c, c->frame + c->frame_got, c->frame_len - c->frame_got);
            if (n <= 0) {
                return n < 0 ? n : total;
            }
            total += n;
            c->frame_got += (size_t)n;
            if (c->frame_got < c->frame_len) {
                continue;
            }
        }
        uint8_t *frame = c->frame;
        size_t len = c->frame_len;
        c->frame = NULL;
        c->size_got = 0;
        int rc = on_frame(c, frame, len, arg);
        free(frame);
        if (rc != 0) {
            return rc;
        }
        if (c->fd < 0) {
            return total; /* on_frame closed the connection */
        }
    }
}

kp__request_t *kp__conn_response_request(kp__conn_t *c, kp_reader_t *rd)
{
    kp__request_t *r = c->in_flight.head;
    if (!r || r == c->in_flight.unsent) {
        return NULL; /* a response to nothing */
    }
    int32_t corr = -1;
    if (kp__response_header_read(rd, r->api_key, r->version, &corr) != 0 ||
        corr != r->correlation_id) {
        return NULL;
    }
    return r;
}
