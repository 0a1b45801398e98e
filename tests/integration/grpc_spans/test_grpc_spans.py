#!/usr/bin/python3
"""gRPC client and server spans of libskywalking-preload.so, end to end (tests/grpc_spans.cmake).

Runs the project's gRPC collector, the C++ server gs_server and the C++ client gs_client (both
built from Debian's libgrpc++, unmodified, under the preload library, reporting over gRPC), and
a Python peer traced by SkyWalking's Python agent; then checks the segments the collector
recorded: span trees, types, layers, components, peers, tags, errors and the references that
join the traces across processes and languages. Also: a malformed sw8 sent by the program
itself starts a new trace on the server; the agents' own reporting calls are never traced.

Runs under /usr/bin/python3 (the collector needs Debian's grpcio). The cross-language part
needs the venv of scripts/fetch-tools.sh and is skipped, saying so, without it.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

WAIT_S = 60  # bounded waits for start-up and reports; generous for a loaded machine
VENV_PY = os.path.expanduser("~/.cache/skywalking-c/venv-pyagent/bin/python")

EXIT, ENTRY = 1, 0
RPC_FRAMEWORK = 2
GRPC = 23
CROSS_PROCESS, CROSS_THREAD = 0, 1

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)
    return cond


def wait_file(path, proc, what):
    deadline = time.monotonic() + WAIT_S
    while not os.path.exists(path):
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode} before it served")
        if time.monotonic() > deadline:
            sys.exit(f"{what} did not write {path} within {WAIT_S} s")
        time.sleep(0.05)
    with open(path, encoding="ascii") as f:
        return int(f.read())


class Collector:
    def __init__(self, script, tmp):
        self.out = os.path.join(tmp, "collector.jsonl")
        port_file = os.path.join(tmp, "collector.port")
        self.proc = subprocess.Popen(["/usr/bin/python3", script, "--port-file", port_file,
                                      "--out", self.out], stderr=subprocess.DEVNULL)
        self.port = wait_file(port_file, self.proc, "the collector")

    def segments(self):
        if not os.path.exists(self.out):
            return []
        with open(self.out, encoding="utf-8") as f:
            return [r for r in map(json.loads, f) if r["kind"] == "segment"]

    def wait_segments(self, pred, n, what):
        """The segments for which pred holds, once there are at least n (bounded wait)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            got = [s for s in self.segments() if pred(s)]
            if len(got) >= n:
                return got
            if time.monotonic() > deadline:
                for g in got:
                    print(json.dumps(g["spanDetails"]), file=sys.stderr)
                sys.exit(f"the collector holds {len(got)} segments of {what}, expected {n} "
                         "(above)")
            time.sleep(0.1)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def agent_env(collector, name):
    env = dict(os.environ)
    env.update({"SW_REPORTER": "grpc", "SW_AGENT_NAME": name,
                "SW_AGENT_COLLECTOR_BACKEND_SERVICES": f"127.0.0.1:{collector.port}"})
    return env


def first(seg):
    return seg["spanDetails"][0]


def op_of(seg):
    return first(seg)["op"]


def is_rpc(span, kind, op, peer=None):
    return (span["type"] == kind and span["op"] == op and span["layer"] == RPC_FRAMEWORK and
            span["component"] == GRPC and (peer is None or span["peer"] == peer))


def run_client(args, env, target, scenario, *extra):
    r = subprocess.run([args.client, target, scenario, *extra], env=env, timeout=120,
                       capture_output=True, text=True)
    check(r.returncode == 0, f"gs_client {scenario} exited {r.returncode}: {r.stderr}")


def refs_to(span, parent_seg, kind):
    return [r for r in span["refs"]
            if r["type"] == kind and r["parentSegment"] == parent_seg["traceSegmentId"] and
            r["traceId"] == parent_seg["traceId"]]


