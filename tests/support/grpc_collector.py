#!/usr/bin/python3
"""A SkyWalking v3 gRPC collector for the tests of skywalking-c's gRPC reporter.

It is a real gRPC server (Debian's python3-grpcio), built at start from the repository's own
proto/*.proto: the stubs are generated with grpc_tools.protoc into a temporary directory. It
serves skywalking.v3.TraceSegmentReportService/collect, skywalking.v3.ManagementService
(reportInstanceProperties, keepAlive), skywalking.v3.LogReportService/collect and
skywalking.v3.EventService/collect on loopback, and appends what arrives to a JSONL file,
one JSON object per line, written whole and flushed, so that C tests can read it while it runs:

  {"kind": "segment", "traceSegmentId": ..., "traceId": ..., "service": ...,
   "serviceInstance": ..., "operations": ["op0", "op1", ...], "spans": n,
   "refEndpoints": [parentEndpoint of each reference, span by span],
   "spanDetails": [{"spanId", "parentSpanId", "op", "peer", "type" (0 Entry, 1 Exit, 2 Local),
                    "layer", "component", "error", "tags": {k: v}, "logs": [{k: v}],
                    "refs": [{"type" (0 CrossProcess, 1 CrossThread), "traceId",
                              "parentSegment", "parentSpanId", "parentService",
                              "parentEndpoint", "address"}]}, ...]}
  {"kind": "properties", "service": ..., "serviceInstance": ..., "properties": {k: v, ...}}
  {"kind": "ping", "service": ..., "serviceInstance": ...}
  {"kind": "rejected", "method": "collect" | "reportInstanceProperties" | "keepAlive"}
  {"kind": "meters", "service": ..., "serviceInstance": ..., "timestamp": ms, "count": n,
   "later_with_entity": n, "values": {"name{k=v,...}": value, ...},
   "histograms": {"name{k=v,...}": [[bucket, count], ...], ...}}
  {"kind": "cds_fetch", "service": ..., "uuid": ...}
  {"kind": "log", "service": ..., "serviceInstance": ..., "endpoint": ..., "timestamp": ms,
   "text": ..., "traceId": ..., "traceSegmentId": ..., "spanId": n, "tags": {k: v, ...}}
  {"kind": "event", "uuid": ..., "name": ..., "type": "Normal" | "Error", "message": ...,
   "service": ..., "serviceInstance": ..., "parameters": {k: v}, "startTime": ms,
   "endTime": ms, "layer": ...}

  {"kind": "profile_query", "service": ..., "serviceInstance": ..., "lastCommandTime": ms}
  {"kind": "snapshot", "taskId": ..., "traceSegmentId": ..., "time": ms, "sequence": n,
   "stack": [codeSignature, ...]}
  {"kind": "profile_finish", "service": ..., "serviceInstance": ..., "taskId": ...,
   "received": ms (the collector's clock)}

ProfileTask/getProfileTaskCommands answers with what --profile-task-file holds at the time of the
call: a JSON list of tasks, each an object of the command's args ({"TaskId": ..., "EndpointName":
..., "Duration": "1", ...}, values as strings, sent as they are so that tests can send garbage);
as the OAP does, only tasks whose "CreateTime" is greater than the request's lastCommandTime
are sent (a task without a numeric CreateTime always is). Each becomes one Command
"ProfileTaskQuery" with args SerialNumber then the task's keys in the file's order.

A meters record is one MeterReportService/collect stream (service, instance and timestamp are
taken from its first element; later_with_entity counts later elements that set any of them,
which an agent should not do). ConfigurationDiscoveryService/fetchConfigurations answers with
what --cds-file holds at the time of the call: a JSON object {"uuid": U, "config": {key:
value, ...}} becomes Commands with one ConfigurationDiscoveryCommand (args SerialNumber, UUID,
then the keys); no file, empty Commands. The collector sends the command even when the
request's uuid equals U (the OAP would answer empty), so that tests can check that an agent
ignores an unchanged UUID; a test changes the answer by rewriting the file (atomically).

The segments of one collect stream are recorded together, after the client closed the stream
and before the answer is sent: a stream that breaks off records nothing.

Options:
  --port N           port to listen on (default 0: a free one, chosen by the kernel)
  --port-file PATH   write the port there (atomically, via rename) once the server serves
  --out PATH         the JSONL file (appended to, so a restarted collector keeps adding)
  --token T          require metadata `authentication: T`, else answer UNAUTHENTICATED
  --command NAME     answer every call with Commands holding one Command NAME (args
                     SerialNumber=<n>); may be given more than once
  --proto-dir DIR    where the .proto files are (default: <repo>/proto)
  --tls-cert PATH    serve TLS with this PEM certificate chain (and --tls-key PATH, its key)
  --cds-file PATH    the configuration discovery answer (see above)
  --profile-task-file PATH  the profile tasks to serve (see above)
  --tls-client-ca PATH  with --tls-cert: require a client certificate signed by this CA
                     (mutual TLS); a client without one is refused in the handshake
  --answer-pad N     append to every Commands answer (collect, InstanceProperties, keepAlive,
                     fetchConfigurations) a Command "Padding" with an argument of N bytes: an
                     oversized answer, as a hostile collector could send
  --test-double-reject-collect  a test double of a collector that fails every
                     TraceSegmentReportService/collect call (INVALID_ARGUMENT, as the OAP does
                     for a message it cannot decode) after reading the stream; it records
                     {"kind": "rejected", "method": "collect", "segments": n} instead

SIGTERM or SIGINT stops the server gracefully (calls in flight are finished, up to 5 s) and
exits with status 0. Must run under /usr/bin/python3 (Debian's grpcio and grpc_tools).
"""

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from concurrent import futures
from pathlib import Path

