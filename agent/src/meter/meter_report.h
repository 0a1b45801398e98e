/*
 * meter_report.h - the meter reporter (internal): every SW_METER_REPORT_INTERVAL seconds a
 * thread of its own ("sw-meter") collects
 *
 *   process meters   sw_c_process_cpu_utilization (percent of one core over the period; may
 *                    exceed 100 with several busy threads), sw_c_process_rss_bytes,
 *                    sw_c_process_threads, sw_c_process_open_fds (from /proc/self)
 *   agent meters     sw_c_segments_finished / _reported / _dropped / _failed,
 *                    sw_c_traces_sampled_out, sw_c_traces_ignored (running totals from
 *                    sw_stats), sw_c_queue_pending and sw_c_queue_fill_percent (the segment
 *                    DataCarrier), and with the Kafka reporter sw_c_producer_records_sent /
 *                    _acked / _failed (totals), sw_c_producer_buffer_used_bytes and
 *                    sw_c_producer_buffer_total_bytes (kp_stats)
 *   user meters      every meter of the registry (agent/src/meter/meter.h), with its tags as
 *                    labels; histograms with one bucket per step
 *
 * as packed skywalking.v3.MeterData messages, service, instance and timestamp (ms) on the
 * first one only, and hands them to the reporter's report_meters (one gRPC
 * MeterReportService/collect stream, or one MeterDataCollection record on Kafka).
 *
 * Threads: the meter thread only builds and sends; the registry and the counters it reads are
 * atomics; a gauge's supplier runs on it. stop() is called by the pipeline during shutdown,
 * after the reporter's shutdown_begin (which bounds a send in progress).
 */
#ifndef SW_METER_METER_REPORT_H
#define SW_METER_METER_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "datacarrier.h"
#include "../encode/encode.h"
#include "../report/reporter.h"
#include "skywalking.h"

typedef struct sw__meter_report sw__meter_report_t;

/*
 * Prepares the reporter of meters for `reporter` (which must have report_meters) and, when
 * `start_thread`, starts the thread (period cfg->meter_report_interval_s, which must not be 0).
 * cfg, reporter and carrier (may be NULL) must outlive it. `agent_stats` (NULL: none) reads the
 * agent's counters for the agent's own meters: sw_stats, handed down by sw_init so that this
 * floor never calls up into agent.c. Returns 0 and *out, SW_ENOMEM or SW_ETHREAD.
 */
int sw__meter_report_start(const sw_config_t *cfg, sw__reporter_t *reporter,
                           const dc_carrier_t *carrier, uint64_t carrier_slots,
                           sw__stats_read_fn agent_stats, bool start_thread,
                           sw__meter_report_t **out);

/* Stops the thread (a period in progress finishes) and frees everything. NULL: no-op. */
void sw__meter_report_stop(sw__meter_report_t *m);

/*
 * One period without sending (the thread's work, for the tests): builds the messages into the
 * report's buffers and returns them in *items / *count, valid until the next call or stop.
 * Returns 0 or SW_ENOMEM. Meter thread, or a test that started no thread.
 */
int sw__meter_report_collect(sw__meter_report_t *m, int64_t now_ms,
                             const sw__report_record_t **items, size_t *count);

/* Appends a MeterDataCollection holding `items` (packed MeterData) to out: each as field 1,
   length-delimited. Returns 0 or SW_ENOMEM (out unchanged). Pure. */
int sw__meter_collection_pack(const sw__report_record_t *items, size_t count, sw__bytes_t *out);

#endif /* SW_METER_METER_REPORT_H */
