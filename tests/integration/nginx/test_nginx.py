#!/usr/bin/python3
"""Tests of ngx_http_skywalking_module against the real Debian nginx (tests/nginx.cmake runs
each case as its own ctest entry): test_nginx.py CASE.

  config    bad directive values stop `nginx -t` with a message naming the directive
  spans     entry and exit spans, tags, peers, components, errors, sw8 injection into a plain
            backend, the ref joining nginx's exit span to pl_server's entry span, incoming
            sw8, the access log's trace ids, failover (one dead server: two exit spans),
            `skywalking off`, skywalking_ignore, skywalking_operation_name, $sw8
  w3c       incoming traceparent continued; traceparent and sw8 sent upstream
  grpc      grpc_pass to a real gRPC server: exit span, sw8 in the call's metadata
  fastcgi_uwsgi  fastcgi_pass and uwsgi_pass to responders of those protocols (in this
            process): exit spans, sw8 as the HTTP_SW8 parameter / variable, failover
  hostile   malformed, oversized, invalid-UTF-8 sw8 / traceparent headers and request lines:
            every request answered, no worker crashes, the spans stay valid
  reload    exact accounting across `nginx -s reload` and a binary upgrade (USR2) under load
  dead_collector  gRPC reporter to a closed port: worker RSS flat under load, latency as
            with tracing off
"""
import os
import signal
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nginx_harness import (Backend, Nginx, PlServer, decode_sw8, encode_sw8, fail, http_get,
                           raw_request, segments, tag, tmpdir, traces, wait_for, WAIT_S)

TRACE_IN = "a1b2c3d4e5f60718293a4b5c6d7e8f90.1.1"
SEG_IN = "a1b2c3d4e5f60718293a4b5c6d7e8f90.1.2"


def check(cond, msg):
    if not cond:
        fail(msg)


def entry_of(seg):
    return seg["spans"][0]


def by_url(segs, part):
    return [s for s in segs if part in (tag(entry_of(s), "url") or "")]


# ---------------------------------------------------------------------------------------------

def case_config():
    bad = [
        ("skywalking maybe;", "skywalking"),
        ("skywalking_propagate sometimes;", "skywalking_propagate"),
        ("skywalking_ignore nope;", "skywalking_ignore"),
        ('skywalking_service_name "";', "skywalking_service_name"),
        ('skywalking_service_name "a\tb";', "skywalking_service_name"),
        ("skywalking_config /nonexistent/sw.conf;", "skywalking_config"),
        ("skywalking_config {tmp}/bad.conf;", "skywalking_config"),
        ("server { listen 127.0.0.1:{port0}; location / { skywalking_service_name x; } }",
         "skywalking_service_name"),
        ("skywalking on; skywalking_operation_name;", "skywalking_operation_name"),
    ]
    for body, name in bad:
        n = Nginx(body)
        with open(os.path.join(n.tmp, "bad.conf"), "w") as f:
            f.write("SW_AGENT_SAMPLE=abc\n")
        rc, out = n.test_config()
        check(rc != 0, "nginx -t accepted %r" % body)
        check(name in out, "nginx -t's message for %r does not name %s: %s" % (body, name, out))
    good = Nginx("skywalking on; skywalking_service_name edge; skywalking_ignore /health /x;\n"
                 "server { listen 127.0.0.1:{port0}; location / { skywalking off; } }")
    rc, out = good.test_config()
    check(rc == 0, "nginx -t refused a good configuration: %s" % out)
    # a bad setting of the environment is reported by nginx -t too
    n = Nginx("skywalking on;", env={"SW_AGENT_SAMPLE": "many"})
    rc, out = n.test_config()
    check(rc != 0 and "SW_AGENT_SAMPLE" in out, "a bad SW_AGENT_SAMPLE passed nginx -t: %s" % out)


# ---------------------------------------------------------------------------------------------

SPANS_CONF = """
  log_format sw '$request_uri $status $sw_trace_id $sw_segment_id $sw_span_id';
  skywalking_service_name edge;
  skywalking_config {tmp}/sw.conf;
  upstream failover {{ server 127.0.0.1:{dead}; server 127.0.0.1:{backend}; }}
  upstream kept {{ server 127.0.0.1:{backend}; keepalive 4; }}
  upstream slow {{ server 127.0.0.1:{silent}; server 127.0.0.1:{backend}; }}
  server {{
    listen 127.0.0.1:{{port0}};
    skywalking on;
    skywalking_ignore /health;
    access_log {tmp}/access.log sw;
    location /plain/ {{ proxy_pass http://127.0.0.1:{backend}; }}
    location /pl/ {{ rewrite ^ /leaf break; proxy_pass http://127.0.0.1:{pl}; }}
    location /fo/ {{ proxy_pass http://failover; proxy_next_upstream error timeout; }}
    location /off/ {{ skywalking off; proxy_pass http://127.0.0.1:{backend}; }}
    location /health {{ proxy_pass http://127.0.0.1:{backend}; }}
    location /named/ {{ skywalking_operation_name "named-$request_method";
                       proxy_pass http://127.0.0.1:{backend}; }}
    location /var {{ return 200 "$sw8"; }}
    location /nopropagate/ {{ skywalking_propagate off; proxy_pass http://127.0.0.1:{backend}; }}
    location /keep/ {{ proxy_pass http://kept; proxy_http_version 1.1;
                      proxy_set_header Connection ""; }}
    location /setvar/ {{ proxy_set_header sw8 $sw8; proxy_pass http://127.0.0.1:{backend}; }}
    location /tfo/ {{ proxy_pass http://slow; proxy_read_timeout 300ms;
                     proxy_next_upstream error timeout; }}
    location /redir/ {{ rewrite ^/redir/(.*) /plain/$1 last; }}
    location /auth/ {{ auth_request /_auth; proxy_pass http://127.0.0.1:{backend}; }}
    location = /_auth {{ internal; proxy_pass http://127.0.0.1:{backend}/authcheck; }}
  }}
"""