import grpc
from grpc_tools import protoc


def generate_stubs(proto_dir, out_dir):
    """Compiles every .proto of proto_dir into Python modules in out_dir."""
    protos = sorted(str(p) for p in Path(proto_dir).glob("*.proto"))
    if not protos:
        sys.exit(f"grpc_collector: no .proto files in {proto_dir}")
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    args = ["protoc", f"-I{proto_dir}", f"-I{include}", f"--python_out={out_dir}",
            f"--grpc_python_out={out_dir}"] + protos
    if protoc.main(args) != 0:
        sys.exit(f"grpc_collector: grpc_tools.protoc failed on {proto_dir}")
    sys.path.insert(0, out_dir)


class Recorder:
    """Appends JSON lines to the output file; one lock, one write + flush per call."""

    def __init__(self, path):
        self.lock = threading.Lock()
        self.file = open(path, "a", encoding="utf-8")

    def write(self, objects):
        text = "".join(json.dumps(o, sort_keys=True) + "\n" for o in objects)
        with self.lock:
            self.file.write(text)
            self.file.flush()

    def close(self):
        with self.lock:
            self.file.close()


def padded(args, out):
    """out with a Command "Padding" of --answer-pad bytes appended (none without the option)."""
    import command_pb2
    import common_pb2
    if args.answer_pad > 0:
        out.commands.append(command_pb2.Command(
            command="Padding",
            args=[common_pb2.KeyStringValuePair(key="pad", value="x" * args.answer_pad)]))
    return out


def span_detail(s):
    """Everything of a span that the span tests check (the "spanDetails" of a segment)."""
    return {
        "spanId": s.spanId, "parentSpanId": s.parentSpanId, "op": s.operationName,
        "peer": s.peer, "type": int(s.spanType), "layer": int(s.spanLayer),
        "component": s.componentId, "error": s.isError,
        "tags": {t.key: t.value for t in s.tags},
        "logs": [{kv.key: kv.value for kv in log.data} for log in s.logs],
        "refs": [{"type": int(r.refType), "traceId": r.traceId,
                  "parentSegment": r.parentTraceSegmentId, "parentSpanId": r.parentSpanId,
                  "parentService": r.parentService, "parentEndpoint": r.parentEndpoint,
                  "address": r.networkAddressUsedAtPeer} for r in s.refs],
    }


