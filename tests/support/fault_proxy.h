/*
 * fault_proxy.h - a TCP proxy for tests that injects network faults between the producer and
 * real brokers, per direction, aware of Kafka's 4-byte size framing so that faults land at
 * random points *inside* requests and responses.
 *
 * Each route listens on a loopback port and forwards every accepted connection to a target
 * port (the broker's PROXIED listener, which advertises the proxy's port: see
 * tests/support/kafka/broker.sh, DIR/proxy_map). Faults (fp_faults_t), per direction:
 *   latency_ms   every byte is forwarded this much later;
 *   blackhole    nothing is forwarded (bytes are held, as TCP would retransmit them, and go
 *                out once the blackhole ends; connections stay open);
 *   reset_p      per frame, the probability that the connection is reset (RST both ways) at
 *                a random byte of that frame, after the bytes before it were forwarded;
 *   truncate_p   the same, but the connection is closed normally (FIN): a frame cut short;
 *   corrupt_p    per frame, the probability that one random byte after the size prefix is
 *                replaced by another value.
 * Random choices come from a seeded xorshift (fp_start's seed, printed by the tests), so a
 * failing run can be repeated.
 *
 * Threads: one proxy thread. fp_set/fp_stats may be called from any thread (under `lock`).
 */
#ifndef FAULT_PROXY_H
#define FAULT_PROXY_H

#include <stdbool.h>
#include <stdint.h>

enum { FP_TO_BROKER = 0, FP_TO_CLIENT = 1 };

typedef struct fp_faults {
    int latency_ms;
    bool blackhole;
    double reset_p;
    double truncate_p;
    double corrupt_p;
} fp_faults_t;

typedef struct fp_stats {
    uint64_t connections;
    uint64_t frames[2];
    uint64_t resets[2];
    uint64_t truncations[2];
    uint64_t corruptions[2];
} fp_stats_t;

typedef struct fault_proxy fault_proxy_t;

/* Starts a proxy with n routes listen_ports[i] -> 127.0.0.1:target_ports[i]. Returns NULL
 * (after printing why to stderr) when a port cannot be bound. */
fault_proxy_t *fp_start(const int *listen_ports, const int *target_ports, int n, uint64_t seed);
/* Starts the routes listed in a broker.sh cluster's DIR/proxy_map. */
fault_proxy_t *fp_start_for_cluster(const char *dir, uint64_t seed);
/* Sets the faults of one direction (a zeroed fp_faults_t clears them). */
void fp_set(fault_proxy_t *fp, int direction, const fp_faults_t *faults);
void fp_stats(fault_proxy_t *fp, fp_stats_t *out);
/* Stops the thread and closes every socket. */
void fp_stop(fault_proxy_t *fp);

#endif /* FAULT_PROXY_H */
