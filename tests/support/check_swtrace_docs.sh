#!/bin/sh
# check_swtrace_docs.sh SWTRACE MANPAGE README
# Passes when `swtrace --help`, the manual page and the README describe the same command: the
# README shows the synopsis of --help's usage line, and every option --help lists is in the
# manual page and in the README.
set -eu
swtrace=$1
man=$2
readme=$3
help=$("$swtrace" --help)
status=0
synopsis=$(echo "$help" | sed -n '1s/^usage: //p')
[ -n "$synopsis" ] || { echo "check_swtrace_docs: --help has no usage line" >&2; exit 1; }
grep -qF "\`$synopsis\`" "$readme" ||
    { echo "check_swtrace_docs: README lacks the synopsis \`$synopsis\`" >&2; status=1; }
# The manual page writes a dash as \-.
man_text=$(sed 's/\\-/-/g' "$man")
for opt in $(echo "$help" | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
    echo "$man_text" | grep -qE -- "^\.(B|BR|TP|RB).*$opt|^$opt" ||
        { echo "check_swtrace_docs: the manual page does not describe $opt" >&2; status=1; }
    grep -qF -- "$opt" "$readme" ||
        { echo "check_swtrace_docs: the README does not mention $opt" >&2; status=1; }
done
[ "$status" != 0 ] || echo "check_swtrace_docs: --help, manual page and README agree"
exit $status
