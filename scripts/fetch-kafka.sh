#!/bin/sh
# Resolves the Apache Kafka broker (KRaft, 4.x) and its runtime dependencies with Maven into a
# cache directory, for the tests' own broker (tests/support/kafka/broker.sh).
#
#   scripts/fetch-kafka.sh            fetch if needed, then print the jar directory on stdout
#
# Environment:
#   SW_KAFKA_VERSION    Kafka version to resolve (default below; any 4.x that Maven serves)
#   SW_KAFKA_CACHE      cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/skywalking-c)
#
# The jars land in $SW_KAFKA_CACHE/kafka-<version>/libs. A marker file written after a complete
# copy makes later runs return at once without Maven. Progress goes to stderr; the only line on
# stdout is the jar directory, so callers can use $(scripts/fetch-kafka.sh).
set -eu

version=${SW_KAFKA_VERSION:-4.4.0}
# tests/support/kafka/pom.xml also pins one log4j2 version (log4j-bom) for the slf4j binding.
cache=${SW_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/skywalking-c}
dest="$cache/kafka-$version"
libs="$dest/libs"
marker="$dest/.complete"

here=$(cd "$(dirname "$0")" && pwd)
pom="$here/../tests/support/kafka/pom.xml"

die() {
    echo "fetch-kafka: ERROR: $*" >&2
    exit 1
}

case "$version" in
4.*) ;;
*) die "SW_KAFKA_VERSION=$version: the tests need an Apache Kafka 4.x broker (KRaft only)" ;;
esac

if [ -f "$marker" ] && [ -f "$libs/kafka_2.13-$version.jar" ]; then
    echo "$libs"
    exit 0
fi

# One fetch at a time per version (two build directories may start their fixtures together);
# whoever waited finds the marker written by the other.
mkdir -p "$cache"
exec 9>"$cache/.kafka-$version.lock"
if command -v flock >/dev/null 2>&1; then
    flock -w 900 9 || die "timed out waiting for another fetch of Kafka $version ($cache)"
fi
if [ -f "$marker" ] && [ -f "$libs/kafka_2.13-$version.jar" ]; then
    echo "$libs"
    exit 0
fi

command -v mvn >/dev/null 2>&1 || die "mvn not found: install Maven (scripts/install-deps.sh)"
command -v java >/dev/null 2>&1 || die "java not found: install a JDK >= 17 (scripts/install-deps.sh)"
[ -f "$pom" ] || die "missing $pom"

echo "fetch-kafka: resolving org.apache.kafka:kafka_2.13:$version with Maven into $libs" >&2
rm -rf "$dest"
mkdir -p "$dest"
log="$dest/maven.log"
if ! mvn -B -q -f "$pom" -Dkafka.version="$version" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$libs" \
    >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    die "Maven could not resolve Apache Kafka $version (org.apache.kafka:kafka_2.13 and" \
        "kafka-tools with their dependencies); full log: $log"
fi
for jar in "kafka_2.13-$version.jar" "kafka-server-$version.jar" "kafka-tools-$version.jar" \
    "kafka-clients-$version.jar"; do
    [ -f "$libs/$jar" ] || die "Maven finished but $libs/$jar is missing; log: $log"
done
ls "$libs"/log4j-slf4j*-impl-*.jar >/dev/null 2>&1 ||
    die "no log4j slf4j binding in $libs (see tests/support/kafka/pom.xml); log: $log"

touch "$marker"
echo "fetch-kafka: $(ls "$libs" | wc -l) jars in $libs" >&2
echo "$libs"