def case_spans():
    tmp = tmpdir()
    seg_file = os.path.join(tmp, "nginx.bin")
    with open(os.path.join(tmp, "sw.conf"), "w") as f:
        f.write("# the agent's settings, from skywalking_config\nSW_REPORTER_FILE_PATH=%s\n"
                "SW_AGENT_SAMPLE=-1\n" % seg_file)
    backend = Backend()
    pl = PlServer(tmp, os.path.join(tmp, "pl.bin"))
    from nginx_harness import closed_port
    # a server that takes connections (the kernel's backlog) and never answers: a timeout
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    conf = SPANS_CONF.format(tmp=tmp, backend=backend.port, pl=pl.port, dead=closed_port(),
                             silent=silent.getsockname()[1])
    ngx = Nginx(conf, tmp=tmp).start()
    port = ngx.ports[0]
    try:
        results = {}
        for path, headers in [
                ("/plain/users/17", {}),
                ("/plain/users/18", {"sw8": encode_sw8(TRACE_IN, SEG_IN, 3)}),
                ("/pl/x", {}),
                ("/fo/a", {}),
                ("/off/b", {}),
                ("/health/c", {}),
                ("/named/d", {}),
                ("/plain/fail", {}),
                ("/var", {}),
                ("/nopropagate/e", {"sw8": "client-value"}),
                ("/redir/f", {}),
                ("/keep/1", {}),
                ("/keep/2", {}),
                ("/setvar/h", {"sw8": "client-value"}),
                ("/tfo/i", {}),
                ("/auth/g", {"sw8": encode_sw8(TRACE_IN, SEG_IN, 4)}),
        ]:
            results[path] = http_get(port, path, headers)
    finally:
        ngx.stop()
        pl.stop()
        backend.stop()
    ngx.check_no_crash()
    for path, (status, _) in results.items():
        want = 503 if "fail" in path else 200
        check(status == want, "%s answered %d, not %d" % (path, status, want))
    tr = traces(seg_file, os.path.join(tmp, "pl.bin"))
    segs = segments(tr)
    mine = [s for s in segs if s["service"] == "edge"]
    check(len(mine) == 14, "%d nginx segments, not 14 (one per traced request): %s" %
          (len(mine), [tag(entry_of(s), "url") for s in mine]))

    # /plain/users/17: entry + exit, tags, peers, component, and the sw8 the backend got
    s = by_url(mine, "/plain/users/17")[0]
    e, x = s["spans"]
    check(e["spanType"] == "Entry" and e["spanLayer"] == "Http" and e["componentId"] == 6000,
          "entry span: %s" % e)
    check(e["operationName"] == "/plain/", "operation %r, not the location" % e["operationName"])
    check(tag(e, "http.method") == "GET" and tag(e, "http.status_code") == "200",
          "entry tags: %s" % e["tags"])
    check(tag(e, "url") == "http://127.0.0.1:%d/plain/users/17" % port, "url: %s" % e["tags"])
    check(e["peer"].startswith("127.0.0.1:"), "entry peer %r: not the client" % e["peer"])
    check(not e["isError"] and not x["isError"], "errors on a 200")
    check(x["spanType"] == "Exit" and x["parentSpanId"] == 0 and x["componentId"] == 49 and
          x["spanLayer"] == "Http", "exit span: %s" % x)
    check(x["peer"] == "127.0.0.1:%d" % backend.port, "exit peer %r" % x["peer"])
    check(tag(x, "http.status_code") == "200" and tag(x, "upstream.header_time_ms") is not None,
          "exit tags: %s" % x["tags"])
    got = backend.requests("/plain/users/17")
    check(len(got) == 1 and "sw8" in got[0][1], "the backend got no sw8: %s" % got)
    sw8 = decode_sw8(got[0][1]["sw8"])
    check(sw8["segment"] == s["traceSegmentId"] and sw8["span"] == x["spanId"],
          "the sw8 sent does not name the exit span: %s" % sw8)
    check(sw8["service"] == "edge" and sw8["peer"] == "127.0.0.1:%d" % backend.port,
          "sw8 service/peer: %s" % sw8)
    check("traceparent" not in got[0][1], "traceparent sent with SW_AGENT_PROPAGATION=sw8")

    # an incoming sw8 is continued, and replaced upstream by ours
    s = by_url(mine, "/plain/users/18")[0]
    refs = entry_of(s)["refs"]
    check(len(refs) == 1 and refs[0]["parentTraceSegmentId"] == SEG_IN and
          refs[0]["parentSpanId"] == 3 and refs[0]["refType"] == "CrossProcess",
          "the incoming sw8 is not the entry's ref: %s" % refs)
    t = [t for t in tr if any(g["traceSegmentId"] == s["traceSegmentId"] for g in t["segments"])]
    check(t and t[0]["traceId"] == TRACE_IN, "trace id not continued")
    got = backend.requests("/plain/users/18")
    sw8 = decode_sw8(got[0][1]["sw8"])
    check(sw8["segment"] == s["traceSegmentId"] and sw8["trace"] == TRACE_IN,
          "the client's sw8 reached the backend instead of ours: %s" % sw8)
    check(got[0][1]["count:sw8"] == 1, "%d sw8 headers reached the backend, not only ours" %
          got[0][1]["count:sw8"])

    # the ref that joins nginx's exit span to pl_server's entry span
    s = by_url(mine, "/pl/x")[0]
    x = s["spans"][1]
    plseg = [g for g in segs if g["service"] == "pl_server" and
             g["parentSegmentId"] == s["traceSegmentId"]]
    check(len(plseg) == 1, "no pl_server segment refers to nginx's segment")
    check(plseg[0]["parentSpanId"] == x["spanId"], "pl_server's ref names span %s, not the exit"
          " span %d" % (plseg[0]["parentSpanId"], x["spanId"]))
    check(x["peer"] == "127.0.0.1:%d" % pl.port, "exit peer to pl_server %r" % x["peer"])

    # failover: two exit spans, the first (dead server) an error; the retry carries its own sw8
    s = by_url(mine, "/fo/a")[0]
    exits = s["spans"][1:]
    check(len(exits) == 2, "%d exit spans for a failover, not 2" % len(exits))
    check(exits[0]["isError"] and not exits[1]["isError"] and
          tag(exits[0], "http.status_code") == "502", "failover errors: %s" % exits)
    check(exits[0]["peer"] != exits[1]["peer"] and
          exits[1]["peer"] == "127.0.0.1:%d" % backend.port, "failover peers: %s" % exits)
    got = backend.requests("/fo/a")
    check(len(got) == 1 and decode_sw8(got[0][1]["sw8"])["span"] == exits[1]["spanId"],
          "the retry's sw8 does not name the second exit span")

    # failover after a timeout: the silent server's attempt is an error (504), the retry not
    s = by_url(mine, "/tfo/i")[0]
    exits = s["spans"][1:]
    check(len(exits) == 2 and exits[0]["isError"] and not exits[1]["isError"] and
          exits[0]["peer"] == "127.0.0.1:%d" % silent.getsockname()[1] and
          tag(exits[0], "http.status_code") == "504", "failover after a timeout: %s" % exits)
    silent.close()

    # off, ignored: no span; named operation; 503: errors
    check(not by_url(mine, "/off/b") and not by_url(mine, "/health/c"),
          "spans for `skywalking off` or skywalking_ignore")
    check(by_url(mine, "/named/d")[0]["spans"][0]["operationName"] == "named-GET",
          "skywalking_operation_name not used")
    s = by_url(mine, "/plain/fail")[0]
    check(s["spans"][0]["isError"] and s["spans"][1]["isError"] and
          tag(s["spans"][0], "http.status_code") == "503", "a 503 is not an error: %s" % s)
    # $sw8 outside an upstream: an exit span of its own, named by the value
    s = by_url(mine, "/var")[0]
    v = decode_sw8(results["/var"][1].decode())
    check(len(s["spans"]) == 2 and v["segment"] == s["traceSegmentId"] and v["span"] == 1,
          "$sw8 does not name the request's exit span: %s" % v)
    # skywalking_propagate off: the client's headers pass untouched, none of ours
    got = backend.requests("/nopropagate/e")
    check(got[0][1].get("sw8") == "client-value", "propagate off changed sw8: %s" % got)

    # an internal redirect: one entry span (the first location's), the exit span after it
    s = by_url(mine, "/redir/f")
    check(len(s) == 1 and s[0]["spans"][0]["operationName"] == "/redir/" and
          len(s[0]["spans"]) == 2 and s[0]["spans"][1]["spanType"] == "Exit",
          "internal redirect: %s" % s)
    # a subrequest (auth_request): its upstream attempt is an exit span of the main request's
    # entry, and both upstream requests carry their own exit span's sw8, once
    s = by_url(mine, "/auth/g")
    check(len(s) == 1 and [sp["spanType"] for sp in s[0]["spans"]] == ["Entry", "Exit", "Exit"],
          "auth_request: %s" % s)
    for part, want in (("/authcheck", 1), ("/auth/g", 2)):
        got = backend.requests(part)
        check(len(got) == 1 and got[0][1]["count:sw8"] == 1, "%s: %s" % (part, got))
        v = decode_sw8(got[0][1]["sw8"])
        check(v["segment"] == s[0]["traceSegmentId"] and v["span"] == want and
              v["trace"] == TRACE_IN, "%s carries sw8 %s, not exit span %d" % (part, v, want))

    # keepalive upstream connections (the balancer answers NGX_DONE with a cached one): each
    # request still has its exit span, named by the sw8 that request carried
    for path in ("/keep/1", "/keep/2"):
        s = by_url(mine, path)[0]
        got = backend.requests(path)
        v = decode_sw8(got[0][1]["sw8"])
        check(len(s["spans"]) == 2 and v["segment"] == s["traceSegmentId"] and v["span"] == 1,
              "%s over a kept connection: sw8 %s, spans %s" % (path, v, s["spans"]))

    # proxy_set_header sw8 $sw8 on a traced upstream: the attempt's exit span, no other span
    s = by_url(mine, "/setvar/h")[0]
    got = backend.requests("/setvar/h")
    v = decode_sw8(got[0][1]["sw8"])
    check(len(s["spans"]) == 2 and got[0][1]["count:sw8"] == 1 and v["span"] == 1 and
          v["segment"] == s["traceSegmentId"], "proxy_set_header sw8 $sw8: %s, %s" % (v, s))

    # the access log's trace ids
    with open(os.path.join(tmp, "access.log")) as f:
        lines = [l.split() for l in f]
    for uri, status, trace_id, seg_id, span_id in lines:
        found = by_url(mine, uri)
        if not found:
            check(trace_id == "-", "%s: a trace id for an untraced request" % uri)
            continue
        check(seg_id == found[0]["traceSegmentId"] and span_id == "0",
              "%s: access log segment %s, spans say %s" % (uri, seg_id,
                                                           found[0]["traceSegmentId"]))
        t = [t for t in tr if any(g["traceSegmentId"] == seg_id for g in t["segments"])]
        check(t[0]["traceId"] == trace_id, "%s: access log trace id %s" % (uri, trace_id))
    stats = ngx.worker_stats()
    check(len(stats) == 2 and sum(w["reported"] for w in stats) == 14,
          "workers' counters: %s" % stats)


