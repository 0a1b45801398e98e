/*
 * murmur2.c - the Java client's Utils.murmur2 and its keyed-partition formula.
 * Unsigned 32-bit arithmetic gives the same bits as Java's wrapping int arithmetic.
 */
#include "wire/murmur2.h"

int32_t kp__murmur2(const void *key, size_t len)
{
    const uint8_t *data = key;
    const uint32_t m = 0x5bd1e995u;
    const uint32_t seed = 0x9747b28cu;
    /* Java passes the length as an int. */
    uint32_t h = seed ^ (uint32_t)len;
    size_t blocks = len / 4;
    for (size_t i = 0; i < blocks; i++) {
        const uint8_t *p = data + 4 * i;
        uint32_t k =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    /* Only touch `data` when there is a tail: key may be NULL with len 0. */
    const uint8_t *tail = len % 4 ? data + (len & ~(size_t)3) : NULL;
    switch (len % 4) {
    case 3:
        h ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        h ^= tail[0];
        h *= m;
        break;
    default:
        break;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

int32_t kp__murmur2_partition(const void *key, size_t len, int32_t num_partitions)
{
    if (num_partitions <= 0) {
        return -1;
    }
    int32_t positive = (int32_t)((uint32_t)kp__murmur2(key, len) & 0x7fffffffu);
    return positive % num_partitions;
}
