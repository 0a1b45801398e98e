/*
 * scram.h - the client side of SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's
 * SaslAuthenticate carries it: no channel binding (gs2 header "n,,"), no authzid.
 *
 *   client-first  n,,n=<user>,r=<client nonce>
 *   server-first  r=<client nonce + server nonce>,s=<base64 salt>,i=<iterations>[,ext...]
 *   client-final  c=biws,r=<nonce>,p=<base64 ClientProof>
 *   server-final  v=<base64 ServerSignature> | e=<error>
 *
 * The state is plain data inside the connection (no allocation). HMAC, hashes and PBKDF2
 * come from OpenSSL. Pure functions of their arguments: any thread.
 */
#ifndef KP_CORE_SCRAM_H
#define KP_CORE_SCRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Iterations accepted from a server: RFC 7677's minimum, and a bound on the CPU one
 * authentication may take on the sender thread. */
#define KP__SCRAM_MIN_ITERATIONS 4096
#define KP__SCRAM_MAX_ITERATIONS 65536

typedef struct kp__scram {
    int sha;                     /* 256 or 512 */
    char client_first_bare[840]; /* n=<user (escaped: up to 765)>,r=<nonce> */
    size_t nonce_len;            /* the client nonce is the tail of client_first_bare */
    uint8_t server_signature[64];
    size_t sig_len;
} kp__scram_t;

/* Writes the client-first message into out (NUL-terminated). nonce: the client nonce, or
 * NULL for a fresh random one (tests pass RFC 7677's). Returns 0 or KP_EINVAL (user too
 * long, no randomness). */
int kp__scram_client_first(kp__scram_t *s, int sha, const char *user, const char *nonce, char *out,
                           size_t out_len);

/* The parsed server-first message; pointers into the message. */
typedef struct kp__scram_server_first {
    const char *nonce;
    size_t nonce_len;
    uint8_t salt[128];
    size_t salt_len;
    int iterations;
} kp__scram_server_first_t;

/* Parses a server-first message and checks it against s (the nonce must extend ours, the
 * iterations lie in the bounds). Returns 0 or KP_EMALFORMED with a reason in err. Fuzzed by
 * fuzz_scram. */
int kp__scram_parse_server_first(const kp__scram_t *s, const char *msg, size_t len,
                                 kp__scram_server_first_t *out, char *err, size_t errlen);

/* Answers a server-first message: writes client-final into out and keeps the expected
 * server signature in s. Returns 0 or KP_EMALFORMED (err says why) / KP_ENOMEM. */
int kp__scram_client_final(kp__scram_t *s, const char *password, const char *server_first,
                           size_t len, char *out, size_t out_len, char *err, size_t errlen);

/* Checks a server-final message. Returns 0 when it proves the server knows the password,
 * KP_EAUTH for e=<error> or a wrong signature, KP_EMALFORMED otherwise (err says). Fuzzed. */
int kp__scram_verify_server_final(const kp__scram_t *s, const char *msg, size_t len, char *err,
                                  size_t errlen);

#endif /* KP_CORE_SCRAM_H */
