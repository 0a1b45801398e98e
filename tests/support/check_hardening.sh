#!/bin/sh
# check_hardening.sh [--fortify] ELF...
# Passes when every ELF file (executable or shared object) was linked with full RELRO
# (a GNU_RELRO segment and BIND_NOW) and compiled with the stack protector (it calls
# __stack_chk_fail); with --fortify, also with _FORTIFY_SOURCE (it calls glibc's __*_chk).
set -eu
fortify=0
if [ "${1:-}" = "--fortify" ]; then
    fortify=1
    shift
fi
[ $# -gt 0 ] || { echo "usage: check_hardening.sh [--fortify] ELF..." >&2; exit 2; }
status=0
for f in "$@"; do
    fail() {
        echo "check_hardening: $f: $1" >&2
        status=1
    }
    if [ ! -f "$f" ]; then
        fail "no such file"
        continue
    fi
    readelf -lW "$f" | grep -q 'GNU_RELRO' || fail "no GNU_RELRO segment (link with -z relro)"
    readelf -dW "$f" | grep -Eq '\(BIND_NOW\)|\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW' ||
        fail "no BIND_NOW (link with -z now)"
    syms=$(readelf --dyn-syms -W "$f")
    echo "$syms" | grep -q ' __stack_chk_fail' ||
        fail "does not call __stack_chk_fail (compile with -fstack-protector-strong)"
    if [ "$fortify" = 1 ]; then
        echo "$syms" | grep -Eq ' __[a-z0-9_]+_chk(@|$| )' ||
            fail "calls no __*_chk function (compile with -D_FORTIFY_SOURCE=2 and -O)"
    fi
    [ "$status" != 0 ] || echo "check_hardening: $f: full RELRO, stack protector$([ $fortify = 1 ] && echo ', fortified')"
done
exit $status
