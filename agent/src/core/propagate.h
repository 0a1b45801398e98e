/*
 * propagate.h - which trace headers the instrumentation reads and writes (internal):
 * SW_AGENT_PROPAGATION of the running agent. The plugins ask before they look up or build a
 * request's headers; sw_inject and sw_inject_w3c write what they are asked for whatever the
 * setting, and sw_entry_span_begin_w3c applies it itself.
 */
#ifndef SW_CORE_PROPAGATE_H
#define SW_CORE_PROPAGATE_H

#include <stdbool.h>

/* The setting names sw8 (sw8, sw8-correlation, sw8-x): every value but "tracecontext". Any
   thread while the agent runs (the setting is read-only during a run). */
bool sw__propagation_sw8(void);

/* The setting names tracecontext (traceparent, tracestate). */
bool sw__propagation_w3c(void);

#endif /* SW_CORE_PROPAGATE_H */