def build_servicers(args, recorder):
    import command_pb2
    import common_pb2
    import management_pb2_grpc
    import tracing_pb2_grpc

    serial = {"n": 0}
    serial_lock = threading.Lock()

    def commands():
        out = command_pb2.Commands()
        for name in args.command or []:
            with serial_lock:
                serial["n"] += 1
                n = serial["n"]
            out.commands.append(command_pb2.Command(
                command=name,
                args=[common_pb2.KeyStringValuePair(key="SerialNumber", value=str(n))]))
        return padded(args, out)

    def authorized(context, method):
        if args.token is None:
            return True
        md = dict(context.invocation_metadata())
        if md.get("authentication") == args.token:
            return True
        recorder.write([{"kind": "rejected", "method": method}])
        context.abort(grpc.StatusCode.UNAUTHENTICATED, "invalid authentication token")
        return False  # not reached: abort raises

    class TraceSegmentReportService(tracing_pb2_grpc.TraceSegmentReportServiceServicer):
        def collect(self, request_iterator, context):
            authorized(context, "collect")
            records = []
            for seg in request_iterator:
                records.append({
                    "kind": "segment",
                    "traceSegmentId": seg.traceSegmentId,
                    "traceId": seg.traceId,
                    "service": seg.service,
                    "serviceInstance": seg.serviceInstance,
                    "operations": [s.operationName for s in seg.spans],
                    "spans": len(seg.spans),
                    "refEndpoints": [r.parentEndpoint for s in seg.spans for r in s.refs],
                    "spanDetails": [span_detail(s) for s in seg.spans],
                })
            if args.test_double_reject_collect:
                recorder.write([{"kind": "rejected", "method": "collect",
                                 "segments": len(records)}])
                context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                              "test double: every collect call is rejected")
            recorder.write(records)
            return commands()

    class ManagementService(management_pb2_grpc.ManagementServiceServicer):
        def reportInstanceProperties(self, request, context):
            authorized(context, "reportInstanceProperties")
            props = {}
            for kv in request.properties:
                # Repeated keys (one "ipv4" per address) become lists.
                if kv.key in props:
                    prev = props[kv.key]
                    props[kv.key] = (prev if isinstance(prev, list) else [prev]) + [kv.value]
                else:
                    props[kv.key] = kv.value
            recorder.write([{"kind": "properties", "service": request.service,
                             "serviceInstance": request.serviceInstance,
                             "properties": props}])
            return commands()

        def keepAlive(self, request, context):
            authorized(context, "keepAlive")
            recorder.write([{"kind": "ping", "service": request.service,
                             "serviceInstance": request.serviceInstance}])
            return commands()

    return (tracing_pb2_grpc, TraceSegmentReportService(), management_pb2_grpc,
            ManagementService(), authorized,
            build_log_event_servicers(recorder, authorized, commands))


def label_key(name, labels):
    """"name{k=v,...}" with the labels sorted, as the meters records name a meter."""
    inner = ",".join(f"{l.name}={l.value}" for l in sorted(labels, key=lambda l: l.name))
    return f"{name}{{{inner}}}"


def build_meter_cds_servicers(args, recorder, authorized):
    """MeterReportService/collect and ConfigurationDiscoveryService/fetchConfigurations."""
    import command_pb2
    import common_pb2
    import configuration_discovery_pb2_grpc
    import meter_pb2_grpc

    serial = {"n": 0}
    serial_lock = threading.Lock()

    class MeterReportService(meter_pb2_grpc.MeterReportServiceServicer):
        def collect(self, request_iterator, context):
            authorized(context, "MeterReportService/collect")
            record = {"kind": "meters", "count": 0, "later_with_entity": 0, "values": {},
                      "histograms": {}}
            for i, md in enumerate(request_iterator):
                if i == 0:
                    record.update(service=md.service, serviceInstance=md.serviceInstance,
                                  timestamp=md.timestamp)
                elif md.service or md.serviceInstance or md.timestamp:
                    record["later_with_entity"] += 1
                record["count"] += 1
                if md.HasField("singleValue"):
                    sv = md.singleValue
                    record["values"][label_key(sv.name, sv.labels)] = sv.value
                elif md.HasField("histogram"):
                    h = md.histogram
                    record["histograms"][label_key(h.name, h.labels)] = [
                        [b.bucket, b.count] for b in h.values]
            recorder.write([record])
            return command_pb2.Commands()

    class ConfigurationDiscoveryService(
            configuration_discovery_pb2_grpc.ConfigurationDiscoveryServiceServicer):
        def fetchConfigurations(self, request, context):
            authorized(context, "fetchConfigurations")
            recorder.write([{"kind": "cds_fetch", "service": request.service,
                             "uuid": request.uuid}])
            out = command_pb2.Commands()
            if not args.cds_file:
                return out
            try:
                with open(args.cds_file, encoding="utf-8") as f:
                    answer = json.load(f)
            except FileNotFoundError:
                return out
            with serial_lock:
                serial["n"] += 1
                n = serial["n"]
            kvs = [common_pb2.KeyStringValuePair(key="SerialNumber", value=str(n)),
                   common_pb2.KeyStringValuePair(key="UUID", value=answer["uuid"])]
            for key, value in answer.get("config", {}).items():
                kvs.append(common_pb2.KeyStringValuePair(key=key, value=value))
            out.commands.append(command_pb2.Command(command="ConfigurationDiscoveryCommand",
                                                    args=kvs))
            return padded(args, out)

    return (meter_pb2_grpc, MeterReportService(), configuration_discovery_pb2_grpc,
            ConfigurationDiscoveryService())


