#!/bin/sh
# Python-packaged tools the project pins, in a virtual environment of its own under
# ~/.cache/skywalking-c/venv (never the system's Python): clang-format 18, whose InsertBraces
# (.clang-format) Debian 12's clang-format 14 lacks. scripts/format.sh and the format_check test
# use it. Idempotent.
set -eu
cache="${SW_CACHE_DIR:-$HOME/.cache/skywalking-c}"
venv="$cache/venv"
CLANG_FORMAT_VERSION=18.1.8
if [ ! -x "$venv/bin/python3" ]; then
    mkdir -p "$cache"
    python3 -m venv "$venv"
fi
have=$("$venv/bin/clang-format" --version 2>/dev/null || true)
case "$have" in
*"version $CLANG_FORMAT_VERSION"*) ;;
*) "$venv/bin/pip" install -q "clang-format==$CLANG_FORMAT_VERSION" ;;
esac
# OpenTelemetry's Python API and SDK: tests/support/otel_hop.py, the W3C Trace Context peer of
# the preload_w3c test (TraceContextTextMapPropagator extracts our traceparent and injects its
# own). Pinned; the test is skipped when the venv lacks them.
OTEL_VERSION=1.27.0
have=$("$venv/bin/python3" -c 'import opentelemetry.version as v; print(v.__version__)' 2>/dev/null || true)
if [ "$have" != "$OTEL_VERSION" ]; then
    "$venv/bin/pip" install -q "opentelemetry-api==$OTEL_VERSION" "opentelemetry-sdk==$OTEL_VERSION"
fi
# SkyWalking's own Python agent, the cross-language peer of the gRPC and Kafka client-span tests
# (its sw_grpc and sw_kafka plugins continue our sw8 and we continue theirs). A venv of its own,
# ~/.cache/skywalking-c/venv-pyagent, because its pins (grpcio, protobuf) differ from the ones
# above. Pinned; the cross-language tests are skipped when this venv lacks them.
# 1.2.0, not 1.3.0: the 1.3.0 wheel on PyPI lacks the generated skywalking/protocol stubs
# (ModuleNotFoundError: No module named 'skywalking.protocol' at import); 1.2.0 ships them and
# has the same sw_grpc and sw_kafka (kafka-python 2.0) plugins.
pyagent="$cache/venv-pyagent"
SKYWALKING_PY_VERSION=1.2.0
GRPCIO_VERSION=1.85.4
KAFKA_PYTHON_VERSION=2.0.2
if [ ! -x "$pyagent/bin/python3" ]; then
    python3 -m venv "$pyagent"
fi
have=$("$pyagent/bin/python3" -c 'import importlib.metadata as m; print(*(m.version(p) for p in ("apache-skywalking", "grpcio", "kafka-python")))' 2>/dev/null || true)
if [ "$have" != "$SKYWALKING_PY_VERSION $GRPCIO_VERSION $KAFKA_PYTHON_VERSION" ]; then
    "$pyagent/bin/pip" install -q "apache-skywalking==$SKYWALKING_PY_VERSION" \
        "grpcio==$GRPCIO_VERSION" "grpcio-tools==$GRPCIO_VERSION" "kafka-python==$KAFKA_PYTHON_VERSION"
fi
