/*
 * kafka_reporter.h - segments and instance management records to Kafka, in the layout the
 * SkyWalking OAP's kafka-fetcher reads (internal):
 *
 *   topic                         key                     value
 *   [<ns>-]skywalking-segments    traceSegmentId          SegmentObject
 *   [<ns>-]skywalking-managements register-<instance>     InstanceProperties
 *   [<ns>-]skywalking-managements <instance>              InstancePingPkg
 *   [<ns>-]skywalking-meters      <instance>              MeterDataCollection (one period)
 *   [<ns>-]skywalking-logs        service                 LogData (SW_KAFKA_TOPIC_LOGGING)
 *
 * No events: the OAP's kafka-fetcher has no events topic (gRPC only).
 *
 * <ns> is SW_KAFKA_NAMESPACE when set; SW_KAFKA_TOPIC_SEGMENT / SW_KAFKA_TOPIC_MANAGEMENT /
 * SW_KAFKA_TOPIC_METER replace the topic names (the namespace still prefixes them).
 *
 * Threads:
 *   - the pipeline's consumer thread calls report() and flush(); report() may block it in
 *     kp_send() for up to max.block.ms when the producer's buffer.memory is full or no
 *     metadata is known (application threads never wait: the DataCarrier drops instead);
 *   - a management thread owned by the reporter sends InstanceProperties and a ping at start,
 *     then a ping every SW_AGENT_HEARTBEAT_PERIOD seconds and InstanceProperties again with
 *     every 10th ping; it sleeps on a condition variable that close() signals;
 *   - the meter thread (meter_report.h) calls report_meters(): one kp_send() per period;
 *   - the producer's sender thread runs the delivery callbacks, which count each segment as
 *     reported (acknowledged) or failed.
 * close() stops and joins the management thread (which may first finish a kp_send() blocked
 * for up to max.block.ms), then kp_close() with a bounded wait: once it returns every segment
 * accepted by kp_send() has been counted.
 */
#ifndef SW_KAFKA_KAFKA_REPORTER_H
#define SW_KAFKA_KAFKA_REPORTER_H

#include <stddef.h>

#include "../report/reporter.h"
#include "skywalking.h"

/* Default topic names (before the namespace prefix). */
#define SW_KAFKA_TOPIC_SEGMENT_DEFAULT    "skywalking-segments"
#define SW_KAFKA_TOPIC_MANAGEMENT_DEFAULT "skywalking-managements"
#define SW_KAFKA_TOPIC_METER_DEFAULT      "skywalking-meters"
#define SW_KAFKA_TOPIC_LOGGING_DEFAULT    "skywalking-logs"

/* How long flush() waits for outstanding deliveries, and close() after it (ms). */
#define SW_KAFKA_FLUSH_TIMEOUT_MS 5000

/*
 * Creates the Kafka reporter for cfg (resolved names) and starts its producer and management
 * thread. The producer gets bootstrap.servers = SW_KAFKA_BOOTSTRAP_SERVERS, client.id =
 * "skywalking-c", then every `name=value` of SW_KAFKA_PRODUCER_CONFIG (comma-separated; a piece
 * without '=' continues the previous value, so `bootstrap.servers=a:9092,b:9092` works).
 * Returns 0 and *out; SW_ECONFIG with a message naming the bad setting in errbuf (empty
 * bootstrap servers, a malformed pair, a property kp_conf_set rejects, an invalid
 * combination); SW_ENOMEM; SW_ETHREAD. Nothing is left running on error. Any thread; does not
 * contact the brokers (the sender thread does).
 */
int sw__kafka_reporter_create(const sw_config_t *cfg, sw__report_counters_t *counters,
                              sw__reporter_t **out, char *errbuf, size_t errlen);

#endif /* SW_KAFKA_KAFKA_REPORTER_H */
