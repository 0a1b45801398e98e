#!/bin/sh
# check_exports.sh LIBRARY.so HEADER.h [EXTRA.map]
# Passes when the shared library exports exactly the functions its public header declares:
# the header's prototypes come from gcc -aux-info (every function declared, with the file that
# declares it; static inline ones are not exported and not counted), the library's from
# nm -D --defined-only (without the version node, an absolute symbol, and the @VERSION suffix).
# EXTRA.map (libskywalking-preload.so: agent/preload/exports.map): a version script whose
# names (`name;` lines: the interposed functions) are exported too; the library must then
# export every name without a version, or its interposers would not match the versioned
# references of programs (and the API functions the references to sw_*@SKYWALKING_0).
set -eu
lib=$1
header=$2
extra=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gcc -fsyntax-only -aux-info "$tmp/aux" -x c "$header"
{
    grep -F "/* $header:" "$tmp/aux" | sed 's|^/\* [^ ]* \*/ ||' | grep -v '^static ' |
        sed 's/ (.*//; s/.*[ *]//'
    if [ -n "$extra" ]; then
        sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);[[:space:]]*$/\1/p' "$extra"
    fi
} | sort -u >"$tmp/declared"
if [ -n "$extra" ] && nm -D --defined-only "$lib" | awk '$2 != "A"' | grep -q '@'; then
    echo "check_exports: $lib must export its symbols without a version; versioned:" >&2
    nm -D --defined-only "$lib" | awk '$2 != "A" && $3 ~ /@/ { print "  " $3 }' >&2
    exit 1
fi
nm -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' |
    sort -u >"$tmp/exported"

if [ ! -s "$tmp/declared" ]; then
    echo "check_exports: no function found in $header" >&2
    exit 1
fi
# Linked with -Bsymbolic-functions, the library's calls to its own exported functions bind
# inside it: no dynamic relocation names one of them (another copy of the API in the process,
# libskywalking.so beside the preload library, would otherwise receive some of its calls).
objdump -R "$lib" | awk '$2 ~ /JUMP_SLOT|GLOB_DAT/ { sub(/@.*/, "", $3); print $3 }' |
    sort -u >"$tmp/relocated"
comm -12 "$tmp/exported" "$tmp/relocated" >"$tmp/self"
if [ -s "$tmp/self" ]; then
    echo "check_exports: $lib calls its own exported functions through the PLT/GOT" \
         "(link it with -Wl,-Bsymbolic-functions):" >&2
    sed 's/^/  /' "$tmp/self" >&2
    exit 1
fi
status=0
comm -13 "$tmp/declared" "$tmp/exported" >"$tmp/extra"
comm -23 "$tmp/declared" "$tmp/exported" >"$tmp/missing"
if [ -s "$tmp/extra" ]; then
    echo "check_exports: $lib exports symbols that $header does not declare:" >&2
    sed 's/^/  /' "$tmp/extra" >&2
    status=1
fi
if [ -s "$tmp/missing" ]; then
    echo "check_exports: $header declares functions that $lib does not export" \
         "(add them to the library's version script, <folder>/<name>.map):" >&2
    sed 's/^/  /' "$tmp/missing" >&2
    status=1
fi
if [ "$status" = 0 ]; then
    echo "check_exports: $lib exports exactly the $(wc -l <"$tmp/declared") functions of $header${extra:+ and $extra}"
fi
exit $status
