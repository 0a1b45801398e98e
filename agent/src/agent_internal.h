/*
 * agent_internal.h - hooks of the agent's lifecycle for other parts of the project (internal):
 * the LD_PRELOAD layer (fork) and the tests.
 */
#ifndef SW_AGENT_INTERNAL_H
#define SW_AGENT_INTERNAL_H

#include <stdint.h>

/*
 * In a forked child (registered with pthread_atfork by sw_init; callable again, idempotent):
 * draws a new process uuid, abandons the parent's run without flushing it (the parent reports
 * its own data) and leaves the agent off, ready for sw_init. Child only, before it starts
 * threads.
 */
void sw__agent_after_fork_child(void);

/* Segment blocks allocated by the current run's pool so far (tests: steady-state reuse). They
   are never freed during the run, so this is also the number alive; never above the cap. */
uint64_t sw__agent_blocks_allocated(void);

/* Units (SW__CHUNK_BYTES) of encoded-segment chunks the current run has allocated and not freed
   (tests: steady-state reuse; never above the chunk cap). */
uint64_t sw__agent_chunk_units(void);

/* The cap of the current (or last) run's pool: SW_AGENT_MAX_SEGMENTS or the derived value. */
uint64_t sw__agent_blocks_max(void);

#endif /* SW_AGENT_INTERNAL_H */
