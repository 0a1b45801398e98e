#!/bin/sh
# check_evhttp_example.sh SW_EVHTTP_SERVER SWTRACE
# Smoke test of the example agent/examples/evhttp_server.c: starts it on a free loopback port
# writing segments to a temporary file, sends it 50 requests at once with the real curl CLI
# (--parallel), stops it with SIGTERM, and checks every answer, its counters line (nothing
# dropped, failed or left open) and, with swtrace, 50 traces of two segments each (the
# request's entry and exit, and the /leaf entry that the exit called).
set -eu
server=$1
swtrace=$2
n=50
tmp=$(mktemp -d)
pid=""
cleanup() {
    if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "check_evhttp_example: $*" >&2
    echo "--- server output:" >&2
    cat "$tmp/out" >&2 || true
    exit 1
}

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SW_AGENT_NAME=evhttp-example SW_REPORTER_FILE_PATH="$tmp/seg.bin" "$server" "$port" \
    >"$tmp/out" 2>&1 &
pid=$!
# Ready when it prints its listening line (polled every 0.1 s for at most 30 s: the server
# offers nothing to block on).
i=0
until grep -q "listening on" "$tmp/out" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || fail "the server exited before listening"
    [ $i -lt 300 ] || fail "the server did not listen within 30 s"
    sleep 0.1
    i=$((i + 1))
done

urls=""
j=0
while [ $j -lt $n ]; do
    urls="$urls http://127.0.0.1:$port/hello/$j"
    j=$((j + 1))
done
# shellcheck disable=SC2086
curl -sS --max-time 60 --parallel --parallel-max $n $urls >"$tmp/bodies" ||
    fail "curl failed"
ok=$(grep -c "^hello from the leaf$" "$tmp/bodies" || true)
[ "$ok" = $n ] || fail "$ok of $n answers were 'hello from the leaf'"

kill -TERM "$pid"
i=0
while kill -0 "$pid" 2>/dev/null; do
    [ $i -lt 300 ] || fail "the server did not stop within 30 s of SIGTERM"
    sleep 0.1
    i=$((i + 1))
done
wait "$pid" || fail "the server exited with status $?"
pid=""
grep -q "^segments: finished=$((2 * n)) reported=$((2 * n)) dropped=0 failed=0 open=0$" \
    "$tmp/out" || fail "expected finished=reported=$((2 * n)), nothing dropped, failed or open"
"$swtrace" "$tmp/seg.bin" >"$tmp/trace" || fail "swtrace could not read the segments"
grep -q "^summary: traces=$n segments=$((2 * n)) spans=$((3 * n)) errors=0$" "$tmp/trace" ||
    fail "swtrace: $(tail -n 1 "$tmp/trace"), expected $n traces of 2 segments and 3 spans"
echo "check_evhttp_example: $n requests, $n traces of 2 segments"
