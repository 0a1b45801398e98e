"""The `skywalking.protocol` package of SkyWalking's Python agent, built from this repository's
proto/ when the installed agent lacks it.

The apache-skywalking 1.3.0 distribution on PyPI ships without its generated protocol package
(skywalking/protocol, made from SkyWalking's data-collect-protocol at build time), so
`agent.start()` fails with "No module named 'skywalking.protocol'". The agent only needs the
v3 messages and stubs, which proto/ holds with the OAP's field numbers (the wire contract): this
module generates them with grpc_tools.protoc (the venv's grpcio-tools) into a directory and
lays out the module names the agent imports. Profile.proto, which proto/ does not hold, is
given a minimal form with upstream's names and numbers (the tests run the agent with profiling
off, so it is never sent).

Use, before importing the agent:  import pyagent_protocol; pyagent_protocol.ensure(proto_dir)
"""
import importlib.util
import os
import sys
import tempfile

PROFILE_PROTO = """
syntax = "proto3";
package skywalking.v3;
import "command.proto";
service ProfileTask {
  rpc getProfileTaskCommands (ProfileTaskCommandQuery) returns (Commands) {}
  rpc collectSnapshot (stream ThreadSnapshot) returns (Commands) {}
  rpc reportTaskFinish (ProfileTaskFinishReport) returns (Commands) {}
}
message ProfileTaskCommandQuery {
  string service = 1;
  string serviceInstance = 2;
  int64 lastCommandTime = 3;
}
message ThreadSnapshot {
  string taskId = 1;
  string traceSegmentId = 2;
  int64 time = 3;
  int32 sequence = 4;
  ThreadStack stack = 5;
}
message ThreadStack {
  repeated string codeSignatures = 1;
}
message ProfileTaskFinishReport {
  string service = 1;
  string serviceInstance = 2;
  string taskId = 3;
}
"""

# agent module -> (flat generated module), per subpackage
LAYOUT = {
    "common": {"Common_pb2": "common_pb2", "Command_pb2": "command_pb2"},
    "language_agent": {"Tracing_pb2": "tracing_pb2", "Tracing_pb2_grpc": "tracing_pb2_grpc",
                       "Meter_pb2": "meter_pb2", "Meter_pb2_grpc": "meter_pb2_grpc"},
    "logging": {"Logging_pb2": "logging_pb2", "Logging_pb2_grpc": "logging_pb2_grpc"},
    "management": {"Management_pb2": "management_pb2",
                   "Management_pb2_grpc": "management_pb2_grpc"},
    "profile": {"Profile_pb2": "profile_pb2", "Profile_pb2_grpc": "profile_pb2_grpc"},
}


def ensure(proto_dir):
    """Makes `skywalking.protocol` importable (a no-op when the agent has its own)."""
    import skywalking
    if importlib.util.find_spec("skywalking.protocol") is not None:
        return
    from grpc_tools import protoc
    out = tempfile.mkdtemp(prefix="sw-pyagent-protocol-")
    with open(os.path.join(out, "profile.proto"), "w", encoding="ascii") as f:
        f.write(PROFILE_PROTO)
    gen = os.path.join(out, "gen")
    os.mkdir(gen)
    protos = [os.path.join(proto_dir, p) for p in sorted(os.listdir(proto_dir))
              if p.endswith(".proto")]
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    rc = protoc.main(["protoc", f"-I{proto_dir}", f"-I{out}", f"-I{include}",
                      f"--python_out={gen}", f"--grpc_python_out={gen}",
                      *protos, os.path.join(out, "profile.proto")])
    if rc != 0:
        raise RuntimeError(f"protoc failed ({rc}) on {proto_dir}")
    pkg = os.path.join(out, "skywalking", "protocol")
    os.makedirs(pkg)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    for sub, modules in LAYOUT.items():
        os.mkdir(os.path.join(pkg, sub))
        open(os.path.join(pkg, sub, "__init__.py"), "w").close()
        for name, flat in modules.items():
            with open(os.path.join(pkg, sub, name + ".py"), "w", encoding="ascii") as f:
                f.write(f"from {flat} import *  # noqa: F401,F403\n")
    sys.path.insert(0, gen)
    skywalking.__path__.append(os.path.join(out, "skywalking"))
