/*
 * scram.c - SCRAM-SHA-256/512 client messages and proofs (see scram.h).
 */
#include "core/scram.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#include "kproducer.h"
#include "swc_base64.h"
#include "swc_errbuf.h"

static const EVP_MD *md_of(int sha)
{
    return sha == 512 ? EVP_sha512() : EVP_sha256();
}

static int fail(char *err, size_t errlen, const char *why)
{
    swc__errbuf_printf(err, errlen, "%s", why);
    return KP_EMALFORMED;
}

/* Strict base64 (RFC 4648, padded; swc_base64.h) of at most `cap` bytes into out: returns the
   decoded length, or -1. */
static long b64_decode(const char *in, size_t len, uint8_t *out, size_t cap)
{
    char bytes[sizeof(((kp__scram_server_first_t *)0)->salt) + 1]; /* the largest `out`, a NUL */
    if (len == 0 || cap >= sizeof bytes) {
        return -1;
    }
    long n = swc__base64_decode(in, len, bytes, cap + 1);
    if (n >= 0) {
        memcpy(out, bytes, (size_t)n);
    }
    return n;
}

int kp__scram_client_first(kp__scram_t *s, int sha, const char *user, const char *nonce, char *out,
                           size_t out_len)
{
    memset(s, 0, sizeof(*s));
    s->sha = sha;
    char fresh[48];
    if (!nonce) {
        uint8_t raw[24];
        if (RAND_bytes(raw, sizeof raw) != 1) {
            return KP_EINVAL;
        }
        EVP_EncodeBlock((unsigned char *)fresh, raw, sizeof raw); /* 32 chars, no ',' */
        nonce = fresh;
    }
    /* saslname: '=' and ',' escaped as =3D and =2C (RFC 5802 5.1). */
    size_t o = 0, cap = sizeof s->client_first_bare;
    o += (size_t)snprintf(s->client_first_bare, cap, "n=");
    for (const char *p = user; *p; p++) {
        const char *rep = *p == '=' ? "=3D" : *p == ',' ? "=2C" : NULL;
        size_t n = rep ? 3 : 1;
        if (o + n >= cap) {
            return KP_EINVAL;
        }
        memcpy(s->client_first_bare + o, rep ? rep : p, n);
        o += n;
    }
    s->nonce_len = strlen(nonce);
    if (o + 3 + s->nonce_len >= cap) {
        return KP_EINVAL;
    }
    o += (size_t)snprintf(s->client_first_bare + o, cap - o, ",r=%s", nonce);
    if ((size_t)snprintf(out, out_len, "n,,%s", s->client_first_bare) >= out_len) {
        return KP_EINVAL;
    }
    return 0;
}

static const char *client_nonce(const kp__scram_t *s)
{
    return s->client_first_bare + strlen(s->client_first_bare) - s->nonce_len;
}

int kp__scram_parse_server_first(const kp__scram_t *s, const char *msg, size_t len,
                                 kp__scram_server_first_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    bool have_s = false, have_i = false;
    size_t pos = 0;
    for (int attr = 0; pos <= len; attr++) {
        const char *a = msg + pos;
        const char *comma = memchr(a, ',', len - pos);
        size_t n = comma ? (size_t)(comma - a) : len - pos;
        if (n < 2 || a[1] != '=') {
            return fail(err, errlen, "server-first: an attribute is not <letter>=<value>");
        }
        const char *v = a + 2;
        size_t vn = n - 2;
        if (attr == 0) {
            if (a[0] != 'r') {
                return fail(err, errlen,
                            "server-first: does not start with r= (a mandatory "
                            "extension?)");
            }
            for (size_t i = 0; i < vn; i++) {
                if (v[i] < 0x21 || v[i] > 0x7e) {
                    return fail(err, errlen, "server-first: the nonce is not printable");
                }
            }
            if (vn <= s->nonce_len || memcmp(v, client_nonce(s), s->nonce_len) != 0) {
                return fail(err, errlen, "server-first: the nonce does not extend ours");
            }
            out->nonce = v;
            out->nonce_len = vn;
        } else if (attr == 1) {
            long got = a[0] == 's' ? b64_decode(v, vn, out->salt, sizeof out->salt) : -1;
            if (got <= 0) {
                return fail(err, errlen, "server-first: no s=<base64 salt> after the nonce");
            }
            out->salt_len = (size_t)got;
            have_s = true;
        } else if (attr == 2) {
            long it = 0;
            if (a[0] != 'i' || vn == 0 || vn > 7) {
                return fail(err, errlen, "server-first: no i=<iterations> after the salt");
            }
            for (size_t i = 0; i < vn; i++) {
                if (v[i] < '0' || v[i] > '9') {
                    return fail(err, errlen, "server-first: i= is not a number");
                }
                it = it * 10 + (v[i] - '0');
            }
            if (it < KP__SCRAM_MIN_ITERATIONS || it > KP__SCRAM_MAX_ITERATIONS) {
                return fail(err, errlen, "server-first: iteration count out of bounds");
            }
            out->iterations = (int)it;
            have_i = true;
        } /* further attributes: extensions, ignored */
        if (!comma) {
            break;
        }
        pos += n + 1;
    }
    if (!have_s || !have_i) {
        return fail(err, errlen, "server-first: salt or iteration count missing");
    }
    return 0;
}

