/*
 * swtrace: the offline viewer for segment files written by the agent's file reporter.
 *
 * A segment file is a sequence of records, each an unsigned base-128 varint length followed by
 * that many bytes of a serialized skywalking.v3.SegmentObject. swtrace reads one or more such
 * files (sw__trace_set_read_*), joins the segments of each trace into one tree
 * (sw__trace_forest_build) and prints it as text (sw__trace_print_text) or JSON
 * (sw__trace_print_json).
 *
 * Everything here runs on the caller's single thread; nothing is shared, nothing blocks except
 * on file I/O. Ownership: the set owns the decoded segments; a forest points into its set and
 * must be destroyed before the set.
 */
#ifndef SWTRACE_H
#define SWTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tracing.pb-c.h"

/* A record longer than this is rejected as corrupt instead of being allocated. */
#define SW__TRACE_RECORD_MAX (64u * 1024u * 1024u)

/* Error codes of the viewer: name, message. 0 is success, every error is negative. */
#define SW__TRACE_ERRORS(X)                                                    \
    X(SW__TRACE_ERR_IO, -1, "cannot read the file")                            \
    X(SW__TRACE_ERR_TRUNCATED, -2, "the file ends inside a record")            \
    X(SW__TRACE_ERR_FOREIGN, -3, "a record is not a SkyWalking SegmentObject") \
    X(SW__TRACE_ERR_TOO_LARGE, -4, "a record length exceeds the 64 MiB limit") \
    X(SW__TRACE_ERR_NOMEM, -5, "out of memory")

enum sw__trace_err {
#define SW__TRACE_ERR_ENUM(name, code, msg) name = code,
    SW__TRACE_ERRORS(SW__TRACE_ERR_ENUM)
#undef SW__TRACE_ERR_ENUM
};

/* Returns the static message of an error code ("unknown error" for others). */
const char *sw__trace_strerror(int err);

/* Why a node of the tree has no ordinary parent; shown next to the span. */
typedef enum sw__trace_note {
    SW__TRACE_NOTE_NONE = 0,
    SW__TRACE_NOTE_ORPHAN,         /* its ref names a parent segment that is not in the files */
    SW__TRACE_NOTE_NO_PARENT_SPAN, /* parent segment found, but not the referenced span */
    SW__TRACE_NOTE_LOST_PARENT,    /* parentSpanId names no span of its own segment */
    SW__TRACE_NOTE_CYCLE,          /* refs or parentSpanIds form a cycle; shown as a root */
} sw__trace_note_t;

/* One decoded segment with where it came from and how it was joined. */
typedef struct sw__trace_segment {
    Skywalking__V3__SegmentObject *obj; /* owned by the set */
    const char *file;                   /* name of the file, owned by the set */
    uint64_t offset;                    /* byte offset of the record's length prefix */
    int64_t start, end;                 /* min startTime, max endTime over its spans */
    /* Set by sw__trace_forest_build: the segment its root span hangs under, or SIZE_MAX. */
    size_t parent_seg;
    int32_t parent_span_id;                   /* valid when parent_seg != SIZE_MAX */
    Skywalking__V3__SegmentReference *joined; /* the ref that joined it (or the first ref) */
    sw__trace_note_t note;
} sw__trace_segment_t;

/* All segments read so far. Zero-initialise before the first read. */
typedef struct sw__trace_set {
    sw__trace_segment_t *segs;
    size_t n_segs, cap_segs;
    char **files; /* copies of the file names, for sw__trace_segment_t.file */
    size_t n_files;
} sw__trace_set_t;

/* One line of the tree: a span at a depth, in display (depth-first, start-time) order. */
typedef struct sw__trace_row {
    size_t seg;   /* index into the set */
    size_t span;  /* index into segs[seg].obj->spans */
    size_t depth; /* 0 for a root */
    sw__trace_note_t note;
} sw__trace_row_t;

typedef struct sw__trace {
    const char *trace_id; /* points into the first segment */
    int64_t start, end;
    size_t n_segments, n_spans, n_errors;
    sw__trace_row_t *rows; /* n_spans rows: every span exactly once */
} sw__trace_t;

typedef struct sw__trace_forest {
    sw__trace_t *traces; /* ordered by start time, then trace id */
    size_t n_traces, n_segments, n_spans, n_errors;
} sw__trace_forest_t;

/*
 * Decodes every record of buf[0, len) and appends the segments to set. `name` names the input
 * in messages and is copied. Returns 0, or a negative SW__TRACE_ERR_* with a message naming the
 * file and the byte offset in errbuf; segments decoded before the bad record stay in set.
 * buf is not retained.
 */
int sw__trace_set_read_buffer(sw__trace_set_t *set, const uint8_t *buf, size_t len,
                              const char *name, char *errbuf, size_t errlen);

/* Reads the file at path (regular file or pipe) with sw__trace_set_read_buffer. */
int sw__trace_set_read_file(sw__trace_set_t *set, const char *path, char *errbuf, size_t errlen);

/*
 * --crash: reads the crash spool at `path`, or every spool (*.swcrash) of the directory
 * `path` (agent/src/crash/crash_spool.h), into set: the segments a crashed process recorded,
 * their crash logs' frames as module+offset and a `crash` tag on each one's first span. One
 * line per spool goes to `out`. Returns 0 or a negative SW__TRACE_ERR_* with a message in
 * errbuf (a damaged spool: SW__TRACE_ERR_FOREIGN).
 */
int sw__trace_set_read_crash(sw__trace_set_t *set, const char *path, FILE *out, char *errbuf,
                             size_t errlen);

/* Frees every segment and file name; the set is zeroed and may be reused. */
void sw__trace_set_destroy(sw__trace_set_t *set);

/*
 * Groups the set's segments by traceId, joins them through their refs and fills forest (which
 * is overwritten). Also writes the join results into set->segs[i]. Returns 0 or
 * SW__TRACE_ERR_NOMEM (forest then empty). Linear-logarithmic in the number of spans; never
 * recursive, so hostile inputs (cycles, deep chains) cannot exhaust the stack.
 */
int sw__trace_forest_build(sw__trace_forest_t *forest, sw__trace_set_t *set);

/* Frees what sw__trace_forest_build allocated; the set is untouched. */
void sw__trace_forest_destroy(sw__trace_forest_t *forest);

/* Returns the name of a span type / layer / ref type ("Entry", "Http", "CrossThread", ...). */
const char *sw__trace_span_type_name(int type);
const char *sw__trace_span_layer_name(int layer);
const char *sw__trace_ref_type_name(int type);

/* Returns b - a, saturated to [0, INT64_MAX] (hostile inputs may hold any int64). */
int64_t sw__trace_duration(int64_t a, int64_t b);

/* Prints the forest as trees with a timing waterfall, then a summary line. */
void sw__trace_print_text(FILE *out, const sw__trace_forest_t *forest, const sw__trace_set_t *set,
                          bool color);

/* Prints the forest as one JSON document: an array of traces. Returns 0 or
 * SW__TRACE_ERR_NOMEM (nothing printed). */
int sw__trace_print_json(FILE *out, const sw__trace_forest_t *forest, const sw__trace_set_t *set);

#endif