# ---------------------------------------------------------------------------------------------

def case_w3c():
    tmp = tmpdir()
    seg_file = os.path.join(tmp, "nginx.bin")
    backend = Backend()
    conf = ("server { listen 127.0.0.1:{port0}; skywalking on;\n"
            "  location / { proxy_pass http://127.0.0.1:%d; } }" % backend.port)
    ngx = Nginx(conf, tmp=tmp, env={"SW_REPORTER_FILE_PATH": seg_file,
                                    "SW_AGENT_PROPAGATION": "tracecontext,sw8"}).start()
    tid = "4bf92f3577b34da6a3ce929d0e0e4736"
    try:
        st, _ = http_get(ngx.ports[0], "/w3c",
                         {"traceparent": "00-%s-00f067aa0ba902b7-01" % tid})
    finally:
        ngx.stop()
        backend.stop()
    check(st == 200, "status %d" % st)
    tr = traces(seg_file)
    check(len(tr) == 1 and tr[0]["traceId"] == tid, "traceparent not continued: %s" %
          [t["traceId"] for t in tr])
    h = backend.requests("/w3c")[0][1]
    check(h.get("traceparent", "").startswith("00-%s-" % tid), "traceparent sent: %s" % h)
    check(decode_sw8(h["sw8"])["trace"] == tid, "sw8 sent: %s" % h.get("sw8"))


