/*
 * bench_segments.h - payloads for the Kafka benchmarks: real SkyWalking v3 SegmentObjects of
 * varied content, encoded with the protobuf-c code generated from proto/ (target swproto), as
 * the agent's Kafka reporter sends them (key = traceSegmentId, value = SegmentObject bytes).
 *
 * Two size classes: SMALL (one local span, no or one tag, short ids: ~100 B) and LARGE (3-12 spans
 * of every type with tags, peers, a cross-process ref and logs, ~1 KiB on average). Content is
 * varied by a seeded generator (operation names, services, ids, tag values, span counts), so
 * compressed figures say something about real segments, and is the same in every run.
 */
#ifndef SW_BENCH_SEGMENTS_H
#define SW_BENCH_SEGMENTS_H

#include <stddef.h>
#include <stdint.h>

typedef enum bench_segment_class { BENCH_SEGMENT_SMALL, BENCH_SEGMENT_LARGE } bench_segment_class_t;

typedef struct bench_payload {
    char key[64]; /* traceSegmentId */
    size_t key_len;
    uint8_t *value; /* encoded SegmentObject (malloc'd) */
    size_t value_len;
} bench_payload_t;

typedef struct bench_payloads {
    bench_payload_t *v;
    size_t n;
    size_t value_bytes; /* sum of value_len */
} bench_payloads_t;

/* Builds n payloads of one class from the seed. Returns 0, or -1 when out of memory. */
int bench_payloads_make(bench_payloads_t *out, bench_segment_class_t cls, size_t n, uint32_t seed);
void bench_payloads_free(bench_payloads_t *p);

#endif /* SW_BENCH_SEGMENTS_H */