# ---- trace profiling (ProfileTask) ----------------------------------------------------------


def build_profile_servicer(args, recorder, authorized):
    """ProfileTask: getProfileTaskCommands from --profile-task-file, collectSnapshot and
    reportTaskFinish recorded."""
    import time
    import command_pb2
    import common_pb2
    import profile_pb2_grpc

    serial = {"n": 0}
    serial_lock = threading.Lock()

    def newer(task, last):
        try:
            return int(task.get("CreateTime", "")) > last
        except ValueError:
            return True

    class ProfileTask(profile_pb2_grpc.ProfileTaskServicer):
        def getProfileTaskCommands(self, request, context):
            authorized(context, "getProfileTaskCommands")
            recorder.write([{"kind": "profile_query", "service": request.service,
                             "serviceInstance": request.serviceInstance,
                             "lastCommandTime": request.lastCommandTime}])
            out = command_pb2.Commands()
            if not args.profile_task_file:
                return out
            try:
                with open(args.profile_task_file, encoding="utf-8") as f:
                    tasks = json.load(f)
            except FileNotFoundError:
                return out
            for task in tasks:
                if not newer(task, request.lastCommandTime):
                    continue
                with serial_lock:
                    serial["n"] += 1
                    n = serial["n"]
                kvs = [common_pb2.KeyStringValuePair(key="SerialNumber", value=str(n))]
                for key, value in task.items():
                    kvs.append(common_pb2.KeyStringValuePair(key=key, value=str(value)))
                out.commands.append(command_pb2.Command(command="ProfileTaskQuery", args=kvs))
            return out

        def collectSnapshot(self, request_iterator, context):
            authorized(context, "collectSnapshot")
            records = []
            for snap in request_iterator:
                records.append({"kind": "snapshot", "taskId": snap.taskId,
                                "traceSegmentId": snap.traceSegmentId, "time": snap.time,
                                "sequence": snap.sequence,
                                "stack": list(snap.stack.codeSignatures)})
            recorder.write(records)
            return command_pb2.Commands()

        def reportTaskFinish(self, request, context):
            authorized(context, "reportTaskFinish")
            recorder.write([{"kind": "profile_finish", "service": request.service,
                             "serviceInstance": request.serviceInstance,
                             "taskId": request.taskId,
                             "received": int(time.time() * 1000)}])
            return command_pb2.Commands()

    def add_to_server(server):
        profile_pb2_grpc.add_ProfileTaskServicer_to_server(ProfileTask(), server)

    return add_to_server


# ---- logs and events (LogReportService, EventService) ------------------------------------


