#!/usr/bin/python3
"""Cross-language librdkafka test: a trace started in a C program goes through Kafka into a
Python service traced by SkyWalking's Python agent and back into C.

  cross_lang.py --rk-client PATH --preload PATH --collector PATH --bootstrap-dir DIR

1. the project's gRPC test collector (tests/support/grpc_collector.py) starts; the C programs
   (rk_client under libskywalking-preload.so, SW_REPORTER=grpc) and the Python agent report to
   it;
2. py_peer.py (kafka-python, the Python agent's sw_kafka plugin) waits for a message on REQ;
3. rk_client produces one message to REQ (exit span, sw8 in the record headers);
4. py_peer consumes it and answers on REP;
5. rk_client consumes the answer (entry span from the answer's headers).
Checked by the references the collector received: the Python consumer span continues the C
producer's segment (C -> Python), the C consumer span continues the Python producer's segment
(Python -> C), and all of it is one trace.

Exit status 0 passed, 1 failed (the reason on stderr), 77 skipped: the Python agent's venv of
scripts/fetch-tools.sh is missing or unusable (SW_TEST_PYAGENT_PYTHON names another python3).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
VENV_PY = os.environ.get("SW_TEST_PYAGENT_PYTHON") or os.path.expanduser(
    "~/.cache/skywalking-c/venv-pyagent/bin/python3")
WAIT_S = 90


def fail(msg):
    print("cross_lang: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def wait_for(what, pred, timeout=WAIT_S):
    """Polls pred() (every 100 ms) until it returns something true, at most timeout seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.1)
    fail("no %s within %d s" % (what, timeout))


def segments(path):
    try:
        with open(path) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []
    return [r for r in lines if r.get("kind") == "segment"]


def find(path, service, op):
    """The first segment of `service` holding an operation `op`, or None."""
    for s in segments(path):
        if s["service"] == service and op in s["operations"]:
            return s
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rk-client", required=True)
    ap.add_argument("--preload", required=True)
    ap.add_argument("--collector", required=True)
    ap.add_argument("--bootstrap-dir", required=True)
    a = ap.parse_args()
    usable = os.access(VENV_PY, os.X_OK) and subprocess.run(
        [VENV_PY, "-c", "import kafka, skywalking.protocol.common.Command_pb2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    if not usable:
        print("cross_lang: SKIP: no usable Python agent at %s (apache-skywalking with its "
              "protocol stubs and kafka-python; run scripts/fetch-tools.sh, which pins "
              "apache-skywalking 1.2.0)" % VENV_PY, file=sys.stderr)
        return 77
    with open(os.path.join(a.bootstrap_dir, "bootstrap")) as f:
        bootstrap = f.read().strip()
    tmp = tempfile.mkdtemp(prefix="rk-cross-")
    out = os.path.join(tmp, "collector.jsonl")
    port_file = os.path.join(tmp, "port")
    procs = []
    try:
        col = subprocess.Popen(["/usr/bin/python3", a.collector, "--port-file", port_file,
                                "--out", out, "--proto-dir", os.path.join(ROOT, "proto")])
        procs.append(col)
        port = wait_for("collector port", lambda: os.path.exists(port_file) and
                        open(port_file).read().strip())
        backend = "127.0.0.1:%s" % port
        tag = "%d-%d" % (os.getpid(), int(time.time()))
        req, rep = "rk-cross-req-" + tag, "rk-cross-rep-" + tag
        for t in (req, rep):
            subprocess.run([a.rk_client, bootstrap, t, "create"], check=True, timeout=WAIT_S)
        py_env = dict(os.environ, SW_AGENT_NAME="py-peer",
                      SW_AGENT_COLLECTOR_BACKEND_SERVICES=backend, SW_AGENT_PROTOCOL="grpc",
                      SW_AGENT_LOGGING_LEVEL="ERROR")
        py_env.pop("LD_PRELOAD", None)
        py = subprocess.Popen([VENV_PY, os.path.join(HERE, "py_peer.py"), bootstrap, req, rep],
                              env=py_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        procs.append(py)

        def c_env(name):
            return dict(os.environ, LD_PRELOAD=a.preload, SW_AGENT_NAME=name, SW_REPORTER="grpc",
                        SW_AGENT_COLLECTOR_BACKEND_SERVICES=backend)

        subprocess.run([a.rk_client, bootstrap, req, "produce", "producev", "1"],
                       env=c_env("c-producer"), check=True, timeout=WAIT_S)
        line = py.stdout.readline().decode().strip()  # bounded: py_peer waits 60 s at most
        if line != "answered":
            fail("py_peer: %r (exit %s)" % (line, py.poll()))
        subprocess.run([a.rk_client, bootstrap, rep, "consume", "consume", "1", "c"],
                       env=c_env("c-consumer"), check=True, timeout=WAIT_S,
                       stdout=subprocess.DEVNULL)

        c_prod = wait_for("C producer segment",
                          lambda: find(out, "c-producer", "Kafka/%s/Producer" % req))
        py_cons = wait_for("Python consumer segment",
                           lambda: find(out, "py-peer", "Kafka/%s/Consumer/py" % req))
        py_prod = wait_for("Python producer segment",
                           lambda: find(out, "py-peer", "Kafka/%s/Producer" % rep))
        c_cons = wait_for("C consumer segment",
                          lambda: find(out, "c-consumer", "Kafka/%s/Consumer/c" % rep))
        py.stdin.close()
        if py.wait(timeout=WAIT_S) != 0:
            fail("py_peer exited %d" % py.returncode)

        def has_ref(seg, parent, service):
            return any(r["parentSegment"] == parent["traceSegmentId"] and
                       r["parentService"] == service and r["traceId"] == parent["traceId"]
                       for span in seg["spanDetails"] for r in span["refs"])

        if not has_ref(py_cons, c_prod, "c-producer"):
            fail("C -> Python: the Python consumer span does not reference the C producer "
                 "segment: %s / %s" % (py_cons, c_prod))
        if not has_ref(c_cons, py_prod, "py-peer"):
            fail("Python -> C: the C consumer span does not reference the Python producer "
                 "segment: %s / %s" % (c_cons, py_prod))
        traces = {c_prod["traceId"], py_prod["traceId"], c_cons["traceId"]}
        if len(traces) != 1:
            fail("not one trace from C through Python back to C: %s" % traces)
        print("cross_lang: C -> Python -> C in trace %s" % c_prod["traceId"])
        shutil.rmtree(tmp, ignore_errors=True)  # kept on failure: collector.jsonl says why
        return 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()


if __name__ == "__main__":
    sys.exit(main())
