/*
 * pipeline.h - finished segments from application threads to a reporter (internal):
 *
 *   app thread: encode the finished segment into its chunk (encode/chunk.h), then
 *       dc_produce(record) --DataCarrier (IF_POSSIBLE)--> consumer thread:
 *       report the batch of records, then release them to their chunks.
 *   (A segment of more than SW__THREAD_ENCODE_MAX_SPANS spans travels as its block and the
 *   consumer encodes it, then returns the block to the pool: segment_item.h.)
 *
 * One consumer thread (SkyWalking's default); its buffers are private to it.
 */
#ifndef SW_PIPELINE_PIPELINE_H
#define SW_PIPELINE_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "../segment/segment_pool.h"
#include "../encode/chunk.h"
#include "../report/reporter.h"
#include "datacarrier.h"
#include "skywalking.h"

typedef struct sw__pipeline sw__pipeline_t;

/*
 * Opens the configured reporter, creates the carrier and starts the consumer. `cfg`, `chunks`
 * (where the records come from), `pool` (where big segments' blocks go back), `encoder` and
 * `counters` (where the reporter counts outcomes) must outlive the pipeline; `agent_stats` is
 * what the meter thread reads the agent's counters with (meter_report.h). Returns 0, SW_EIO,
 * SW_ENOTSUP, SW_ENOMEM, SW_ETHREAD or SW_ECONFIG with a message in errbuf; nothing is left running
 * on error.
 */
int sw__pipeline_start(const sw_config_t *cfg, sw__chunk_pool_t *chunks, sw__segment_pool_t *pool,
                       const sw__encoder_t *encoder, sw__report_counters_t *counters,
                       sw__stats_read_fn agent_stats, sw__pipeline_t **out, char *errbuf,
                       size_t errlen);

/* Slots of the segment DataCarrier: channels x ring size, each ring rounded up to a power of
   two and at least 2, as dc_carrier_create does (datacarrier.h). Pure. */
uint64_t sw__pipeline_slots(const sw_config_t *cfg);

/* The carrier application threads produce into (valid until sw__pipeline_stop). */
dc_carrier_t *sw__pipeline_carrier(const sw__pipeline_t *p);

/* Drains the carrier through the reporter and closes the reporter; frees nothing that
   application threads may still touch (the carrier stays valid and rejects). Idempotent. */
void sw__pipeline_drain(sw__pipeline_t *p);

/* Drains the carrier through the reporter, closes the reporter, frees everything. Blocks until
   the consumer thread is joined. sw_shutdown only. */
void sw__pipeline_stop(sw__pipeline_t *p);

#endif /* SW_PIPELINE_PIPELINE_H */