def build_log_event_servicers(recorder, authorized, commands):
    """LogReportService/collect and EventService/collect, recording each message."""
    import event_pb2
    import event_pb2_grpc
    import logging_pb2_grpc

    class LogReportService(logging_pb2_grpc.LogReportServiceServicer):
        def collect(self, request_iterator, context):
            authorized(context, "LogReportService/collect")
            records = []
            for log in request_iterator:
                records.append({
                    "kind": "log",
                    "service": log.service,
                    "serviceInstance": log.serviceInstance,
                    "endpoint": log.endpoint,
                    "timestamp": log.timestamp,
                    "text": log.body.text.text,
                    "traceId": log.traceContext.traceId,
                    "traceSegmentId": log.traceContext.traceSegmentId,
                    "spanId": log.traceContext.spanId,
                    "tags": {kv.key: kv.value for kv in log.tags.data},
                })
            recorder.write(records)
            return commands()

    class EventService(event_pb2_grpc.EventServiceServicer):
        def collect(self, request_iterator, context):
            authorized(context, "EventService/collect")
            records = []
            for ev in request_iterator:
                records.append({
                    "kind": "event",
                    "uuid": ev.uuid,
                    "name": ev.name,
                    "type": event_pb2.Type.Name(ev.type),
                    "message": ev.message,
                    "service": ev.source.service,
                    "serviceInstance": ev.source.serviceInstance,
                    "parameters": dict(ev.parameters),
                    "startTime": ev.startTime,
                    "endTime": ev.endTime,
                    "layer": ev.layer,
                })
            recorder.write(records)
            return commands()

    def add_to_server(server):
        logging_pb2_grpc.add_LogReportServiceServicer_to_server(LogReportService(), server)
        event_pb2_grpc.add_EventServiceServicer_to_server(EventService(), server)

    return add_to_server


def tls_server_credentials(args):
    """Server TLS credentials; with --tls-client-ca the client must present a certificate."""
    with open(args.tls_key, "rb") as k, open(args.tls_cert, "rb") as c:
        pair = (k.read(), c.read())
    if not args.tls_client_ca:
        return grpc.ssl_server_credentials([pair])
    with open(args.tls_client_ca, "rb") as ca:
        return grpc.ssl_server_credentials([pair], root_certificates=ca.read(),
                                           require_client_auth=True)


def write_port_file(path, port):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(f"{port}\n")
    os.rename(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    parser.add_argument("--out", required=True)
    parser.add_argument("--token")
    parser.add_argument("--command", action="append")
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--cds-file")
    parser.add_argument("--profile-task-file")
    parser.add_argument("--tls-client-ca")
    parser.add_argument("--answer-pad", type=int, default=0)
    parser.add_argument("--test-double-reject-collect", action="store_true")
    parser.add_argument("--proto-dir",
                        default=str(Path(__file__).resolve().parents[2] / "proto"))
    args = parser.parse_args()

    # Block the stop signals before gRPC starts its threads, so that they inherit the mask
    # and the main thread alone receives them in sigwait().
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)

    stub_dir = tempfile.mkdtemp(prefix="sw-grpc-collector-")
    try:
        generate_stubs(args.proto_dir, stub_dir)
        recorder = Recorder(args.out)
        (tracing_grpc, tracing, management_grpc, management,
         authorized, add_log_event_services) = build_servicers(args, recorder)
        meter_grpc, meter, cds_grpc, cds = build_meter_cds_servicers(args, recorder, authorized)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        tracing_grpc.add_TraceSegmentReportServiceServicer_to_server(tracing, server)
        management_grpc.add_ManagementServiceServicer_to_server(management, server)
        meter_grpc.add_MeterReportServiceServicer_to_server(meter, server)
        cds_grpc.add_ConfigurationDiscoveryServiceServicer_to_server(cds, server)
        add_log_event_services(server)
        build_profile_servicer(args, recorder, authorized)(server)
        address = f"127.0.0.1:{args.port}"
        if args.tls_cert:
            port = server.add_secure_port(address, tls_server_credentials(args))
        else:
            port = server.add_insecure_port(address)
        if port == 0:
            sys.exit(f"grpc_collector: cannot listen on 127.0.0.1:{args.port}")
        server.start()
        if args.port_file:
            write_port_file(args.port_file, port)
        print(f"grpc_collector: serving on 127.0.0.1:{port}", file=sys.stderr, flush=True)
        signal.sigwait(stop_signals)
        server.stop(grace=5).wait()
        recorder.close()
    finally:
        shutil.rmtree(stub_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