# ---------------------------------------------------------------------------------------------

def case_grpc():
    """grpc_pass to a real gRPC server (grpcio, a generic handler that records the metadata of
    each call): the exit span, and the sw8 the call carries as metadata."""
    import grpc
    from concurrent import futures
    seen = []

    class Handler(grpc.GenericRpcHandler):
        def service(self, details):
            seen.append((details.method, list(details.invocation_metadata)))
            return grpc.unary_unary_rpc_method_handler(lambda req, ctx: b"pong:" + req)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((Handler(),))
    gport = server.add_insecure_port("127.0.0.1:0")
    server.start()
    tmp = tmpdir()
    seg_file = os.path.join(tmp, "nginx.bin")
    conf = ("server { listen 127.0.0.1:{port0} http2; skywalking on;\n"
            "  location / { grpc_pass grpc://127.0.0.1:%d; } }" % gport)
    ngx = Nginx(conf, tmp=tmp, env={"SW_REPORTER_FILE_PATH": seg_file}).start()
    try:
        with grpc.insecure_channel("127.0.0.1:%d" % ngx.ports[0]) as ch:
            call = ch.unary_unary("/test.Echo/Ping")
            for i in range(2):
                out = call(b"ping%d" % i, timeout=30, metadata=[("sw8", "client-value")])
                check(out == b"pong:ping%d" % i, "gRPC answer through nginx: %r" % out)
    finally:
        ngx.stop()
        server.stop(5)
    ngx.check_no_crash()
    segs = segments(traces(seg_file))
    check(len(segs) == 2, "%d segments for 2 gRPC calls" % len(segs))
    for (method, md), seg in zip(seen, sorted(segs, key=lambda g: g["spans"][0]["startTime"])):
        e, x = seg["spans"]
        check(e["spanType"] == "Entry" and x["spanType"] == "Exit" and x["componentId"] == 23 and
              x["peer"] == "127.0.0.1:%d" % gport and not x["isError"] and
              tag(x, "http.status_code") == "200", "grpc_pass spans: %s" % seg["spans"])
        sw8 = [v for k, v in md if k == "sw8"]
        check(method == "/test.Echo/Ping" and len(sw8) == 1, "metadata of %s: %s" % (method, md))
        v = decode_sw8(sw8[0])
        check(v["segment"] == seg["traceSegmentId"] and v["span"] == x["spanId"],
              "the gRPC call's sw8 does not name its exit span: %s" % v)


# ---------------------------------------------------------------------------------------------

