/*
 * reporter.h - where encoded segments go (internal): an object made of function pointers plus
 * its own state, so the file, Kafka and gRPC reporters plug into the same pipeline.
 *
 * Contract for every reporter:
 *   - report() and flush() are called by the pipeline's consumer thread only (one at a time);
 *     close() once, by sw_shutdown (or the agent's atexit handler) after the consumer stopped.
 *   - Every record handed to report() is counted exactly once in *counters, as reported or as
 *     failed, at the latest when close() returns (an asynchronous reporter counts on delivery).
 *   - Records and their bytes are valid only during the report() call: copy what must outlive it.
 *   - report() may block the consumer thread (never an application thread) for as long as the
 *     reporter's own timeouts allow; it never calls back into the span API.
 */
#ifndef SW_REPORT_REPORTER_H
#define SW_REPORT_REPORTER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "skywalking.h"

typedef struct sw__report_record {
    const char *segment_id; /* Kafka key; NUL-terminated */
    const uint8_t *data;    /* packed SegmentObject */
    size_t len;
} sw__report_record_t;

/* Outcome counters, shared by the reporter (writer) and sw_stats (reader). Writers add with
   release (partner: sw_stats' acquire loads), so a reader that sees a count also sees the
   pool returns the consumer made before it (the tests rely on that to wait for recycling). */
typedef struct sw__report_counters {
    _Atomic uint64_t reported;
    _Atomic uint64_t failed;
} sw__report_counters_t;

/* What a reporter's Kafka producer says about itself (meters; agent/src/meter/meter_report.c). */
typedef struct sw__producer_meters {
    uint64_t records_sent;   /* kp_stats records_sent */
    uint64_t records_acked;  /* kp_stats records_acked */
    uint64_t records_failed; /* kp_stats records_failed */
    int64_t buffer_used;     /* buffer.memory bytes in use (total - pool_available) */
    int64_t buffer_total;    /* buffer.memory */
} sw__producer_meters_t;

/* Reads the agent's counters (sw_stats), handed down by sw_init to the floors below it that
   report them (meter_report.h) so that they never call up into agent.c. */
typedef void (*sw__stats_read_fn)(sw_stats_t *out);

typedef struct sw__reporter sw__reporter_t;
struct sw__reporter {
    const char *name;
    sw__report_counters_t *counters;
    void (*report)(sw__reporter_t *self, const sw__report_record_t *records, size_t count);
    /* Pushes out anything buffered. Returns 0 or a negative SW_E* code. */
    int (*flush)(sw__reporter_t *self);
    /* Flushes, accounts for every record, releases everything including self. */
    void (*close)(sw__reporter_t *self);
    /* Optional (NULL when not needed): called once by sw_shutdown on its own thread before the
       queue is drained, while the consumer may be inside report(). A reporter whose report()
       can block for long (Kafka: kp_send waits up to max.block.ms with the broker down) uses it
       to bound the drain, failing what it cannot send in time (counted as failed). */
    void (*shutdown_begin)(sw__reporter_t *self);
    /* Optional (NULL: this reporter carries no meters). Sends one period's meters: `items` are
       packed skywalking.v3.MeterData messages (data/len; segment_id unused), the first one
       carrying service, instance and timestamp. Called by the meter thread only
       (meter_report.h), one call at a time, while report() may run on the consumer thread;
       blocks at most for the reporter's own timeouts, and returns promptly once
       shutdown_begin() ran. Returns 0 or a negative SW_E* code. */
    int (*report_meters)(sw__reporter_t *self, const sw__report_record_t *items, size_t count);
    /* Optional (NULL: no producer): fills *out. Any thread; never blocks for long. */
    void (*producer_meters)(sw__reporter_t *self, sw__producer_meters_t *out);
    /* Optional application logs (log_report.h; NULL: the reporter has no log path and sw_log
       returns SW_ENOTSUP). Called by the log sender thread only, concurrently with report():
       records are packed LogData, `segment_id` holds the service (the Kafka key). Counts
       every record once in *outcomes, as report() does, at the latest when close() returns.
       Never blocks longer than the reporter's own timeouts. */
    void (*report_logs)(sw__reporter_t *self, const sw__report_record_t *records, size_t count,
                        sw__report_counters_t *outcomes);
    /* Optional events (packed Event), same thread and rules. Returns 0 when the collector
       accepted them, else a negative SW_E* code (the caller may send them again). */
    int (*report_events)(sw__reporter_t *self, const sw__report_record_t *records, size_t count);
};

/* Grows *records (of *cap entries) to hold at least n, doubling from 64 (report/reporter.c).
   Returns false when out of memory; the array is then unchanged. One thread per array. */
bool sw__report_records_reserve(sw__report_record_t **records, size_t *cap, size_t n);

/*
 * The file reporter: appends each record as an unsigned varint length followed by the bytes to
 * `path` (made absolute against the working directory now; opened as config/file_open.h says:
 * a FIFO, socket or directory is refused), with one write(2) per batch. Fit for a shared
 * directory: a symbolic link is not followed (refused), a new file is created 0600, an
 * existing regular file must belong to the process's effective user.
 *
 * A batch whose write fails or falls short is cut off again (ftruncate to the size before it)
 * and counted as failed, so the file only ever holds whole records; if the cut itself fails,
 * every later batch is failed too. Each batch is written under an open file description lock
 * (F_OFD_SETLKW) on the file, so the cut never removes records that a forked sibling or
 * another process appended. Before each batch the descriptor is checked (fstat: the device
 * and inode it was opened on); if the program closed it, the number is never written to nor
 * closed again, and the path is reopened (said once; a batch that finds no file is failed).
 *
 * Returns 0 and *out; SW_ECONFIG (a refused kind of file, a link, another user's file) or
 * SW_EIO with a message naming SW_REPORTER_FILE_PATH in errbuf; SW_ENOMEM.
 */
int sw__file_reporter_create(const char *path, sw__report_counters_t *counters,
                             sw__reporter_t **out, char *errbuf, size_t errlen);

/*
 * Removes the file the last sw__file_reporter_create of this process created, if it is still
 * that file (same device and inode, not a link, at the absolute path it was created at: a
 * later chdir does not matter) and empty. Returns whether it was removed. For the preload's
 * exit, after the agent stopped; not thread-safe against sw_init.
 */
bool sw__file_reporter_remove_if_empty(void);

#endif /* SW_REPORT_REPORTER_H */
