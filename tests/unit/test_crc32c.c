/*
 * test_crc32c.c - CRC-32C: RFC 3720 B.4 vectors for the hardware and software versions, and
 * the two against each other on random data at unaligned offsets and odd lengths.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "wire/crc32c.h"

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static void check_rfc3720(crc_fn crc, const char *impl)
{
    uint8_t buf[48];
    memset(buf, 0, 32);
    cr_expect_eq(crc(0, buf, 32), 0x8A9136AAu, "%s: 32 zero bytes", impl);
    memset(buf, 0xff, 32);
    cr_expect_eq(crc(0, buf, 32), 0x62A8AB43u, "%s: 32 0xFF bytes", impl);
    for (int i = 0; i < 32; i++) {
        buf[i] = (uint8_t)i;
    }
    cr_expect_eq(crc(0, buf, 32), 0x46DD794Eu, "%s: 0..31 ascending", impl);
    for (int i = 0; i < 32; i++) {
        buf[i] = (uint8_t)(31 - i);
    }
    cr_expect_eq(crc(0, buf, 32), 0x113FDB5Cu, "%s: 31..0 descending", impl);
    /* iSCSI SCSI Read (10) command PDU, RFC 3720 B.4. */
    static const uint8_t pdu[48] = {
        0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
        0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    };
    cr_expect_eq(crc(0, pdu, sizeof pdu), 0xD9963A56u, "%s: iSCSI read PDU", impl);
    cr_expect_eq(crc(0, "123456789", 9), 0xE3069283u, "%s: check value", impl);
    cr_expect_eq(crc(0x1234u, buf, 0), 0x1234u, "%s: empty input keeps the crc", impl);
}

Test(crc32c, rfc3720_vectors_software)
{
    check_rfc3720(kp__crc32c_sw, "sw");
}

Test(crc32c, rfc3720_vectors_hardware)
{
    if (!kp__crc32c_hw_available()) {
        cr_log_warn("no SSE4.2 here: kp__crc32c_hw falls back to the table version");
    }
    check_rfc3720(kp__crc32c_hw, "hw");
    check_rfc3720(kp__crc32c, "dispatch");
}

Test(crc32c, hw_matches_sw_on_unaligned_odd_lengths)
{
    size_t size = 3 * 8192 * 2 + 4096;
    uint8_t *data = malloc(size + 16);
    cr_assert_not_null(data);
    uint32_t seed = 12345;
    for (size_t i = 0; i < size + 16; i++) {
        seed = seed * 1103515245u + 12345u;
        data[i] = (uint8_t)(seed >> 16);
    }
    static const size_t lengths[] = {1,   3,   7,    8,    9,     15,    63,    255,   257,  767,
                                     768, 769, 1021, 4099, 24575, 24576, 24577, 49151, 53248};
    for (size_t off = 0; off < 16; off++) {
        for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
            size_t len = lengths[i];
            uint32_t sw = kp__crc32c_sw(0, data + off, len);
            uint32_t hw = kp__crc32c_hw(0, data + off, len);
            cr_assert_eq(hw, sw, "offset %zu length %zu: hw %08x sw %08x", off, len, hw, sw);
            if (off == 3 && len < 5000) {
                cr_assert_eq(sw, crc32c_reference(data + off, len), "reference, length %zu", len);
            }
        }
    }
    free(data);
}

Test(crc32c, calls_chain)
{
    uint8_t data[1000];
    for (size_t i = 0; i < sizeof data; i++) {
        data[i] = (uint8_t)(i * 7 + 3);
    }
    uint32_t whole = kp__crc32c(0, data, sizeof data);
    for (size_t cut = 0; cut <= sizeof data; cut += 111) {
        uint32_t hw = kp__crc32c_hw(kp__crc32c_hw(0, data, cut), data + cut, sizeof data - cut);
        uint32_t sw = kp__crc32c_sw(kp__crc32c_sw(0, data, cut), data + cut, sizeof data - cut);
        cr_expect_eq(hw, whole, "hw chained at %zu", cut);
        cr_expect_eq(sw, whole, "sw chained at %zu", cut);
    }
}
