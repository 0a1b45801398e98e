/*
 * grpc_reporter.h - segments to a SkyWalking OAP over gRPC (internal), on the gRPC core C API:
 *
 *   report(batch)  one skywalking.v3.TraceSegmentReportService/collect client stream per batch:
 *                  `authentication` metadata (SW_AGENT_AUTHENTICATION, when set), every
 *                  SegmentObject, close, then the Commands answer and the status, all within
 *                  SW_AGENT_GRPC_TIMEOUT_MS. Status OK counts the whole batch as reported; any
 *                  other outcome counts it as failed (a client stream is all or nothing)
 *                  and is told in a rate-limited warning with the segments lost
 *                  (grpc_loss.h).
 *   management     a thread of its own sends InstanceProperties and keep-alives
 *                  (grpc_reporter_management.h).
 *   meters         report_meters(): one MeterReportService/collect stream per period on the
 *                  meter thread's own connection (meter_report.h); shutdown_begin() cancels
 *                  one in flight.
 *   configuration  with SW_AGENT_CDS_INTERVAL != 0 a thread of its own fetches the dynamic
 *                  configuration (cds.h); close() stops it.
 *
 * Addresses come from SW_AGENT_COLLECTOR_BACKEND_SERVICES (comma-separated): on UNAVAILABLE
 * the next one is tried, and once all failed in a row the reporter backs off exponentially
 * (grpc_reporter_channel.h). While it backs off, report() fails the batch at once (counted as
 * failed) instead of blocking the consumer, so the DataCarrier keeps draining. TLS with
 * SW_AGENT_SSL=true (roots from SW_AGENT_SSL_CA_FILE, else gRPC's defaults).
 *
 * Threads: report() and flush() on the pipeline's consumer thread; close() once after the
 * consumer stopped (it stops the management thread, cancelling its call in flight).
 * Diagnostics go to the agent log (sw__log), each at most once per distinct thing (a rejected
 * token, a status code, a command name, a connection going down or coming back).
 */
#ifndef SW_GRPC_GRPC_REPORTER_H
#define SW_GRPC_GRPC_REPORTER_H

#include <stddef.h>

#include "../report/reporter.h"
#include "skywalking.h"

/*
 * Creates the gRPC reporter for cfg (resolved service and instance names), starts gRPC and the
 * management thread. Does not wait for the collector: a collector that is down only makes
 * batches fail until it is back. Returns 0 and *out; SW_ECONFIG with a message naming the key
 * in errbuf (empty or malformed SW_AGENT_COLLECTOR_BACKEND_SERVICES, unreadable
 * SW_AGENT_SSL_CA_FILE); SW_ENOMEM; SW_ETHREAD. Nothing is left running on error. Any thread.
 */
int sw__grpc_reporter_create(const sw_config_t *cfg, sw__report_counters_t *counters,
                             sw__reporter_t **out, char *errbuf, size_t errlen);

#endif /* SW_GRPC_GRPC_REPORTER_H */