class Responder:
    """A TCP server on loopback (a thread per connection) that answers one request per
    connection with handle(sock) -> list of (name, value) pairs it received, and records them."""

    def __init__(self, handle):
        self.seen = []
        self.errors = []
        self.lock = threading.Lock()
        self.handle = handle
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.one, args=(conn,), daemon=True).start()

    def one(self, conn):
        with conn:
            conn.settimeout(WAIT_S)
            try:
                pairs = self.handle(conn)
            except Exception as e:  # reported by the case: a broken request from nginx
                with self.lock:
                    self.errors.append(repr(e))
                return
            with self.lock:
                self.seen.append(pairs)

    def requests(self, uri):
        """The pairs of each request whose REQUEST_URI is uri."""
        with self.lock:
            return [p for p in self.seen if ("REQUEST_URI", uri) in p]

    def stop(self):
        self.sock.close()


def recv_exact(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


def fcgi_pairs(data):
    """FastCGI name-value pairs (lengths of 1 byte, or 4 with the high bit set)."""
    out, i = [], 0

    def length():
        nonlocal i
        if data[i] < 0x80:
            i += 1
            return data[i - 1]
        i += 4
        return int.from_bytes(data[i - 4:i], "big") & 0x7fffffff
    while i < len(data):
        nl = length()
        vl = length()
        out.append((data[i:i + nl].decode("latin-1"),
                    data[i + nl:i + nl + vl].decode("latin-1")))
        i += nl + vl
    return out


def fcgi_handle(conn):
    """One FastCGI request (FCGI_BEGIN_REQUEST, FCGI_PARAMS, FCGI_STDIN up to its empty
    record), answered with FCGI_STDOUT and FCGI_END_REQUEST; returns the params."""
    params, rid, begun = b"", 0, False
    while True:
        version, rtype, rid, clen, plen, _ = struct.unpack(">BBHHBB", recv_exact(conn, 8))
        content = recv_exact(conn, clen)
        recv_exact(conn, plen)
        if version != 1:
            raise ValueError("FastCGI version %d" % version)
        if rtype == 1:  # FCGI_BEGIN_REQUEST: role 1 (responder)
            begun = struct.unpack(">H", content[:2])[0] == 1
        elif rtype == 4:  # FCGI_PARAMS
            params += content
        elif rtype == 5 and clen == 0:  # the end of FCGI_STDIN
            break
    if not begun:
        raise ValueError("no FCGI_BEGIN_REQUEST for the responder role")
    body = b"Status: 200 OK\r\nContent-Type: text/plain\r\n\r\nok"

    def record(rtype, content):
        return struct.pack(">BBHHBB", 1, rtype, rid, len(content), 0, 0) + content
    conn.sendall(record(6, body) + record(6, b"") +
                 record(3, struct.pack(">IB3x", 0, 0)))  # FCGI_REQUEST_COMPLETE
    return fcgi_pairs(params)


def uwsgi_handle(conn):
    """One uwsgi request (modifier1 u8, datasize u16-LE, modifier2 u8; vars of u16-LE lengths),
    answered with a raw HTTP response; returns the vars."""
    mod1, size, mod2 = struct.unpack("<BHB", recv_exact(conn, 4))
    if mod1 != 0 or mod2 != 0:
        raise ValueError("uwsgi modifiers %d %d" % (mod1, mod2))
    data, out, i = recv_exact(conn, size), [], 0
    while i < len(data):
        kl = struct.unpack("<H", data[i:i + 2])[0]
        k = data[i + 2:i + 2 + kl].decode("latin-1")
        i += 2 + kl
        vl = struct.unpack("<H", data[i:i + 2])[0]
        out.append((k, data[i + 2:i + 2 + vl].decode("latin-1")))
        i += 2 + vl
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
                 b"Connection: close\r\n\r\nok")
    return out


FCGI_UWSGI_CONF = """
  upstream fcgi_fo {{ server 127.0.0.1:{dead}; server 127.0.0.1:{fcgi}; }}
  upstream uwsgi_fo {{ server 127.0.0.1:{dead}; server 127.0.0.1:{uwsgi}; }}
  server {{
    listen 127.0.0.1:{{port0}};
    skywalking on;
    location /fcgi/ {{ fastcgi_pass 127.0.0.1:{fcgi};
                      fastcgi_param REQUEST_URI $request_uri;
                      fastcgi_param REQUEST_METHOD $request_method; }}
    location /fcgifo/ {{ fastcgi_pass fcgi_fo; fastcgi_next_upstream error timeout;
                        fastcgi_param REQUEST_URI $request_uri; }}
    location /uwsgi/ {{ uwsgi_pass 127.0.0.1:{uwsgi};
                       uwsgi_param REQUEST_URI $request_uri;
                       uwsgi_param REQUEST_METHOD $request_method; }}
    location /uwsgifo/ {{ uwsgi_pass uwsgi_fo; uwsgi_next_upstream error timeout;
                         uwsgi_param REQUEST_URI $request_uri; }}
  }}
"""


