#!/bin/sh
# Installs everything skywalking-c needs to build, test and benchmark on Debian 12.
# Idempotent: packages already present are left alone. Run as root or with sudo available.
set -eu

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

# Build: compilers (gcc/g++ for default/tsan, clang/clang++ for asan and libFuzzer; g++ also
# compiles the C++ API's test in every preset), cmake, ninja; dpkg-dev for `cpack -G DEB`.
# Libraries: protobuf-c (SegmentObject encoding), gRPC core C API (OAP reporter), zlib (gzip),
# OpenSSL (the producer's TLS and SCRAM).
# Tests: criterion (unit tests), kcat (independent Kafka consumer), a JDK and Maven (the real
# Apache Kafka broker), curl and libmicrohttpd (preload tests), librdkafka (producer benchmark
# baseline), python3 grpcio (test collector), wrk (load generator), PostgreSQL, MariaDB and Redis
# servers with their client libraries (database/cache preload plugins and their tests), libevent
# (the evhttp example and the event-loop request-context tests), nginx and nginx-dev (the nginx
# module, built against Debian's own nginx headers, and its tests), gRPC C++ with its protoc
# plugin (the gRPC client/server span tests' C++ peers), elfutils' libdw/libelf and libunwind
# (the profiler's and crash recorder's symbolizer and unwinder), apache2-utils (ab, the nginx
# bench's second load generator), valgrind (test_rdkafka_spans: no invalid free and no leak of a
# caller's Kafka headers on the produce failure paths, traced and untraced).
PACKAGES="build-essential g++ dpkg-dev cmake ninja-build pkg-config clang libclang-rt-14-dev llvm clang-format
  libprotobuf-c-dev protobuf-c-compiler libgrpc-dev zlib1g-dev liblz4-dev libzstd-dev libssl-dev
  libcriterion-dev kcat default-jdk-headless maven curl libcurl4-openssl-dev libmicrohttpd-dev
  librdkafka-dev python3 python3-venv python3-grpcio python3-grpc-tools python3-protobuf wrk
  postgresql libpq-dev mariadb-server libmariadb-dev redis-server libhiredis-dev
  libevent-dev nginx nginx-dev libgrpc++-dev protobuf-compiler-grpc libdw-dev libelf-dev
  libunwind-dev apache2-utils valgrind"

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "install-deps: installing:$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

# Project-local caches that tests use (the Kafka broker's jars), when their scripts exist.
here=$(cd "$(dirname "$0")" && pwd)
for fetch in "$here"/fetch-*.sh; do
    [ -x "$fetch" ] && "$fetch"
done
echo "install-deps: done"