def client_cases(args, col, preload_env, target):
    """C++ client -> C++ server: every scenario's client and server segments."""
    env = agent_env(col, "gs-client")
    env["LD_PRELOAD"] = args.preload
    for scenario in ("unary", "fail", "stream", "parent", "badsw8", "hugesw8", "async"):
        run_client(args, env, target, scenario)
    run_client(args, env, "127.0.0.1:1", "unreachable")
    plain = dict(env)
    del plain["LD_PRELOAD"]
    run_client(args, plain, target, "unary")  # an untraced client: no sw8 at all
    client = lambda s: s["service"] == "gs-client"  # noqa: E731
    segs = col.wait_segments(client, 9, "gs-client")
    server = col.wait_segments(lambda s: s["service"] == "gs-server", 8, "gs-server")

    def served(client_seg):
        """The server segment continuing client_seg's exit span."""
        got = [s for s in server if refs_to(first(s), client_seg, CROSS_PROCESS)]
        return got[0] if len(got) == 1 else None

    peer = target
    unary = [s for s in segs if op_of(s) == "/gs.Echo/Unary" and len(s["spanDetails"]) == 1 and
             not first(s)["refs"]]
    # unary, badsw8 and hugesw8 (own sw8: ours not added), async; "parent"'s has a ref
    check(len(unary) == 4, f"four one-span Unary client segments, got {len(unary)}")
    propagated = [s for s in unary if served(s) is not None]
    check(len(propagated) == 2, "unary and async continue on the server through sw8 "
                                f"(got {len(propagated)})")
    for c in propagated:
        e, s = first(c), served(c)
        check(is_rpc(e, EXIT, "/gs.Echo/Unary", peer), f"client exit span: {e}")
        check(e["tags"].get("grpc.status_code") == "OK" and not e["error"], f"OK: {e}")
        se = first(s)
        check(is_rpc(se, ENTRY, "/gs.Echo/Unary") and len(s["spanDetails"]) == 1,
              f"server entry span: {s['spanDetails']}")
        check(se["tags"].get("grpc.status_code") == "OK" and not se["error"], f"OK: {se}")
        r = refs_to(se, c, CROSS_PROCESS)[0]
        check(r["parentService"] == "gs-client" and r["parentSpanId"] == 0 and
              r["address"] == peer, f"server ref: {r}")
    # badsw8, hugesw8: the program's own malformed or oversized sw8 reaches the server, and the
    # untraced client sends none: each starts a new trace there
    fresh = [s for s in server if op_of(s) == "/gs.Echo/Unary" and not first(s)["refs"]]
    check(len(fresh) == 3, "three server Unary segments without refs (malformed, oversized, "
                           f"no sw8): {fresh}")
    check(all(f["traceId"] not in {c["traceId"] for c in segs} for f in fresh),
          "each is a trace of its own")

    fail = [s for s in segs if op_of(s) == "/gs.Echo/Fail" and first(s)["peer"] == peer]
    check(len(fail) == 1, f"one Fail client segment: {fail}")
    if fail:
        e = first(fail[0])
        check(e["error"] and e["tags"].get("grpc.status_code") == "NOT_FOUND" and
              any(log.get("message") == "no such thing" for log in e["logs"]),
              f"Fail: error, NOT_FOUND, the details logged: {e}")
        s = served(fail[0])
        check(s is not None and first(s)["error"] and
              first(s)["tags"].get("grpc.status_code") == "NOT_FOUND",
              f"Fail's server span: error, NOT_FOUND: {s}")
    unreach = [s for s in segs if first(s)["peer"] == "127.0.0.1:1"]
    check(len(unreach) == 1 and first(unreach[0])["error"] and
          first(unreach[0])["tags"].get("grpc.status_code") == "UNAVAILABLE",
          f"unreachable: error, UNAVAILABLE: {unreach}")

    stream = [s for s in segs if op_of(s) == "/gs.Echo/Stream"]
    check(len(stream) == 1 and first(stream[0])["tags"].get("grpc.status_code") == "OK",
          f"one exit span for the whole stream, status OK: {stream}")
    if stream:
        s = served(stream[0])
        check(s is not None and is_rpc(first(s), ENTRY, "/gs.Echo/Stream") and
              len(s["spanDetails"]) == 1, f"one entry span for the whole stream: {s}")

    # parent: the exit span joins the thread's trace (CrossThread ref to the local span)
    main = [s for s in segs if op_of(s) == "client-main"]
    check(len(main) == 1, f"the parent scenario's local span: {main}")
    if main:
        child = [s for s in segs if s["traceId"] == main[0]["traceId"] and s is not main[0]]
        check(len(child) == 1 and is_rpc(first(child[0]), EXIT, "/gs.Echo/Unary", peer) and
              refs_to(first(child[0]), main[0], CROSS_THREAD),
              f"the call's exit span continues client-main: {child}")
        if child:
            s = served(child[0])
            check(s is not None and s["traceId"] == main[0]["traceId"],
                  "the server's entry span is in client-main's trace")