def case_fastcgi_uwsgi():
    """fastcgi_pass and uwsgi_pass to responders of those protocols: an exit span per attempt
    (failover: two, the first an error), the sw8 each backend got (as the HTTP_SW8 parameter /
    variable: exactly one, ours, the client's replaced) naming its attempt's exit span."""
    from nginx_harness import closed_port
    tmp = tmpdir()
    seg_file = os.path.join(tmp, "nginx.bin")
    fcgi, uwsgi = Responder(fcgi_handle), Responder(uwsgi_handle)
    conf = FCGI_UWSGI_CONF.format(fcgi=fcgi.port, uwsgi=uwsgi.port, dead=closed_port())
    ngx = Nginx(conf, tmp=tmp, env={"SW_REPORTER_FILE_PATH": seg_file}).start()
    paths = [("/fcgi/a", {}), ("/fcgi/b", {"sw8": encode_sw8(TRACE_IN, SEG_IN, 5)}),
             ("/fcgifo/c", {}), ("/uwsgi/a", {}),
             ("/uwsgi/b", {"sw8": encode_sw8(TRACE_IN, SEG_IN, 6)}), ("/uwsgifo/c", {})]
    try:
        results = {path: http_get(ngx.ports[0], path, headers) for path, headers in paths}
    finally:
        ngx.stop()
        fcgi.stop()
        uwsgi.stop()
    ngx.check_no_crash()
    check(not fcgi.errors and not uwsgi.errors, "malformed requests from nginx: %s %s" %
          (fcgi.errors, uwsgi.errors))
    for path, (status, body) in results.items():
        check(status == 200 and body == b"ok", "%s answered %d %r" % (path, status, body))
    tr = traces(seg_file)
    segs = segments(tr)
    check(len(segs) == len(paths), "%d segments for %d requests: %s" %
          (len(segs), len(paths), [tag(entry_of(s), "url") for s in segs]))
    for path, headers in paths:
        server, live = (fcgi, fcgi.port) if path.startswith("/fcgi") else (uwsgi, uwsgi.port)
        found = by_url(segs, path)
        check(len(found) == 1, "%s: %d segments" % (path, len(found)))
        s = found[0]
        e, exits = s["spans"][0], s["spans"][1:]
        check(e["spanType"] == "Entry" and e["componentId"] == 6000 and not e["isError"] and
              tag(e, "http.status_code") == "200", "%s: entry span %s" % (path, e))
        check(len(exits) == (2 if "fo/" in path else 1), "%s: %d exit spans" %
              (path, len(exits)))
        for x in exits:
            check(x["spanType"] == "Exit" and x["parentSpanId"] == 0 and
                  x["componentId"] == 49 and x["spanLayer"] == "Http",
                  "%s: exit span %s" % (path, x))
        if len(exits) == 2:  # failover: the dead server's attempt is an error (502)
            check(exits[0]["isError"] and tag(exits[0], "http.status_code") == "502" and
                  exits[0]["peer"] != "127.0.0.1:%d" % live, "%s: failed attempt %s" %
                  (path, exits[0]))
        x = exits[-1]
        check(not x["isError"] and x["peer"] == "127.0.0.1:%d" % live and
              tag(x, "http.status_code") == "200" and
              tag(x, "upstream.header_time_ms") is not None, "%s: exit span %s" % (path, x))
        got = server.requests(path)
        check(len(got) == 1, "%s: the backend got %d requests" % (path, len(got)))
        trace_names = [k for k, _ in got[0] if k in (
            "HTTP_SW8", "HTTP_SW8_CORRELATION", "HTTP_SW8_X", "HTTP_TRACEPARENT",
            "HTTP_TRACESTATE")]
        # one sw8 (with its sw8-x at most once), no traceparent: SW_AGENT_PROPAGATION=sw8
        check(trace_names.count("HTTP_SW8") == 1 and
              len(set(trace_names)) == len(trace_names) and
              not set(trace_names) & {"HTTP_TRACEPARENT", "HTTP_TRACESTATE"},
              "%s: the trace headers the backend got are not exactly ours: %s" % (path, got[0]))
        v = decode_sw8(dict(got[0])["HTTP_SW8"])
        trace = [t["traceId"] for t in tr if s in t["segments"]]
        check(v["segment"] == s["traceSegmentId"] and v["span"] == x["spanId"] and
              [v["trace"]] == trace and v["peer"] == "127.0.0.1:%d" % live,
              "%s: the sw8 the backend got does not name the exit span: %s" % (path, v))
        if headers:  # the client's sw8: continued, and replaced upstream by ours
            check(trace == [TRACE_IN] and e["refs"][0]["parentTraceSegmentId"] == SEG_IN,
                  "%s: the client's sw8 not continued: %s" % (path, e["refs"]))
    print("fastcgi_uwsgi: %d requests, exit spans and sw8 as expected" % len(paths))


# ---------------------------------------------------------------------------------------------

