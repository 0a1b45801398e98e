/*
 * murmur2.h - the Java client's murmur2 hash (seed 0x9747b28c), used by its default
 * partitioner for keyed records: partition = (murmur2(key) & 0x7fffffff) % numPartitions.
 * Same bytes in, same partition out as a Java producer. Pure functions, any thread.
 */
#ifndef KP_WIRE_MURMUR2_H
#define KP_WIRE_MURMUR2_H

#include <stddef.h>
#include <stdint.h>

/* Utils.murmur2(byte[]) of the Java client, as a signed 32-bit value. */
int32_t kp__murmur2(const void *key, size_t len);
/* toPositive(murmur2(key)) % num_partitions; returns -1 when num_partitions <= 0. */
int32_t kp__murmur2_partition(const void *key, size_t len, int32_t num_partitions);

#endif /* KP_WIRE_MURMUR2_H */
