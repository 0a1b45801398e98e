/*
 * ids.c - process uuid and per-thread id generation.
 */
#include "ids.h"
#include "../util/locality.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/*
 * The process uuid, global because it identifies the process. Written by seed() under
 * pthread_once before any reader (sw_init runs it before starting the agent) and by
 * sw__ids_reseed_after_fork in a single-threaded child; readers rebuild their prefix when
 * `generation` changes (acquire load, partner: the release store in seed()).
 */
static char process_uuid[33];
static _Atomic uint32_t generation;
static pthread_once_t seed_once = PTHREAD_ONCE_INIT;

static void seed(void)
{
    unsigned char raw[16];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        /* No entropy source: mix what differs between processes and runs. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t a = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
        uint64_t b = a * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)&ts;
        memcpy(raw, &a, 8);
        memcpy(raw + 8, &b, 8);
    }
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        process_uuid[2 * i] = hex[raw[i] >> 4];
        process_uuid[2 * i + 1] = hex[raw[i] & 15];
    }
    process_uuid[32] = '\0';
    uint32_t g = atomic_load_explicit(&generation, memory_order_relaxed);
    /* release: partner of the acquire load in sw__id_generate; publishes process_uuid. */
    atomic_store_explicit(&generation, g + 1, memory_order_release);
}

void sw__ids_seed(void)
{
    pthread_once(&seed_once, seed);
}

void sw__ids_reseed_after_fork(void)
{
    seed();
}

const char *sw__ids_process_uuid(void)
{
    return process_uuid;
}

/* "00".."99": two digits per division, as most integer formatters do. */
static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930"
    "31323334353637383940414243444546474849505152535455565758596061"
    "62636465666768697071727374757677787980818283848586878889909192"
    "93949596979899";

static size_t dec_digits(uint64_t v)
{
    size_t n = 1;
    for (; v >= 10000; v /= 10000) {
        n += 4;
    }
    return n + (v >= 10) + (v >= 100) + (v >= 1000);
}

SW__HOT size_t sw__u64_to_dec(uint64_t v, char *buf)
{
    size_t n = dec_digits(v);
    char *p = buf + n;
    *p = '\0';
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        *--p = digit_pairs[d + 1];
        *--p = digit_pairs[d];
    }
    if (v >= 10) {
        *--p = digit_pairs[v * 2 + 1];
        *--p = digit_pairs[v * 2];
    } else {
        *--p = (char)('0' + v);
    }
    return n;
}

static void prefix_build(sw__id_state_t *st, uint32_t gen)
{
    memcpy(st->prefix, process_uuid, 32);
    st->prefix[32] = '.';
    size_t n = 33 + sw__u64_to_dec((uint64_t)gettid(), st->prefix + 33);
    st->prefix[n++] = '.';
    st->prefix_len = (uint32_t)n;
    st->generation = gen;
}

SW__HOT size_t sw__id_generate(sw__id_state_t *st, int64_t now_ms, char *buf)
{
    /* acquire: partner of the release store in seed(); a changed generation (first use, or a
       fork child) rebuilds the prefix from the new uuid and the new thread id. */
    uint32_t gen = atomic_load_explicit(&generation, memory_order_acquire);
    if (st->generation != gen) {
        prefix_build(st, gen);
    }
    memcpy(buf, st->prefix, st->prefix_len);
    uint64_t tail = (uint64_t)(now_ms < 0 ? 0 : now_ms) * 10000u;
    if (tail <= st->last_tail) {
        tail = st->last_tail + 1;
    }
    st->last_tail = tail;
    /* tail = high * 10000 + low, written as high's digits and low's four (zero-padded): the
       same digits sw__u64_to_dec(tail) gives, since high >= 1 whenever low is padded. Most ids
       share the millisecond of the one before: their high digits are copied, not formatted. */
    uint64_t high = tail / 10000;
    unsigned low = (unsigned)(tail % 10000);
    char *o = buf + st->prefix_len;
    if (high == 0) {
        return st->prefix_len + sw__u64_to_dec(low, o);
    }
    if (high != st->high) {
        st->high_len = (uint32_t)sw__u64_to_dec(high, st->high_digits);
        st->high = high;
    }
    memcpy(o, st->high_digits, st->high_len);
    o += st->high_len;
    o[0] = digit_pairs[(low / 100) * 2];
    o[1] = digit_pairs[(low / 100) * 2 + 1];
    o[2] = digit_pairs[(low % 100) * 2];
    o[3] = digit_pairs[(low % 100) * 2 + 1];
    o[4] = '\0';
    return st->prefix_len + st->high_len + 4;
}
