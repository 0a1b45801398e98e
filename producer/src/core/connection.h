/*
 * connection.h - one TCP connection to one broker: non-blocking connect, 4-byte size framing
 * in both directions, the connection state machine with exponential jittered reconnect
 * backoff, and the connection's InFlightRequests.
 *
 * States: DISCONNECTED -(connect)-> CONNECTING -(writable)-> [TLS_HANDSHAKE (SSL, SASL_SSL)
 * -(handshake done)->] HANDSHAKE (ApiVersions in flight) -(versions known)-> [AUTHENTICATING
 * (SASL_*: SaslHandshake, SaslAuthenticate) -(authenticated)->] READY; READY -(session
 * lifetime nearly over, KIP-368)-> AUTHENTICATING (re-authentication once nothing is in
 * flight) -> READY; any error -> DISCONNECTED with next_connect_ms set.
 * Owned and used by the sender thread only: no locking.
 */
#ifndef KP_CORE_CONNECTION_H
#define KP_CORE_CONNECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/in_flight.h"
#include "core/scram.h"
#include "wire/codec.h"

typedef enum kp__conn_state {
    KP__CONN_DISCONNECTED = 0,
    KP__CONN_CONNECTING,
    KP__CONN_TLS_HANDSHAKE,
    KP__CONN_HANDSHAKE,
    KP__CONN_AUTHENTICATING,
    KP__CONN_READY,
} kp__conn_state_t;

typedef struct kp__conn {
    int32_t node_id; /* broker id, or i-n for the i-th of n bootstrap addresses */
    char host[256];
    int32_t port;
    int fd;
    uint64_t sock_ino; /* the socket's inode (kp__fd_ino): fd is ours while they match */
    kp__conn_state_t state;
    bool want_write; /* EPOLLOUT registered */
    int failures;    /* consecutive failed attempts, for the backoff */
    int64_t next_connect_ms;
    int64_t last_activity_ms;
    int64_t throttle_until_ms; /* nothing is sent before this (a response's throttle_time_ms) */
    kp__in_flight_t in_flight;
    /* Receive state: size prefix, then the frame body. */
    uint8_t size_buf[4];
    size_t size_got;
    uint8_t *frame;
    size_t frame_len;
    size_t frame_got;
    /* Negotiated versions (valid in READY). */
    int16_t api_versions_version; /* the ApiVersions version to try (starts at our max) */
    int16_t produce_version;
    int16_t metadata_version;
    int16_t init_pid_version;
    /* TLS (tls.c): the OpenSSL session, NULL for plaintext. */
    void *tls;
    char tls_error[160]; /* OpenSSL's reason for the last failed read or write, or "" */
    /* SASL (sasl.c). */
    int16_t sasl_authenticate_version;
    int sasl_step;        /* 0 idle, 1 handshake sent, 2.. SaslAuthenticate round trips */
    bool reauth_waiting;  /* AUTHENTICATING for KIP-368, waiting for in_flight to drain */
    int64_t reauth_at_ms; /* 0: the broker asked for no re-authentication */
    kp__scram_t scram;
} kp__conn_t;

/* The inode number of an open descriptor, 0 when it is not open. */
uint64_t kp__fd_ino(int fd);

/* Starts a non-blocking connect. Returns 0 (state CONNECTING) or KP_ENETWORK (no address, or
 * every address refused) after which the state is DISCONNECTED with a backoff. */
int kp__conn_connect(kp__conn_t *c, int64_t now, int64_t backoff_ms, int64_t backoff_max_ms);

/* Closes the socket, unless the program closed it first (its inode is not sock_ino: the
 * number may be the program's now); requests stay queued for the caller to fail; sets the
 * backoff. */
void kp__conn_close(kp__conn_t *c, int64_t now, int64_t backoff_ms, int64_t backoff_max_ms);

/* Checks a CONNECTING socket's result (SO_ERROR). Returns 0 when connected, else KP_ENETWORK. */
int kp__conn_finish_connect(kp__conn_t *c);

/* Writes queued request bytes until the socket would block. Calls on_written(r, arg) for each
 * request completely written. Returns the bytes written (>= 0) or KP_ENETWORK on a socket
 * error. */
long kp__conn_write(kp__conn_t *c, void (*on_written)(kp__conn_t *, kp__request_t *, void *),
                    void *arg);

/* The largest response frame accepted next (kproducer.h's KP_MAX_*_FRAME): by the API of the
 * oldest written request, whose answer comes next. */
size_t kp__conn_frame_limit(const kp__conn_t *c);

/* Reads until the socket would block; for every complete frame calls on_frame(c, body, len,
 * arg) (the body is valid during the call). Returns the bytes read (>= 0), or a negative KP_E*
 * code: KP_ENETWORK (EOF or a socket error), KP_ELIMIT (a size prefix above
 * kp__conn_frame_limit; frame_len then holds it, and nothing was allocated for it),
 * KP_ENOMEM, or what on_frame returned when it was nonzero (then a KP_E* code too). */
long kp__conn_read(kp__conn_t *c, int (*on_frame)(kp__conn_t *, uint8_t *, size_t, void *),
                   void *arg);

/* The request a response frame answers: the oldest completely written request, when the
 * frame's response header (read from rd, for that request's api key and version) carries its
 * correlation id. Returns it, still queued, with rd past the header; NULL when the frame
 * answers nothing (no written request, a bad header, another correlation id): the stream is
 * then out of step and the caller drops the connection. Fuzzed by fuzz_kafka_connection. */
kp__request_t *kp__conn_response_request(kp__conn_t *c, kp_reader_t *rd);

/* True when the connection has unwritten bytes. */
bool kp__conn_has_unsent(const kp__conn_t *c);

#endif /* KP_CORE_CONNECTION_H */