def case_hostile():
    tmp = tmpdir()
    seg_file = os.path.join(tmp, "nginx.bin")
    backend = Backend()
    conf = ("large_client_header_buffers 4 16k;\n"
            "server { listen 127.0.0.1:{port0}; skywalking on;\n"
            "  location / { proxy_pass http://127.0.0.1:%d; } }" % backend.port)
    ngx = Nginx(conf, tmp=tmp, env={"SW_REPORTER_FILE_PATH": seg_file,
                                    "SW_AGENT_PROPAGATION": "sw8,tracecontext"}).start()
    port = ngx.ports[0]
    valid = encode_sw8(TRACE_IN, SEG_IN, 1)
    heads = [
        b"sw8: 1-!!!-***-x-y-z-w-v", b"sw8: " + b"A" * 12000, b"sw8: 1-\xff\xfe-\xc3\x28-1-a-b-c-d",
        b"sw8: " + valid.encode() + b"-extra", b"sw8: 1--------", b"sw8:", b"sw8: " + b"-" * 5000,
        b"sw8: 1-" + b"\xff" * 300 + b"-YQ==-2147483648-YQ==-YQ==-YQ==-YQ==",
        b"sw8-correlation: " + b"a:" * 3000, b"sw8-x: \xff\xff",
        b"traceparent: 00-zzzz-00f067aa0ba902b7-01", b"traceparent: ff-" + b"0" * 32 + b"-" +
        b"0" * 16 + b"-01", b"traceparent: " + b"\xc3" * 55, b"tracestate: " + b"x=\xff," * 1000,
        b"traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n"
        b"traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b7-01",
        b"sw8: " + valid.encode() + b"\r\nsw8: " + valid.encode(),
    ]
    answered = 0
    traced = 0
    try:
        for h in heads:
            st = raw_request(port, b"GET /h/\xff\xfe?q=\xc3\x28 HTTP/1.1\r\nHost: x\r\n" + h +
                             b"\r\nConnection: close\r\n\r\n")
            check(st != 0, "no answer to a request with %r" % h[:60])
            answered += 1
            traced += st == 200
        for line in [b"GARBAGE\r\n\r\n", b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n",
                     b"GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n", b"GET /x HTTP/9.9\r\n\r\n",
                     b"\xff\xfe\xfd / HTTP/1.1\r\n\r\n"]:
            st = raw_request(port, line)
            check(st != 0, "no answer to the request line %r" % line[:60])
        # still serving
        st, _ = http_get(port, "/after")
        check(st == 200, "nginx stopped serving after hostile input")
        traced += 1
    finally:
        ngx.stop()
        backend.stop()
    ngx.check_no_crash()
    segs = segments(traces(seg_file))  # swtrace fails on an invalid segment
    check(len(segs) == traced, "%d segments for %d traced requests" % (len(segs), traced))
    for s in segs:
        check(len(s["spans"]) == 2 and s["spans"][0]["spanType"] == "Entry",
              "a hostile request's segment: %s" % s)
        for sp in s["spans"]:
            for t in sp["tags"]:
                t["value"].encode("utf-8")  # json decoded it: valid UTF-8 on the wire
    for _, h in backend.seen:
        check(h["count:sw8"] == 1 and h["count:traceparent"] == 1 and
              h["count:sw8-x"] <= 1 and h["count:sw8-correlation"] <= 1,
              "the trace headers sent upstream are not exactly ours: %s" % h)
        decode_sw8(h["sw8"])  # every sw8 sent upstream is well formed
    print("hostile: %d requests answered, %d traced" % (answered, traced))


# ---------------------------------------------------------------------------------------------

def check_threads(ngx):
    """The master runs no agent (one thread); each worker's other threads (the agent's) block
    the signals nginx uses, so that those reach nginx's own thread."""
    with open("/proc/%d/status" % ngx.master) as f:
        threads = [l for l in f if l.startswith("Threads:")][0].split()[1]
    check(threads == "1", "nginx's master runs %s threads: an agent started there" % threads)
    for pid in ngx.worker_pids():
        # a worker just forked may still be in init_process, starting its agent
        tids = wait_for("worker %d's agent thread" % pid, lambda: [
            int(t) for t in os.listdir("/proc/%d/task" % pid) if int(t) != pid])
        for tid in tids:
            with open("/proc/%d/task/%d/status" % (pid, tid)) as f:
                blk = int([l for l in f if l.startswith("SigBlk:")][0].split()[1], 16)
            for sig in (signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM, signal.SIGUSR1,
                        signal.SIGWINCH, signal.SIGCHLD):
                check(blk & (1 << (sig - 1)), "thread %d of worker %d does not block %s" %
                      (tid, pid, sig.name))


class Load:
    """Threads sending GETs on new connections until stopped; counts answers by status."""

    def __init__(self, port, path, threads=4):
        self.port, self.path = port, path
        self.ok = 0
        self.other = []
        self.lock = threading.Lock()
        self.running = True
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(threads)]
        for t in self.threads:
            t.start()

    def run(self):
        while self.running:
            try:
                st, _ = http_get(self.port, self.path, timeout=30)
            except OSError as e:
                st = repr(e)
            with self.lock:
                if st == 200:
                    self.ok += 1
                else:
                    self.other.append(st)

    def stop(self):
        self.running = False
        for t in self.threads:
            t.join(60)


