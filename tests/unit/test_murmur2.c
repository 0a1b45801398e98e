/*
 * test_murmur2.c - murmur2 against the Java client's own test values (UtilsTest.testMurmur2)
 * and the keyed-partition formula toPositive(murmur2(key)) % numPartitions.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "wire/murmur2.h"

Test(murmur2, java_client_values)
{
    static const struct {
        const char *key;
        int32_t hash;
    } cases[] = {
        {"21", -973932308},
        {"foobar", -790332482},
        {"a-little-bit-long-string", -985981536},
        {"a-little-bit-longer-string", -1486304829},
        {"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
        {"abc", 479470107},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t h = kp__murmur2(cases[i].key, strlen(cases[i].key));
        cr_expect_eq(h, cases[i].hash, "murmur2(\"%s\") = %d, Java gives %d", cases[i].key, h,
                     cases[i].hash);
    }
    const char abc[] = {'a', 'b', 'c'};
    cr_expect_eq(kp__murmur2(abc, sizeof abc), 479470107);
}

Test(murmur2, partition_is_positive_hash_modulo)
{
    const char *keys[] = {"21", "foobar", "a-little-bit-long-string", "abc", ""};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        size_t len = strlen(keys[i]);
        uint32_t positive = (uint32_t)kp__murmur2(keys[i], len) & 0x7fffffffu;
        for (int32_t n = 1; n <= 13; n++) {
            int32_t p = kp__murmur2_partition(keys[i], len, n);
            cr_expect_eq(p, (int32_t)(positive % (uint32_t)n), "key %s, %d partitions", keys[i], n);
            cr_expect(p >= 0 && p < n);
        }
    }
    /* "21" hashes negative: the mask, not abs(), makes it positive. */
    cr_expect_eq(kp__murmur2_partition("21", 2, 1000),
                 (int32_t)((uint32_t)-973932308 & 0x7fffffffu) % 1000);
    cr_expect_eq(kp__murmur2_partition("21", 2, 0), -1, "zero partitions is an error");
    cr_expect_eq(kp__murmur2(NULL, 0), kp__murmur2("", 0));
}
