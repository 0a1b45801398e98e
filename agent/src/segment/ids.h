/*
 * ids.h - SkyWalking-style global ids (internal): "<process uuid hex>.<thread id>.<ms*10000+seq>",
 * the shape of the Java agent's GlobalIdGenerator. Unique across threads (thread id), across
 * processes and forks (a random 128-bit process uuid, re-drawn in a forked child) and over time
 * (the tail is max(ms * 10000, previous tail + 1): a sequence inside each millisecond that, unlike
 * a plain wrap at 10000, can neither repeat when a thread makes more than 10000 ids in one
 * millisecond nor go back when the wall clock does).
 */
#ifndef SW_SEGMENT_IDS_H
#define SW_SEGMENT_IDS_H

#include <stddef.h>
#include <stdint.h>

/* Per-thread id state; lives in the thread's context, touched by its thread only. */
typedef struct sw__id_state {
    uint32_t generation; /* process generation `prefix` was built for (0: never built) */
    uint32_t prefix_len;
    uint32_t reserved;
    uint64_t last_tail; /* the last ms*10000+seq handed out; tails only grow */
    char prefix[64];    /* "<32 hex>.<tid>." */
    /* The decimal digits of tail / 10000 (the millisecond part) of the last id, so that the
       next ids of the same millisecond write only their four sequence digits. */
    uint64_t high; /* tail / 10000 that high_digits spell (0: none yet) */
    uint32_t high_len;
    char high_digits[24];
} sw__id_state_t;

/* Longest id sw__id_generate writes, without the NUL. */
#define SW__ID_LEN_MAX (63 + 20)

/* Draws the process uuid once per process (idempotent). Any thread; sw_init calls it. */
void sw__ids_seed(void);

/*
 * Draws a new process uuid and invalidates every thread's prefix. Only in a forked child before
 * it starts threads (the child is single-threaded then).
 */
void sw__ids_reseed_after_fork(void);

/* The current process uuid as 32 lowercase hex digits (valid after sw__ids_seed). */
const char *sw__ids_process_uuid(void);

/*
 * Writes a new id into buf (at least SW__ID_LEN_MAX + 1 bytes) and returns its length. `now_ms`
 * is the caller's clock reading. Owning thread only; no allocation, no lock.
 */
size_t sw__id_generate(sw__id_state_t *st, int64_t now_ms, char *buf);

/* Writes the decimal digits of v into buf (at least 21 bytes, NUL-terminated); returns length. */
size_t sw__u64_to_dec(uint64_t v, char *buf);

#endif /* SW_SEGMENT_IDS_H */
