/*
 * span_async.h - exit spans that outlive the call that began them (internal, for the preload
 * plugins).
 *
 * A non-blocking client starts an operation in one call and learns its end in another: libcurl's
 * multi interface (curl_multi_add_handle ... curl_multi_info_read), libpq's PQsendQuery ...
 * PQgetResult, hiredis' redisAppendCommand ... redisGetReply. Between the two calls the thread
 * goes on tracing other work, so the span cannot stay on the thread's span stack. Two shapes:
 *
 * - Detached spans (like the Java agent's AbstractSpan.prepareForAsync / asyncFinish): the span
 *   is begun as usual (it is the active span, so sw_inject works for it), then detached from the
 *   stack while it stays open; its segment counts it in async_open. When the stack empties the
 *   segment is parked (off the context, still owned by this thread) instead of reported; the
 *   end of its last detached span reports it. Several detached spans of one segment end in any
 *   order. They are begun and ended on one thread (the owner): an end attempted on another
 *   thread returns false and leaves the span alone.
 * - Spans begun late (sw__span_begin_exit_since): the span is begun at the end of the operation,
 *   under whatever span is active then, with the start time the plugin remembered. Any thread.
 *
 * A detached span still open when its agent run ends (sw_shutdown, or a fork's child) or when
 * its thread exits is neither reported nor counted; its block is not freed (a bounded leak of
 * one block per such segment, never a use after free).
 */
#ifndef SW_INSTRUMENT_SPAN_ASYNC_H
#define SW_INSTRUMENT_SPAN_ASYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "skywalking.h"
#include "span_mark.h"

struct sw__segment;

typedef struct sw__span_async {
    struct sw__segment *segment; /* NULL: not recorded (unsampled, over the limit, agent off) */
    int32_t span_id;
    uint32_t epoch; /* the agent run it was begun in */
    uint64_t owner; /* the owning thread's token (unique per thread for the process's life) */
} sw__span_async_t;

/* What sw__span_async_resume replaced on the thread's context, put back by _end. */
typedef struct sw__span_async_saved {
    struct sw__segment *segment;
    int32_t active;
    uint32_t noop_depth;
    bool unrecorded;
    bool resumed;
} sw__span_async_saved_t;

/* sw__span_begin_exit_marked that also fills `a`. The span is the active span until detached. */
void sw__span_async_begin_exit(const char *operation, const char *peer, sw__span_async_t *a,
                               sw__span_mark_t *mark);

/* Takes the active span (begun by sw__span_async_begin_exit into `a`) off the stack; it stays
   open. A span that is not recorded is simply ended (its no-op begin balanced). */
void sw__span_async_detach(sw__span_async_t *a);

/*
 * Makes the detached span `a` the active span of this thread so that the sw_span_* setters act
 * on it, saving the thread's own state in `s`. Returns true when it did; false when the span is
 * not recorded, belongs to an earlier run, or belongs to another thread (then nothing changed).
 * Either way the caller must call sw__span_async_end(a, s) next, with no other span call
 * between the two but the setters (sw_span_tag, _log, _set_error, _set_component, _set_peer).
 */
bool sw__span_async_resume(sw__span_async_t *a, sw__span_async_saved_t *s);

/*
 * Ends the span resumed by sw__span_async_resume, reports its segment when it was parked and
 * this was its last open detached span, and restores the thread's state. Returns false only
 * when the span belongs to another thread (the span is then untouched and stays open). `a` is
 * cleared.
 */
bool sw__span_async_end(sw__span_async_t *a, sw__span_async_saved_t *s);

/*
 * sw__span_begin_exit_marked, then, when start_ms is not 0, the span's start time is set to
 * `start_ms` (an earlier wall-clock time in ms, from sw__span_clock_ms), clamped so that it
 * starts no earlier than its parent. End it with sw_span_end. Any thread.
 */
void sw__span_begin_exit_since(const char *operation, const char *peer, int64_t start_ms,
                               sw__span_mark_t *mark);

/* The wall-clock time spans use, in ms since the Unix epoch. */
int64_t sw__span_clock_ms(void);

#endif /* SW_INSTRUMENT_SPAN_ASYNC_H */