def case_reload():
    tmp = tmpdir()
    seg_file = os.path.join(tmp, "nginx.bin")
    backend = Backend()
    # the settings in a file: a binary upgrade's new master does not see the environment
    with open(os.path.join(tmp, "sw.conf"), "w") as f:
        f.write("SW_REPORTER_FILE_PATH=%s\n" % seg_file)
    conf = ("skywalking_config {tmp}/sw.conf;\n"
            "server { listen 127.0.0.1:{port0}; skywalking on;\n"
            "  location / { proxy_pass http://127.0.0.1:%d; } }" % backend.port)
    ngx = Nginx(conf, tmp=tmp).start()
    load = Load(ngx.ports[0], "/load")
    try:
        for _ in range(3):
            n = load.ok
            wait_for("requests between reloads", lambda: load.ok >= n + 100)
            ngx.reload()
        # a worker that exits on its own (here: told to, gracefully) is respawned with an agent
        n = load.ok
        wait_for("requests before a worker quits", lambda: load.ok >= n + 100)
        victim = ngx.worker_pids()[0]
        os.kill(victim, signal.SIGQUIT)
        wait_for("the master to respawn worker %d" % victim, lambda: victim not in
                 ngx.worker_pids() and len(ngx.worker_pids()) == ngx.workers)
        check_threads(ngx)
        # binary upgrade: USR2 starts a new master from the same binary; the old one quits
        n = load.ok
        wait_for("requests before the upgrade", lambda: load.ok >= n + 100)
        old = ngx.master
        os.kill(old, signal.SIGUSR2)
        new = int(wait_for("the new master's pid file", lambda: os.path.exists(
            ngx.pid_file + ".oldbin") and os.path.exists(ngx.pid_file) and
            open(ngx.pid_file).read().strip()))
        wait_for("the new master's workers", lambda: len(ngx.worker_pids(new)) == ngx.workers)
        os.kill(old, signal.SIGQUIT)
        from nginx_harness import pid_alive
        wait_for("the old master to exit", lambda: not pid_alive(old))
        ngx.master = new
        n = load.ok
        wait_for("requests after the upgrade", lambda: load.ok >= n + 100)
    finally:
        load.stop()
        ngx.stop()
        backend.stop()
    ngx.check_no_crash()
    check(not load.other, "requests not answered 200 across reloads: %s" % load.other[:5])
    segs = segments(traces(seg_file))
    ids = [s["traceSegmentId"] for s in segs]
    check(len(set(ids)) == len(ids), "a segment was sent twice")
    check(len(segs) == load.ok, "%d segments for %d requests answered" % (len(segs), load.ok))
    stats = ngx.worker_stats()
    check(len(stats) >= 2 * 5 + 1, "%d workers logged their counters, not >= 11:\n%s" % (
        len(stats), "\n".join(l for l in ngx.log().splitlines() if "worker" in l)))
    for w in stats:
        check(w["finished"] == w["reported"] and w["dropped"] == 0 and w["failed"] == 0 and
              w["open"] == 0, "a worker's accounting is not exact: %s" % w)
    check(sum(w["reported"] for w in stats) == load.ok, "workers reported %d, clients got %d" %
          (sum(w["reported"] for w in stats), load.ok))
    print("reload: %d requests, %d workers, exact" % (load.ok, len(stats)))


# ---------------------------------------------------------------------------------------------

def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def case_dead_collector():
    from nginx_harness import closed_port
    tmp = tmpdir()
    backend = Backend()
    conf = ("server { listen 127.0.0.1:{port0}; skywalking on;\n"
            "  location /on/ { proxy_pass http://127.0.0.1:%d; }\n"
            "  location /off/ { skywalking off; proxy_pass http://127.0.0.1:%d; } }" %
            (backend.port, backend.port))
    ngx = Nginx(conf, tmp=tmp, env={"SW_REPORTER": "grpc",
                                    "SW_AGENT_COLLECTOR_BACKEND_SERVICES":
                                    "127.0.0.1:%d" % closed_port(),
                                    "SW_AGENT_GRPC_TIMEOUT_MS": "1000",
                                    # small buffers: full after the first burst
                                    "SW_BUFFER_CHANNEL_SIZE": "1",
                                    "SW_BUFFER_BUFFER_SIZE": "128"}).start()
    port = ngx.ports[0]
    lat = {"on": [], "off": []}
    try:
        def burst(n):
            for i in range(n):
                for kind in ("on", "off"):
                    t0 = time.monotonic()
                    st, _ = http_get(port, "/%s/%d" % (kind, i))
                    lat[kind].append(time.monotonic() - t0)
                    check(st == 200, "status %d with a dead collector" % st)
        burst(1000)  # the agent's buffers fill and stay full from here
        before = sum(rss_kb(p) for p in ngx.worker_pids())
        burst(1500)
        after = sum(rss_kb(p) for p in ngx.worker_pids())
    finally:
        t0 = time.monotonic()
        ngx.stop()
        stop_s = time.monotonic() - t0
        backend.stop()
    ngx.check_no_crash()
    check(after - before < 4096, "worker RSS grew by %d KiB over 1500 traced requests" %
          (after - before))
    stats = ngx.worker_stats()
    check(len(stats) == 2, "workers' counters: %s" % stats)
    for w in stats:
        check(w["reported"] == 0 and w["finished"] == w["dropped"] + w["failed"] and
              w["open"] == 0, "a worker's accounting with a dead collector: %s" % w)
    med = {k: sorted(v)[len(v) // 2] for k, v in lat.items()}
    check(med["on"] < med["off"] * 2 + 0.002, "median latency %.2f ms traced, %.2f ms not" %
          (med["on"] * 1e3, med["off"] * 1e3))
    # the workers' exit flushes within the agent's shutdown bound, not the collector's absence
    check(stop_s < 20, "nginx took %.1f s to stop with a dead collector" % stop_s)
    print("dead_collector: rss %d -> %d KiB, median latency on %.3f ms off %.3f ms, stop %.1f s"
          % (before, after, med["on"] * 1e3, med["off"] * 1e3, stop_s))


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]]()
    print("ok")
