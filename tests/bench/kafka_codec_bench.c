/*
 * kafka_codec_bench.c - the producer's wire hot paths, each against a baseline measured in the
 * same run:
 *   CRC-32C, SSE4.2 vs slicing-by-8 tables, over 16 KiB blocks (batch.size), baseline memcpy of
 *   the same bytes;
 *   RecordBatch v2 encoding (init, append until full, close) into 16 KiB blocks for 100 B and
 *   1 KiB values, uncompressed and gzip (Java's default level 6), baseline memcpy of the same
 *   key and value bytes into a block.
 * MB/s counts the uncompressed batch bytes produced. Values are text from a small alphabet
 * (compressible roughly like SkyWalking segments). --smoke runs each case ~0.1 s.
 * Last line: name=value pairs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"
#include "wire/crc32c.h"
#include "wire/gzip.h"
#include "wire/record_batch.h"

#define BLOCK 16384

/* Keeps results observable so the compiler cannot drop the work. */
static volatile uint32_t sink;

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static double crc_gbps(crc_fn fn, const uint8_t *data, double seconds)
{
    size_t bytes = 0;
    uint32_t acc = 0;
    double start = now_s(), elapsed;
    do {
        for (int i = 0; i < 64; i++) {
            acc ^= fn(0, data, BLOCK);
        }
        bytes += 64 * (size_t)BLOCK;
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    sink = acc;
    return (double)bytes / elapsed / 1e9;
}

static uint32_t memcpy_as_crc(uint32_t crc, const void *buf, size_t len)
{
    static uint8_t dst[BLOCK];
    memcpy(dst, buf, len);
    return crc ^ dst[len / 2];
}

typedef struct batch_result {
    double records_per_s;
    double mbps;
} batch_result_t;

/* Encodes batches of records with `value_len`-byte values for `seconds`. */
static batch_result_t batch_run(size_t value_len, kp_compression_t codec, const uint8_t *values,
                                double seconds, bool baseline)
{
    static uint8_t block[BLOCK];
    static uint8_t out[BLOCK * 2];
    char key[40];
    size_t records = 0, bytes = 0;
    double start = now_s(), elapsed;
    size_t value_off = 0;
    do {
        for (int round = 0; round < 16; round++) {
            kp_record_batch_t b;
            kp__record_batch_init(&b, block, sizeof block, 1700000000000LL);
            size_t used = KP_RECORD_BATCH_HEADER_SIZE;
            for (int i = 0;; i++) {
                int klen = snprintf(key, sizeof key, "%032x.%d", (unsigned)records, i & 7);
                const uint8_t *v = values + value_off;
                value_off = (value_off + 61) & 4095;
                if (baseline) { /* copy key and value only: the least any encoder must do */
                    if (used + (size_t)klen + value_len > sizeof block) {
                        break;
                    }
                    memcpy(block + used, key, (size_t)klen);
                    memcpy(block + used + klen, v, value_len);
                    used += (size_t)klen + value_len;
                } else if (kp__record_batch_try_append(&b, 1700000000000LL + i, key, (size_t)klen,
                                                       v, value_len, NULL, 0) != 0) {
                    break;
                }
                records++;
            }
            if (baseline) {
                bytes += used;
                sink ^= block[used - 1];
                continue;
            }
            kp_batch_compression_t comp = {codec, -1, out, sizeof out};
            if (kp__record_batch_close(&b, 1000, 0, (int32_t)records, &comp) != 0) {
                fprintf(stderr, "close failed\n");
                exit(1);
            }
            bytes += b.len;
            size_t len;
            sink ^= kp__record_batch_data(&b, &len)[len - 1];
        }
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    batch_result_t r = {(double)records / elapsed, (double)bytes / elapsed / 1e6};
    return r;
}

int main(int argc, char **argv)
{
    bool smoke = argc > 1 && strcmp(argv[1], "--smoke") == 0;
    double secs = smoke ? 0.1 : 1.0;
    uint8_t *data = malloc(BLOCK + 8192);
    if (data == NULL) {
        return 1;
    }
    uint32_t seed = 1;
    static const char alphabet[] = "abcdefghijklmnop0123456789.-_/:{}";
    for (size_t i = 0; i < BLOCK + 8192; i++) {
        seed = seed * 1103515245u + 12345u;
        data[i] = (uint8_t)alphabet[(seed >> 16) % (sizeof alphabet - 1)];
    }

    double hw = crc_gbps(kp__crc32c_hw, data, secs);
    double sw = crc_gbps(kp__crc32c_sw, data, secs);
    double mc = crc_gbps(memcpy_as_crc, data, secs);
    printf("crc32c 16KiB blocks: hw %.2f GB/s, sw %.2f GB/s, hw/sw %.2fx, memcpy %.2f GB/s, "
           "hw/memcpy %.2f (hw instruction: %s)\n",
           hw, sw, hw / sw, mc, hw / mc, kp__crc32c_hw_available() ? "yes" : "no");

    static const size_t sizes[] = {100, 1024};
    static const char *names[] = {"100", "1k"};
    batch_result_t res[2][2];
    for (int s = 0; s < 2; s++) {
        batch_result_t base = batch_run(sizes[s], KP_COMPRESSION_NONE, data, secs, true);
        res[s][0] = batch_run(sizes[s], KP_COMPRESSION_NONE, data, secs, false);
        res[s][1] = batch_run(sizes[s], KP_COMPRESSION_GZIP, data, secs, false);
        printf("batch %s values: none %.0f rec/s %.0f MB/s; gzip(6) %.0f rec/s %.1f MB/s; "
               "memcpy baseline %.0f MB/s, none/memcpy %.2f\n",
               names[s], res[s][0].records_per_s, res[s][0].mbps, res[s][1].records_per_s,
               res[s][1].mbps, base.mbps, res[s][0].mbps / base.mbps);
    }
    printf("crc32c_hw_gbps=%.2f crc32c_sw_gbps=%.2f crc32c_hw_vs_sw=%.2f memcpy_gbps=%.2f "
           "batch_100_none_mbps=%.0f batch_100_gzip_mbps=%.1f batch_1k_none_mbps=%.0f "
           "batch_1k_gzip_mbps=%.1f batch_1k_none_recs=%.0f batch_1k_gzip_recs=%.0f\n",
           hw, sw, hw / sw, mc, res[0][0].mbps, res[0][1].mbps, res[1][0].mbps, res[1][1].mbps,
           res[1][0].records_per_s, res[1][1].records_per_s);
    free(data);
    return 0;
}
