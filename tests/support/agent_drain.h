/*
 * agent_drain.h - waiting until the agent has accounted for every finished segment (benchmarks
 * that read the consumer thread's CPU time once it has written everything).
 */
#ifndef AGENT_DRAIN_H
#define AGENT_DRAIN_H

#include <stdbool.h>
#include <time.h>

#include "skywalking.h"

/* Waits, at most 10 s, until every finished segment is reported, dropped or failed (sw_stats);
   returns false on timeout. */
static inline bool agent_drained(void)
{
    for (int i = 0; i < 10000; i++) {
        sw_stats_t st;
        sw_stats(&st);
        if (st.segments_reported + st.segments_dropped + st.segments_failed ==
            st.segments_finished) {
            return true;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return false;
}

#endif /* AGENT_DRAIN_H */
