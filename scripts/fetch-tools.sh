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
