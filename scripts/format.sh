#!/bin/sh
# Lays out every C and C++ file of the repository with the pinned clang-format (.clang-format
# plus InsertBraces; scripts/fetch-tools.sh installs it). `scripts/format.sh --check` changes nothing and fails,
# naming the files, when one is not laid out (the format_check test).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
cf="${SW_CACHE_DIR:-$HOME/.cache/skywalking-c}/venv/bin/clang-format"
if [ ! -x "$cf" ]; then
    echo "format.sh: $cf is missing: run scripts/install-deps.sh" >&2
    exit 2
fi
cd "$here"
# .clang-format stays readable by Debian's clang-format 14, which does not know InsertBraces:
# the style used here is that file with InsertBraces added.
style=$(mktemp /tmp/sw-clang-format-XXXXXX)
trap 'rm -f "$style"' EXIT
cat .clang-format >"$style"
echo "InsertBraces: true" >>"$style"
if [ "${1:-}" = "--check" ]; then
    git ls-files -z '*.c' '*.h' '*.cpp' '*.hpp' | xargs -0 "$cf" --style="file:$style" --dry-run -Werror
else
    git ls-files -z '*.c' '*.h' '*.cpp' '*.hpp' | xargs -0 "$cf" --style="file:$style" -i
fi
