/*
 * dynamic_config.h - the settings the OAP may change while the agent runs (internal), through
 * configuration discovery (agent/src/grpc/cds.h): agent.sample_n_per_3_secs,
 * agent.ignore_suffix, agent.span_limit_per_segment.
 *
 * Readers are application threads at every trace start; the writer is the configuration
 * discovery thread (and sw_init/sw_shutdown, which do not race span calls). How each value
 * changes without a lock on the span path:
 *
 *   sample_n_per_3_secs     the sampler's `n_per_window` is an atomic int32 (relaxed: a new N
 *                           applies to the next trace start; the window's count is unchanged)
 *   span_limit_per_segment  an atomic uint32 (relaxed), copied into a segment when its trace
 *                           starts, at most the block capacity (SW_AGENT_SPAN_LIMIT at sw_init:
 *                           blocks are sized for it), so a segment's limit never changes
 *                           while its thread records into it
 *   ignore_suffix           an immutable table published by pointer swap: the writer builds a
 *                           new table, publishes it with a release exchange, and readers load
 *                           the pointer with acquire (partner) and read the table through it.
 *                           A replaced table may still be read by a thread that loaded the
 *                           pointer just before, and application threads announce nothing (a
 *                           grace period would cost every trace start a shared write), so a
 *                           replaced table is kept on a retired list until sw_shutdown, when no
 *                           span call may run (skywalking.h). At most
 *                           SW__IGNORE_TABLES_MAX replacements per run bound that memory
 *                           (~2 KiB each); later changes are refused and logged.
 */
#ifndef SW_CONFIG_DYNAMIC_CONFIG_H
#define SW_CONFIG_DYNAMIC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "skywalking.h"

#define SW__IGNORE_TABLES_MAX 64
#define SW__IGNORE_MAX        32 /* entries of SW_AGENT_IGNORE_SUFFIX */

struct sw__sampler;

/*
 * sw_init: the startup values of the run (cfg->ignore_suffix parsed, at most SW__IGNORE_MAX
 * entries; `span_capacity` = the segment blocks' span count). Returns 0, SW_ECONFIG (message
 * naming SW_AGENT_IGNORE_SUFFIX) or SW_ENOMEM. The sampler is set by its own init; `sampler` is
 * the run's (sw__agent.sampler), which sw__dyncfg_set_sample changes and sw__dyncfg_current
 * reads, kept until the next init.
 */
int sw__dyncfg_init(const sw_config_t *cfg, uint32_t span_capacity, struct sw__sampler *sampler,
                    char *errbuf, size_t errlen);

/* sw_shutdown (no span call runs): frees the current and the retired ignore tables. */
void sw__dyncfg_release(void);

/* After fork in the child: forgets the parent's tables without freeing them. */
void sw__dyncfg_forget(void);

/* Whether a trace starting with `op` is ignored. Any thread; lock-free, no allocation. */
bool sw__dyncfg_ignored(const char *op);

/* The span limit for a segment starting now. Any thread; one relaxed load. */
uint32_t sw__dyncfg_span_limit(void);

/*
 * Setters from text (configuration discovery thread): each returns 0 when applied (also when
 * the value equals the current one), SW_ECONFIG for a bad value (message in errbuf, nothing
 * changed) or SW_ELIMIT (ignore list: SW__IGNORE_TABLES_MAX replacements used). NULL value:
 * back to the startup value of the run.
 */
int sw__dyncfg_set_sample(const char *value, char *errbuf, size_t errlen);
int sw__dyncfg_set_ignore_suffix(const char *value, char *errbuf, size_t errlen);
int sw__dyncfg_set_span_limit(const char *value, char *errbuf, size_t errlen);

/* The current values (tests, diagnostics): N per 3 s, span limit, and the ignore list text
   copied into buf. Any thread. */
void sw__dyncfg_current(int32_t *sample, uint32_t *span_limit, char *ignore, size_t ignore_len);

#endif /* SW_CONFIG_DYNAMIC_CONFIG_H */
