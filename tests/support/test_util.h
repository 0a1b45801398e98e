/*
 * test_util.h - small helpers shared by tests and benchmarks (header-only, no criterion):
 * whether the build is sanitized, a monotonic clock in seconds, a loopback port that refuses
 * connections, a field of /proc/self/status (RSS), and a bit-at-a-time CRC-32C reference.
 *
 * Everything here is static inline and thread-safe (no state of its own); nothing blocks.
 */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* TEST_SANITIZED: 1 under ASan or TSan (gcc defines __SANITIZE_*, clang has __has_feature),
 * else 0. Sanitizer runtimes make tests slower and RSS meaningless, and own malloc. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TEST_SANITIZED 1
#endif
#endif
#ifndef TEST_SANITIZED
#define TEST_SANITIZED 0
#endif

/* Seconds on CLOCK_MONOTONIC (for deadlines and durations; not wall-clock time). */
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A loopback TCP port that refuses connections: a socket bound to 127.0.0.1 port 0 and never
 * listened on. With keep_bound the socket stays open for the life of the process, so nobody
 * else can take the port; otherwise it is closed again (the port is then very likely still
 * free, and refuses). Returns the port, or -1 with errno set when a socket call failed. */
static inline int loopback_refused_port(bool keep_bound)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    if (!keep_bound) {
        close(fd);
    }
    return ntohs(a.sin_port);
}

/* The value of a line "<field>: <n> kB" of /proc/self/status (e.g. "VmRSS", "VmHWM"), in kB;
 * -1 when the file or the field is missing. */
static inline long proc_status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        return -1;
    }
    char line[256];
    long kb = -1;
    size_t len = strlen(field);
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, field, len) == 0 && line[len] == ':') {
            kb = atol(line + len + 1);
            break;
        }
    }
    fclose(f);
    return kb;
}

/* Bit-at-a-time CRC-32C (Castagnoli, reflected 0x82F63B78), independent of the table and
 * instruction paths under test. */
static inline uint32_t crc32c_reference(const uint8_t *p, size_t len)
{
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) {
            crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        }
    }
    return ~crc;
}

#endif /* TEST_UTIL_H */
