/*
 * fuzz_kafka_record_batch.c - RecordBatch v2 reader on arbitrary bytes.
 * Input: byte 0 bit 0 set = recompute the batch's CRC-32C before reading, so that the fuzzer
 * gets past the checksum and into the records (and the inflater); the rest is the batch.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/crc32c.h"
#include "wire/record_batch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    bool fix_crc = data[0] & 1;
    size_t len = size - 1;
    uint8_t *copy = malloc(len ? len : 1);
    if (copy == NULL) {
        return 0;
    }
    memcpy(copy, data + 1, len);
    if (fix_crc && len >= KP_RECORD_BATCH_HEADER_SIZE) {
        uint32_t blen =
            (uint32_t)copy[8] << 24 | (uint32_t)copy[9] << 16 | (uint32_t)copy[10] << 8 | copy[11];
        size_t end = blen <= len - 12 ? 12 + (size_t)blen : len;
        if (end < 21) { /* a batchLength too small for the crc field: leave it to the reader */
            end = 21;
        }
        uint32_t crc = kp__crc32c(0, copy + 21, end - 21);
        copy[17] = (uint8_t)(crc >> 24);
        copy[18] = (uint8_t)(crc >> 16);
        copy[19] = (uint8_t)(crc >> 8);
        copy[20] = (uint8_t)crc;
    }
    kp_record_batch_reader_t rd;
    if (kp__record_batch_reader_open(&rd, copy, len, 1 << 20) == 0) {
        kp_record_view_t rec;
        size_t sum = 0;
        while (kp__record_batch_reader_next(&rd, &rec) == 1) {
            if (rec.key_len > 0) {
                sum += rec.key[rec.key_len - 1];
            }
            if (rec.value_len > 0) {
                sum += rec.value[rec.value_len - 1];
            }
            kp_record_header_t h;
            while (kp__record_view_next_header(&rec, &h) == 1) {
                sum += h.key_len + h.value_len;
            }
        }
        (void)sum;
        kp__record_batch_reader_close(&rd);
    }
    free(copy);
    return 0;
}
