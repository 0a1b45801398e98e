/*
 * crash_spool_build.h - pieces of a crash spool written byte by byte as
 * agent/src/crash/crash_spool.h lays it out, for the tests that feed the spool reader and the
 * shipper spools of their own (test_crash_spool, test_crash_ship).
 */
#ifndef SW_TEST_CRASH_SPOOL_BUILD_H
#define SW_TEST_CRASH_SPOOL_BUILD_H

#include <stdint.h>
#include <string.h>

#include "crash/crash_spool.h"

/* Writes one module record at `p` (range lo..hi, load base, path, padded with zeros to 8 bytes);
   returns its size. */
static inline size_t crash_spool_put_module(uint8_t *p, uint64_t lo, uint64_t hi, uint64_t base,
                                            const char *path)
{
    uint32_t n = (uint32_t)strlen(path), zero = 0;
    memcpy(p, &lo, 8);
    memcpy(p + 8, &hi, 8);
    memcpy(p + 16, &base, 8);
    memcpy(p + 24, &n, 4);
    memcpy(p + 28, &zero, 4);
    memcpy(p + 32, path, n);
    memset(p + 32 + n, 0, ((n + 7u) & ~7u) - n);
    return 32 + ((n + 7u) & ~7u);
}

/* Sets the header's checksum over the header and the body_bytes that follow it. */
static inline void crash_spool_checksum(uint8_t *buf)
{
    sw__crash_header_t *h = (sw__crash_header_t *)(void *)buf;
    h->checksum = 0;
    uint64_t sum = sw__fnv1a(SW__FNV_START, buf, SW__CRASH_HEADER_BYTES);
    h->checksum = sw__fnv1a(sum, buf + SW__CRASH_HEADER_BYTES, h->body_bytes);
}

#endif /* SW_TEST_CRASH_SPOOL_BUILD_H */
