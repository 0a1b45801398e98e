/*
 * crash_spool.h - the layout of a crash spool file and its reader (internal; also compiled
 * into swtrace and the spool fuzzer, so it includes nothing of the agent).
 *
 * A spool is one file of SW__CRASH_SPOOL_BYTES per traced process, created and sized (its
 * blocks reserved) by sw_init and mapped shared, so that the crash handler only stores to
 * memory: the kernel writes the pages back after the process died.
 *
 *   [0, header_bytes)            sw__crash_header_t (state ARMED until a crash is recorded)
 *   [header_bytes, +body_bytes)  the body:
 *       module table   module_bytes: module_count entries {u64 lo, hi, base; u32 path_len,
 *                      u32 0; path bytes; zero padding to 8}, the program's mapped objects
 *                      when the crash happened (snapshotted in normal context: never read
 *                      with dl_iterate_phdr in the handler)
 *       frames         frame_count entries {u32 module index (UINT32_MAX: none, offset is
 *                      then the address), u32 0, u64 offset from the module's load base}
 *       segments       segment_count records {u32 len, u32 flags; len bytes of a packed
 *                      skywalking.v3.SegmentObject; zero padding to 8}
 *
 * checksum is FNV-1a (64 bit) over the header with the checksum field zero, then the body.
 * The handler commits in steps (the crashing thread's segments; other threads'; the frames),
 * rewriting the checksum after each, so a fault in a later step leaves the earlier ones
 * readable.
 */
#ifndef SW_CRASH_CRASH_SPOOL_H
#define SW_CRASH_CRASH_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#define SW__CRASH_MAGIC         "SWCRASH1"
#define SW__CRASH_VERSION       1u
#define SW__CRASH_SPOOL_BYTES   (512u * 1024u)
#define SW__CRASH_HEADER_BYTES  1024u
#define SW__CRASH_MODULES_BYTES (64u * 1024u)
#define SW__CRASH_FRAMES_MAX    64u
#define SW__CRASH_NAME_MAX      256u
#define SW__CRASH_SUFFIX        ".swcrash"

/* A segment record's flags. */
#define SW__CRASH_SEG_CRASHING 1u /* of the thread that crashed (else: another thread's) */

enum { SW__CRASH_ARMED = 0, SW__CRASH_RECORDED = 1 };

typedef struct sw__crash_header {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;
    uint32_t spool_bytes;
    uint32_t state;
    uint64_t checksum;
    uint32_t body_bytes;
    int32_t signo;
    int32_t si_code;
    uint32_t pid;
    uint32_t tid;
    uint32_t module_count;
    uint32_t module_bytes;
    uint32_t frame_count;
    uint32_t segment_count;
    uint32_t service_len;
    uint64_t fault_addr;
    int64_t time_ms;
    uint32_t instance_len;
    uint32_t reserved;
    char service[SW__CRASH_NAME_MAX];
    char instance[SW__CRASH_NAME_MAX];
} sw__crash_header_t;

_Static_assert(sizeof(sw__crash_header_t) <= SW__CRASH_HEADER_BYTES, "header fits");

typedef struct sw__crash_frame {
    uint32_t module;
    uint32_t zero;
    uint64_t offset;
} sw__crash_frame_t;

/* FNV-1a 64 over n bytes, continuing from h (start: SW__FNV_START). Pure; async-signal-safe. */
#define SW__FNV_START 14695981039346656037ull
static inline uint64_t sw__fnv1a(uint64_t h, const void *data, size_t n)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 1099511628211ull;
    }
    return h;
}

/* What sw__crash_spool_parse found. Pointers point into the caller's buffer. */
typedef struct sw__crash_module_view {
    uint64_t lo, hi, base;
    const char *path; /* not NUL-terminated: path_len bytes */
    uint32_t path_len;
} sw__crash_module_view_t;

typedef struct sw__crash_segment_view {
    const uint8_t *data;
    uint32_t len;
    uint32_t flags;
} sw__crash_segment_view_t;

#define SW__CRASH_VIEW_MODULES_MAX  1024u
#define SW__CRASH_VIEW_SEGMENTS_MAX 1024u

typedef struct sw__crash_view {
    const sw__crash_header_t *header;
    uint32_t module_count;
    sw__crash_module_view_t modules[SW__CRASH_VIEW_MODULES_MAX];
    uint32_t frame_count;
    sw__crash_frame_t frames[SW__CRASH_FRAMES_MAX];
    uint32_t segment_count;
    sw__crash_segment_view_t segments[SW__CRASH_VIEW_SEGMENTS_MAX];
} sw__crash_view_t;

/* Outcomes of sw__crash_spool_parse. */
enum {
    SW__CRASH_OK = 0,
    SW__CRASH_NOT_SPOOL = -1, /* too short, wrong magic or version */
    SW__CRASH_EMPTY = -2,     /* a valid spool of a process that recorded no crash */
    SW__CRASH_CORRUPT = -3,   /* lengths out of bounds, truncated, or a checksum mismatch */
};

/*
 * Checks the `len` bytes of a spool (any bytes: never reads outside them) and fills *v (a
 * large struct: allocate it). Returns SW__CRASH_OK, or one of the codes above. Pure, any
 * thread.
 */
int sw__crash_spool_parse(const uint8_t *buf, size_t len, sw__crash_view_t *v);

/* The name of an outcome ("ok", "not a spool", ...). */
const char *sw__crash_spool_strerror(int rc);

/* "SIGSEGV" etc. for the six signals the recorder catches, else "SIG?". Async-signal-safe. */
const char *sw__crash_signal_name(int signo);

/* Writes frame `f` as "module+0xoffset" (the module's file name, or "?+0xaddress") into out
   (cap > 0, always NUL-terminated). Returns out. */
char *sw__crash_frame_format(const sw__crash_view_t *v, const sw__crash_frame_t *f, char *out,
                             size_t cap);

#endif /* SW_CRASH_CRASH_SPOOL_H */