def c_callback_client(args, col, target):
    """A C program on a callback completion queue: its exit span ends with the status."""
    env = agent_env(col, "gs-c-client")
    env["LD_PRELOAD"] = args.preload
    r = subprocess.run([args.c_client, target], env=env, timeout=120, capture_output=True,
                       text=True)
    check(r.returncode == 0, f"gs_c_client exited {r.returncode}: {r.stderr}")
    segs = col.wait_segments(lambda s: s["service"] == "gs-c-client", 1, "gs-c-client")
    e = first(segs[0])
    check(is_rpc(e, EXIT, "/gs.Echo/Unary", target) and
          e["tags"].get("grpc.status_code") == "OK",
          f"the callback queue's call: an exit span with status OK: {e}")
    served = col.wait_segments(lambda s: s["service"] == "gs-server" and
                               s["traceId"] == segs[0]["traceId"], 1, "gs-server for gs-c-client")
    check(bool(refs_to(first(served[0]), segs[0], CROSS_PROCESS)),
          f"the server continues the C program's sw8: {served}")


def cross_language(args, col, target, tmp):
    """C++ -> Python -> C++ and C++ -> C++ -> Python, joined by refs both ways."""
    if not os.access(VENV_PY, os.X_OK):
        print(f"SKIP cross-language: no {VENV_PY} (run scripts/fetch-tools.sh)")
        return
    env = agent_env(col, "gs-py")
    env.update({"SW_AGENT_PROFILE_ACTIVE": "False", "SW_AGENT_METER_REPORTER_ACTIVE": "False",
                "SW_AGENT_LOG_REPORTER_ACTIVE": "False", "SW_AGENT_PROTOCOL": "grpc",
                "SW_AGENT_LOGGING_LEVEL": "WARNING"})
    env.pop("LD_PRELOAD", None)
    port_file = os.path.join(tmp, "py.port")
    py = subprocess.Popen([VENV_PY, args.py_peer, port_file], env=env, stdin=subprocess.PIPE,
                          stderr=open(os.path.join(tmp, "py.err"), "w"))
    try:
        py_target = f"127.0.0.1:{wait_file(port_file, py, 'the Python peer')}"
        cenv = agent_env(col, "gs-client")
        cenv["LD_PRELOAD"] = args.preload
        # C++ client -> Python Hop -> C++ server Unary
        run_client(args, cenv, py_target, "hop", target)
        # C++ client -> C++ server Hop -> Python Unary
        run_client(args, cenv, target, "hop", py_target)
        hops = col.wait_segments(lambda s: s["service"] == "gs-client" and
                                 op_of(s) == "/gs.Echo/Hop", 2, "gs-client Hop")
        to_py = [s for s in hops if first(s)["peer"] == py_target][0]
        to_cpp = [s for s in hops if first(s)["peer"] == target][0]
        tid = to_py["traceId"]
        py_segs = col.wait_segments(lambda s: s["service"] == "gs-py" and s["traceId"] == tid,
                                    1, "gs-py in the first hop's trace")
        py_entry = [sp for s in py_segs for sp in s["spanDetails"] if sp["type"] == ENTRY]
        check(len(py_entry) == 1 and py_entry[0]["op"] == "/gs.Echo/Hop" and
              refs_to(py_entry[0], to_py, CROSS_PROCESS),
              f"Python's entry span continues our exit span: {py_segs}")
        back = col.wait_segments(lambda s: s["service"] == "gs-server" and
                                 s["traceId"] == tid, 1, "gs-server in the first hop's trace")
        py_exit_seg = py_segs[0]
        py_exit = [sp for sp in py_exit_seg["spanDetails"] if sp["type"] == EXIT]
        check(len(py_exit) == 1 and
              any(r["parentService"] == "gs-py" and
                  r["parentSegment"] == py_exit_seg["traceSegmentId"] and
                  r["parentSpanId"] == py_exit[0]["spanId"] for r in first(back[0])["refs"]),
              f"our server's entry span continues Python's exit span: {back}")

        tid2 = to_cpp["traceId"]
        hop_srv = col.wait_segments(lambda s: s["service"] == "gs-server" and
                                    s["traceId"] == tid2, 2, "gs-server in the second trace")
        entry = [s for s in hop_srv if first(s)["type"] == ENTRY]
        exit_ = [s for s in hop_srv if first(s)["type"] == EXIT]
        check(len(entry) == 1 and len(exit_) == 1 and
              refs_to(first(exit_[0]), entry[0], CROSS_THREAD) and
              is_rpc(first(exit_[0]), EXIT, "/gs.Echo/Unary", py_target),
              f"the handler's call is an exit span under the server's entry: {hop_srv}")
        py2 = col.wait_segments(lambda s: s["service"] == "gs-py" and s["traceId"] == tid2, 1,
                                "gs-py in the second trace")
        if exit_:
            check(refs_to(first(py2[0]), exit_[0], CROSS_PROCESS) and
                  first(py2[0])["op"] == "/gs.Echo/Unary",
                  f"Python's entry span continues the handler's exit span: {py2}")
    finally:
        py.stdin.close()
        py.wait(timeout=60)


