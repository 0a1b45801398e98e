/*
 * crc32c.h - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as RecordBatch v2 uses.
 *
 * kp__crc32c dispatches once to the SSE4.2 `crc32` instruction when the CPU has it, else to a
 * slicing-by-8 table version. Both implementations are callable directly (tests, benchmark).
 * All take and return a finished CRC, so calls chain: crc(a || b) ==
 * kp__crc32c(kp__crc32c(0, a, la), b, lb). Start with 0.
 *
 * Threads: any thread. Lookup tables are built once on first use under pthread_once.
 */
#ifndef KP_WIRE_CRC32C_H
#define KP_WIRE_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

uint32_t kp__crc32c(uint32_t crc, const void *buf, size_t len);
/* Table-driven, portable. */
uint32_t kp__crc32c_sw(uint32_t crc, const void *buf, size_t len);
/* SSE4.2, three interleaved streams. Call only when kp__crc32c_hw_available(); otherwise it
 * falls back to kp__crc32c_sw. */
uint32_t kp__crc32c_hw(uint32_t crc, const void *buf, size_t len);
bool kp__crc32c_hw_available(void);

#endif /* KP_WIRE_CRC32C_H */
