#!/bin/sh
# Lays out every C and C++ file of the repository with the pinned clang-format (.clang-format;
# scripts/fetch-tools.sh installs it). `scripts/format.sh --check` changes nothing and fails,
# naming the files, when one is not laid out (the format_check test).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
cf="${SW_CACHE_DIR:-$HOME/.cache/skywalking-c}/venv/bin/clang-format"
if [ ! -x "$cf" ]; then
    echo "format.sh: $cf is missing: run scripts/install-deps.sh" >&2
    exit 2
fi
cd "$here"
if [ "${1:-}" = "--check" ]; then
    git ls-files -z '*.c' '*.h' '*.cpp' '*.hpp' | xargs -0 "$cf" --dry-run -Werror
else
    git ls-files -z '*.c' '*.h' '*.cpp' '*.hpp' | xargs -0 "$cf" -i
fi