def sync_server_cases(args, col, tmp, mode):
    """C++ client -> the synchronous (or callback) C++ server: its entry spans continue ours."""
    name = f"gs-{mode}"
    env = agent_env(col, f"{name}-server")
    env["LD_PRELOAD"] = args.preload
    port_file = os.path.join(tmp, f"{mode}.port")
    argv = [args.sync_server, port_file] + (["callback"] if mode == "callback" else [])
    server = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE,
                              stderr=open(os.path.join(tmp, f"{mode}.err"), "w"))
    try:
        target = f"127.0.0.1:{wait_file(port_file, server, 'gs_sync_server ' + mode)}"
        cenv = agent_env(col, f"{name}-client")
        cenv["LD_PRELOAD"] = args.preload
        # the callback server has no Stream; the callback client's status comes in a functor
        scenarios = ("unary", "fail", "stream") if mode == "sync" else ("unary", "fail",
                                                                         "callback")
        for scenario in scenarios:
            run_client(args, cenv, target, scenario)
        clients = col.wait_segments(lambda s: s["service"] == f"{name}-client", 3,
                                    f"{name}-client")
        served = col.wait_segments(lambda s: s["service"] == f"{name}-server", 3,
                                   f"{name}-server")
        for c in clients:
            op = op_of(c)
            want = "NOT_FOUND" if op == "/gs.Echo/Fail" else "OK"
            check(first(c)["tags"].get("grpc.status_code") == want,
                  f"{mode}: the client's {op} span has status {want}: {first(c)}")
            s = [x for x in served if refs_to(first(x), c, CROSS_PROCESS)]
            check(len(s) == 1 and is_rpc(first(s[0]), ENTRY, op) and
                  len(s[0]["spanDetails"]) == 1,
                  f"the {mode} server's entry span continues {op}: {s}")
            if s:
                check(first(s[0])["tags"].get("grpc.status_code") == want and
                      first(s[0])["error"] == (want != "OK"),
                      f"{op} on the {mode} server: status {want}: {first(s[0])}")
    finally:
        server.stdin.close()
        check(server.wait(timeout=60) == 0, f"gs_sync_server {mode} exits 0")


def never_self(col):
    """No span of any agent is a call of the reporting protocol (skywalking.v3...)."""
    spans = [sp for s in col.segments() for sp in s["spanDetails"]]
    own = [sp for sp in spans if "skywalking.v3" in sp["op"] or
           sp["peer"].endswith(f":{col.port}")]
    check(not own, f"the agents' own reporting calls are not traced: {own[:3]}")


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--preload", "--server", "--sync-server", "--client", "--c-client",
                "--collector", "--py-peer"):
        ap.add_argument(opt, required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="sw-grpc-spans-")
    col = Collector(args.collector, tmp)
    server = None
    try:
        env = agent_env(col, "gs-server")
        env["LD_PRELOAD"] = args.preload
        port_file = os.path.join(tmp, "server.port")
        server = subprocess.Popen([args.server, port_file], env=env, stdin=subprocess.PIPE,
                                  stderr=open(os.path.join(tmp, "server.err"), "w"))
        target = f"127.0.0.1:{wait_file(port_file, server, 'gs_server')}"
        client_cases(args, col, env, target)
        c_callback_client(args, col, target)
        sync_server_cases(args, col, tmp, "sync")
        sync_server_cases(args, col, tmp, "callback")
        cross_language(args, col, target, tmp)
        server.stdin.close()
        check(server.wait(timeout=60) == 0, "gs_server exits 0")
        server = None
        never_self(col)
    finally:
        if server is not None:
            server.kill()
        col.stop()
        if failures:
            print(f"collector records kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")
    print("grpc_spans: all checks passed")


if __name__ == "__main__":
    main()
