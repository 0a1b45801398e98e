#!/usr/bin/env python3
"""check_recorded.py c|cxx TRACES.json

Checks what a consumer program built against the installed skywalking-c recorded, as decoded by
the installed `swtrace --json` (one JSON array of traces, each with its segments and spans).
Exits non-zero with a message naming the first expectation that does not hold."""
import json
import sys


def fail(msg):
    sys.exit(f"check_recorded: {msg}")


def spans_by_op(trace):
    out = {}
    for seg in trace["segments"]:
        for span in seg["spans"]:
            out[span["operationName"]] = (seg, span)
    return out


def tags(span):
    return {kv["key"]: kv["value"] for kv in span["tags"]}


def log_values(span):
    return {kv["key"]: kv["value"] for log in span["logs"] for kv in log["data"]}


def check_c(traces):
    if len(traces) != 1:
        fail(f"c: expected 1 trace, got {len(traces)}")
    spans = spans_by_op(traces[0])
    for op in ("GET /c-consumer", "consumer_query", "SELECT 1"):
        if op not in spans:
            fail(f"c: no span '{op}' (got {sorted(spans)})")
    seg, entry = spans["GET /c-consumer"]
    _, local = spans["consumer_query"]
    _, db = spans["SELECT 1"]
    if seg["service"] != "c-consumer":
        fail(f"c: service is '{seg['service']}'")
    if entry["spanType"] != "Entry" or tags(entry).get("consumer") != "c":
        fail(f"c: entry span {entry}")
    # The -finstrument-functions hook of the installed library named the function's span.
    if local["spanType"] != "Local" or local["parentSpanId"] != entry["spanId"]:
        fail(f"c: instrumented function span {local}")
    if db["parentSpanId"] != local["spanId"] or db["peer"] != "db:5432" \
            or db["spanLayer"] != "Database":
        fail(f"c: exit span {db}")


def check_cxx(traces):
    if len(traces) != 1:
        fail(f"cxx: expected 1 trace, got {len(traces)}")
    trace = traces[0]
    if len(trace["segments"]) != 2:
        fail(f"cxx: expected 2 segments (main, worker), got {len(trace['segments'])}")
    spans = spans_by_op(trace)
    for op in ("GET /cxx-consumer", "worker", "load config"):
        if op not in spans:
            fail(f"cxx: no span '{op}' (got {sorted(spans)})")
    main_seg, entry = spans["GET /cxx-consumer"]
    worker_seg, _ = spans["worker"]
    _, load = spans["load config"]
    if tags(entry).get("consumer") != "c++" or entry["isError"]:
        fail(f"cxx: entry span {entry}")
    if worker_seg["refType"] != "CrossThread" \
            or worker_seg["parentSegmentId"] != main_seg["traceSegmentId"]:
        fail(f"cxx: the worker's segment does not continue the main one: {worker_seg}")
    if not load["isError"] or log_values(load).get("event") != "error":
        fail(f"cxx: the span the exception left is not an error with an error log: {load}")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("c", "cxx"):
        sys.exit(__doc__)
    with open(sys.argv[2]) as f:
        traces = json.load(f)
    {"c": check_c, "cxx": check_cxx}[sys.argv[1]](traces)
    print(f"check_recorded: {sys.argv[1]}: as expected")


main()
