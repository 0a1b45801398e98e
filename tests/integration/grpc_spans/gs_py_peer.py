"""The Python peer of the gRPC span tests: gs.Echo's Unary and Hop on grpcio, traced by
SkyWalking's Python agent (its grpc plugin), which reports to the test collector.

    gs_py_peer.py PORT_FILE     (agent settings from the SW_AGENT_* environment)

Unary answers with the request; Hop calls Unary on the target named in the request and answers
with that answer. Messages are handled as raw bytes (gs.Msg is one string field), so the peer
needs no generated code. Serves until its stdin closes, then lets the agent send what it holds.
"""
import os
import sys

from skywalking import agent, config  # noqa: E402

config.init()
agent.start()

import grpc  # noqa: E402  (after the agent, whose plugin wraps grpc.server / insecure_channel)
from concurrent import futures  # noqa: E402


def msg_text(raw):
    """The text of a gs.Msg (field 1, a string shorter than 128 bytes)."""
    if len(raw) >= 2 and raw[0] == 0x0A and raw[1] < 0x80:
        return raw[2:2 + raw[1]].decode()
    return ""


def msg(text):
    data = text.encode()
    return bytes([0x0A, len(data)]) + data


def unary(request, context):
    return request


def hop(request, context):
    with grpc.insecure_channel(msg_text(request)) as channel:
        call = channel.unary_unary("/gs.Echo/Unary")
        return call(msg("hop"), timeout=30)


def main():
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "Hop": grpc.unary_unary_rpc_method_handler(hop),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("gs.Echo", handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(f"{port}\n")
    os.rename(tmp, sys.argv[1])
    sys.stdin.read()
    server.stop(grace=2).wait()
    agent.stop()


if __name__ == "__main__":
    main()
