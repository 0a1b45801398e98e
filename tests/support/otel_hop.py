#!/usr/bin/env python3
"""otel_hop.py - a W3C-only service between two skywalking-c processes, for the preload_w3c test.

It is traced by OpenTelemetry's Python SDK and speaks only W3C Trace Context: for each GET it
extracts the incoming traceparent/tracestate with TraceContextTextMapPropagator, opens a server
span continuing that context, and forwards the request to DOWNSTREAM + path with the headers
the same propagator injects for its span (traceparent naming its own span as the parent, and
the tracestate it received). sw8 is never forwarded. It answers with the downstream status.

    otel_hop.py PORTFILE DOWNSTREAM LOGFILE

The port goes to PORTFILE once it listens (127.0.0.1, a free port); one JSON line per request
goes to LOGFILE: the incoming headers, the span context the propagator extracted, the hop's own
span id and the headers it sent. It serves until its stdin reaches EOF.
"""
import json
import os
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

PROPAGATOR = TraceContextTextMapPropagator()
trace.set_tracer_provider(TracerProvider())
TRACER = trace.get_tracer("otel_hop")
LOG_LOCK = threading.Lock()


def main():
    portfile, downstream, logfile = sys.argv[1:4]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            carrier = {k.lower(): v for k, v in self.headers.items()}
            ctx = PROPAGATOR.extract(carrier)
            parent = trace.get_current_span(ctx).get_span_context()
            with TRACER.start_as_current_span(
                "GET " + self.path, context=ctx, kind=trace.SpanKind.SERVER
            ) as span:
                out = {}
                PROPAGATOR.inject(out)
                own = span.get_span_context()
                req = urllib.request.Request(downstream + self.path, headers=out)
                try:
                    with urllib.request.urlopen(req, timeout=60) as resp:
                        status = resp.status
                except urllib.error.HTTPError as e:
                    status = e.code
                except OSError:
                    status = 502
            record = {
                "incoming": carrier,
                "extracted_valid": parent.is_valid,
                "extracted_trace_id": format(parent.trace_id, "032x"),
                "extracted_span_id": format(parent.span_id, "016x"),
                "extracted_sampled": parent.trace_flags.sampled,
                "extracted_tracestate": parent.trace_state.to_header(),
                "own_trace_id": format(own.trace_id, "032x"),
                "own_span_id": format(own.span_id, "016x"),
                "outgoing": out,
                "downstream_status": status,
            }
            with LOG_LOCK, open(logfile, "a", encoding="utf-8") as f:
                f.write(json.dumps(record, sort_keys=True) + "\n")
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tmp = portfile + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(tmp, portfile)
    while sys.stdin.buffer.read(64):
        pass
    server.shutdown()


if __name__ == "__main__":
    main()
