/*
 * span_mark.h - local spans that may be taken back (internal, for the instrumentation layers).
 *
 * The -finstrument-functions hooks keep a function's span only when it lasted long enough, and
 * the libmicrohttpd layer keeps a handler call's entry span only when the call did something.
 * Both need to open a span before knowing whether it is worth keeping (a span must be open
 * before its children), so they remember the segment's state at begin in a mark and, at the
 * end, either end the span normally or remove it again when nothing was attached to it since:
 * no child span, tag, log, reference or correlation change. A removed span leaves the segment
 * exactly as it was before the begin; a removed first span recycles its segment unreported.
 * A first span may also be set aside untouched and put back by a later call of the same request
 * (sw__span_stash_marked / sw__span_resume_marked), which costs less than a new begin.
 *
 * Owning thread only, like every span call; never blocks, never allocates.
 */
#ifndef SW_INSTRUMENT_SPAN_MARK_H
#define SW_INSTRUMENT_SPAN_MARK_H

#include <stdbool.h>
#include <stdint.h>

#include "skywalking.h"

struct sw__segment;

typedef struct sw__span_mark {
    struct sw__segment *segment; /* the segment the span went into; NULL: not recorded */
    int32_t span_id;
    /* The segment before the begin (meaningful when span_id > 0)... */
    uint32_t arena_before;
    uint32_t attrs_before;
    uint32_t refs_before;
    /* ...and right after it: what the begin itself attached (an entry span's reference and
       tags) does not count as "something attached to the span". */
    uint32_t attrs_after;
    uint32_t refs_after;
    uint32_t truncations_after;
    uint32_t correlation_after;
} sw__span_mark_t;

/* sw_local_span_begin / sw_entry_span_begin_w3c / sw_exit_span_begin that also fill `mark`;
   mark->span_id == 0 means the begin started a new segment. */
void sw__span_begin_local_marked(const char *operation, sw__span_mark_t *mark);
void sw__span_begin_entry_marked(const char *operation, const char *sw8, const char *correlation,
                                 const char *sw8_x, const char *traceparent, const char *tracestate,
                                 sw__span_mark_t *mark);
void sw__span_begin_exit_marked(const char *operation, const char *peer, sw__span_mark_t *mark);

/*
 * Removes the active span (the one `mark` was taken for) when nothing was attached to it since
 * its begin, and returns true: the segment is as it was before the begin. Otherwise returns
 * false and the span stays open (end it with sw_span_end).
 */
bool sw__span_discard_marked(const sw__span_mark_t *mark);

/*
 * A request served in several calls (libmicrohttpd calls the handler once before each request's
 * real call, and once per chunk of an upload): when the active span (taken with `mark`) began
 * its segment and nothing was attached to it since (as for sw__span_discard_marked), sets the
 * segment aside under the pointers (key_a, key_b), the span still open but off the stack, and
 * returns true; a segment set aside before on this thread and not resumed is given back
 * unreported. Returns false otherwise (nothing changed; end or discard the span as usual).
 */
bool sw__span_stash_marked(const sw__span_mark_t *mark, const void *key_a, const void *key_b);

/*
 * Puts the segment set aside under (key_a, key_b) back on this thread's stack, its first span
 * active again with the start time of its begin, and fills `mark` as that begin did. Only when
 * the thread has no open span and the segment belongs to the current run. Returns false
 * otherwise (nothing changed: begin a new span).
 */
bool sw__span_resume_marked(const void *key_a, const void *key_b, sw__span_mark_t *mark);

#endif /* SW_INSTRUMENT_SPAN_MARK_H */
