/*
 * crc32c.c - CRC-32C: SSE4.2 `crc32` instruction (three interleaved streams) with a
 * slicing-by-8 table fallback.
 *
 * Both work on the "raw" register (no pre/post inversion) internally; the public functions
 * invert on entry and exit so that results chain.
 *
 * Three streams: the crc32 instruction has a latency of ~3 cycles but a throughput of one per
 * cycle, so one dependent chain uses a third of the unit. We run three chains over three
 * adjacent blocks of BLOCK bytes and merge them with a "shift by BLOCK zero bytes" operator:
 * raw(s, A||B) = shift_len(B)(raw(s, A)) ^ raw(0, B), the operator being linear over GF(2)
 * and applied through four 256-entry tables.
 */
#include "wire/crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define HAVE_X86_CRC 1
#else
#define HAVE_X86_CRC 0
#endif

#define POLY        0x82F63B78u
#define LONG_BLOCK  8192
#define SHORT_BLOCK 256

/* Tables are global because they are pure functions of constants, filled exactly once under
 * `tables_once` before any reader uses them (pthread_once gives the happens-before edge), and
 * never written again. */
static uint32_t sw_table[8][256];
static uint32_t shift_long[4][256];
static uint32_t shift_short[4][256];
static bool hw_ok;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static inline uint32_t load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t sw_raw(uint32_t crc, const uint8_t *p, size_t len)
{
    while (len > 0 && ((uintptr_t)p & 7) != 0) {
        crc = sw_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        len--;
    }
    while (len >= 8) {
        uint32_t lo = crc ^ load_le32(p);
        uint32_t hi = load_le32(p + 4);
        crc = sw_table[7][lo & 0xff] ^ sw_table[6][(lo >> 8) & 0xff] ^
              sw_table[5][(lo >> 16) & 0xff] ^ sw_table[4][lo >> 24] ^ sw_table[3][hi & 0xff] ^
              sw_table[2][(hi >> 8) & 0xff] ^ sw_table[1][(hi >> 16) & 0xff] ^
              sw_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len > 0) {
        crc = sw_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        len--;
    }
    return crc;
}

/* Raw CRC register after `len` zero bytes, starting from `crc` (byte table; init only, after
 * sw_table[0] is built). */
static uint32_t zeros_raw(uint32_t crc, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        crc = sw_table[0][crc & 0xff] ^ (crc >> 8);
    }
    return crc;
}

/* Fills table so that shift(x) = XOR of table[k][byte k of x] = zeros_raw(x, len). */
static void shift_table_build(uint32_t table[4][256], size_t len)
{
    uint32_t bit[32]; /* the operator applied to each single bit: its 32 columns */
    for (int i = 0; i < 32; i++) {
        bit[i] = zeros_raw(1u << i, len);
    }
    for (int k = 0; k < 4; k++) {
        for (int b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int j = 0; j < 8; j++) {
                if (b & (1 << j)) {
                    v ^= bit[8 * k + j];
                }
            }
            table[k][b] = v;
        }
    }
}

static inline uint32_t shift_apply(const uint32_t table[4][256], uint32_t crc)
{
    return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^
           table[3][crc >> 24];
}

static void tables_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        }
        sw_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        for (int k = 1; k < 8; k++) {
            sw_table[k][i] = (sw_table[k - 1][i] >> 8) ^ sw_table[0][sw_table[k - 1][i] & 0xff];
        }
    }
    shift_table_build(shift_short, SHORT_BLOCK);
    shift_table_build(shift_long, LONG_BLOCK);
#if HAVE_X86_CRC
    __builtin_cpu_init();
    hw_ok = __builtin_cpu_supports("sse4.2");
#endif
}

static void tables_ready(void)
{
    pthread_once(&tables_once, tables_init);
}

uint32_t kp__crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    tables_ready();
    if (len == 0) {
        return crc;
    }
    return ~sw_raw(~crc, buf, len);
}

bool kp__crc32c_hw_available(void)
{
    tables_ready();
    return hw_ok;
}

#if HAVE_X86_CRC
static inline uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Three chains over three adjacent blocks of `block` bytes at p, merged. */
__attribute__((target("sse4.2"))) static uint64_t
hw_three_way(uint64_t crc, const uint8_t *p, size_t block, const uint32_t table[4][256])
{
    uint64_t c0 = crc, c1 = 0, c2 = 0;
    const uint8_t *end = p + block;
    while (p < end) {
        c0 = _mm_crc32_u64(c0, load64(p));
        c1 = _mm_crc32_u64(c1, load64(p + block));
        c2 = _mm_crc32_u64(c2, load64(p + 2 * block));
        p += 8;
    }
    uint32_t c = shift_apply(table, (uint32_t)c0) ^ (uint32_t)c1;
    return shift_apply(table, c) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) static uint32_t hw_raw(uint32_t crc32, const uint8_t *p,
                                                         size_t len)
{
    uint64_t crc = crc32;
    while (len > 0 && ((uintptr_t)p & 7) != 0) {
        crc = _mm_crc32_u8((uint32_t)crc, *p++);
        len--;
    }
    while (len >= 3 * LONG_BLOCK) {
        crc = hw_three_way(crc, p, LONG_BLOCK, shift_long);
        p += 3 * LONG_BLOCK;
        len -= 3 * LONG_BLOCK;
    }
    while (len >= 3 * SHORT_BLOCK) {
        crc = hw_three_way(crc, p, SHORT_BLOCK, shift_short);
        p += 3 * SHORT_BLOCK;
        len -= 3 * SHORT_BLOCK;
    }
    while (len >= 8) {
        crc = _mm_crc32_u64(crc, load64(p));
        p += 8;
        len -= 8;
    }
    while (len > 0) {
        crc = _mm_crc32_u8((uint32_t)crc, *p++);
        len--;
    }
    return (uint32_t)crc;
}
#endif

uint32_t kp__crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
    tables_ready();
#if HAVE_X86_CRC
    if (hw_ok) {
        if (len == 0) {
            return crc;
        }
        return ~hw_raw(~crc, buf, len);
    }
#endif
    return kp__crc32c_sw(crc, buf, len);
}

uint32_t kp__crc32c(uint32_t crc, const void *buf, size_t len)
{
    return kp__crc32c_hw(crc, buf, len);
}
