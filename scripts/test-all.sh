#!/bin/sh
# Configures, builds and runs every test in the default, asan and tsan presets (or in the
# presets named in $PRESETS). Exits non-zero when any build or test fails.
set -u
cd "$(dirname "$0")/.."
presets=${PRESETS:-"default asan tsan"}
jobs=${JOBS:-$(nproc)}
failed=""
for p in $presets; do
    echo "=== preset $p ==="
    if cmake --preset "$p" >/dev/null && cmake --build --preset "$p" -j "$jobs" &&
        ctest --preset "$p" -j "$jobs"; then
        echo "=== preset $p: ok ==="
    else
        echo "=== preset $p: FAILED ==="
        failed="$failed $p"
    fi
done
if [ -n "$failed" ]; then
    echo "test-all: failed presets:$failed"
    exit 1
fi
echo "test-all: all presets passed ($presets)"