int kp__scram_client_final(kp__scram_t *s, const char *password, const char *server_first,
                           size_t len, char *out, size_t out_len, char *err, size_t errlen)
{
    kp__scram_server_first_t sf;
    int rc = kp__scram_parse_server_first(s, server_first, len, &sf, err, errlen);
    if (rc != 0) {
        return rc;
    }
    const EVP_MD *md = md_of(s->sha);
    unsigned hlen = (unsigned)EVP_MD_get_size(md);
    /* Secrets (each proves the password to the server or derives from it): cleansed on every
       way out, with OPENSSL_cleanse, which the compiler cannot drop as a dead store. */
    uint8_t salted[64], client_key[64], stored_key[64], server_key[64], client_sig[64];
    uint8_t proof[64];
    char p64[96];
    unsigned l = 0;
    int n = snprintf(out, out_len, "c=biws,r=%.*s", (int)sf.nonce_len, sf.nonce);
    if (n < 0 || (size_t)n >= out_len) {
        return fail(err, errlen, "server-first: the nonce is too long");
    }
    size_t without_proof = (size_t)n;
    /* AuthMessage = client-first-bare "," server-first "," client-final-without-proof */
    size_t am_len = strlen(s->client_first_bare) + 1 + len + 1 + without_proof;
    char *am = OPENSSL_malloc(am_len + 1);
    if (!am) {
        return KP_ENOMEM;
    }
    snprintf(am, am_len + 1, "%s,%.*s,%s", s->client_first_bare, (int)len, server_first, out);
    bool ok = PKCS5_PBKDF2_HMAC(password, (int)strlen(password), sf.salt, (int)sf.salt_len,
                                sf.iterations, md, (int)hlen, salted) == 1 &&
              HMAC(md, salted, (int)hlen, (const uint8_t *)"Client Key", 10, client_key, &l) &&
              EVP_Digest(client_key, hlen, stored_key, &l, md, NULL) == 1 &&
              HMAC(md, stored_key, (int)hlen, (const uint8_t *)am, am_len, client_sig, &l) &&
              HMAC(md, salted, (int)hlen, (const uint8_t *)"Server Key", 10, server_key, &l) &&
              HMAC(md, server_key, (int)hlen, (const uint8_t *)am, am_len, s->server_signature, &l);
    OPENSSL_free(am);
    rc = ok ? 0 : KP_ENOMEM;
    if (ok) {
        s->sig_len = hlen;
        for (unsigned i = 0; i < hlen; i++) {
            proof[i] = client_key[i] ^ client_sig[i];
        }
        EVP_EncodeBlock((unsigned char *)p64, proof, (int)hlen);
        if ((size_t)snprintf(out + without_proof, out_len - without_proof, ",p=%s", p64) >=
            out_len - without_proof) {
            OPENSSL_cleanse(out, out_len);
            rc = fail(err, errlen, "client-final does not fit");
        }
    }
    OPENSSL_cleanse(salted, sizeof salted);
    OPENSSL_cleanse(client_key, sizeof client_key);
    OPENSSL_cleanse(stored_key, sizeof stored_key);
    OPENSSL_cleanse(server_key, sizeof server_key);
    OPENSSL_cleanse(client_sig, sizeof client_sig);
    OPENSSL_cleanse(proof, sizeof proof);
    OPENSSL_cleanse(p64, sizeof p64);
    return rc;
}

int kp__scram_verify_server_final(const kp__scram_t *s, const char *msg, size_t len, char *err,
                                  size_t errlen)
{
    if (len >= 2 && msg[0] == 'e' && msg[1] == '=') {
        if (err && errlen > 0) {
            size_t n = 0;
            while (2 + n < len && msg[2 + n] != ',' && msg[2 + n] >= 0x20 && msg[2 + n] < 0x7f &&
                   n < 64) {
                n++;
            }
            swc__errbuf_printf(err, errlen, "server-final: error '%.*s'", (int)n, msg + 2);
        }
        return KP_EAUTH;
    }
    if (len < 2 || msg[0] != 'v' || msg[1] != '=') {
        return fail(err, errlen, "server-final: neither v= nor e=");
    }
    const char *comma = memchr(msg, ',', len);
    size_t vn = (comma ? (size_t)(comma - msg) : len) - 2;
    uint8_t sig[96];
    long got = b64_decode(msg + 2, vn, sig, sizeof sig);
    if (got < 0) {
        return fail(err, errlen, "server-final: v= is not base64");
    }
    if ((size_t)got != s->sig_len || CRYPTO_memcmp(sig, s->server_signature, s->sig_len) != 0) {
        swc__errbuf_printf(err, errlen, "server-final: the server signature is wrong");
        return KP_EAUTH;
    }
    return 0;
}
