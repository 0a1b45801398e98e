#!/bin/sh
# check_install.sh CMAKE BUILD_DIR LIBDIR SOVERSION
# Installs the build into a temporary prefix (`cmake --install BUILD_DIR --prefix P`), checks the
# layout, then, outside the source tree, builds a C program with `pkg-config --cflags --libs
# skywalking` and a C++ project with find_package(skywalking) (shared and static), runs them, and
# decodes what they recorded with the installed swtrace --json (check_recorded.py).
set -eu
cmake=$1
build=$2
libdir=$3
sover=$4 # the SONAME version, e.g. 0.2 (top-level CMakeLists.txt, SW_SOVERSION)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/sw-install-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() {
    echo "check_install: $*" >&2
    exit 1
}

"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" ||
    { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }

for f in bin/swtrace share/man/man1/swtrace.1 \
    include/skywalking.h include/skywalking.hpp include/kproducer.h include/datacarrier.h \
    "$libdir/libskywalking-preload.so" \
    "$libdir/cmake/skywalking/skywalking-config.cmake" \
    "$libdir/cmake/skywalking/skywalking-config-version.cmake" \
    "$libdir/cmake/skywalking/skywalking-targets.cmake"; do
    [ -f "$prefix/$f" ] || fail "not installed: $f"
done
for lib in skywalking kproducer datacarrier; do
    [ -f "$prefix/$libdir/lib$lib.a" ] || fail "not installed: $libdir/lib$lib.a"
    [ -L "$prefix/$libdir/lib$lib.so" ] || fail "not installed: $libdir/lib$lib.so (link)"
    soname=$(readelf -dW "$prefix/$libdir/lib$lib.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    [ "$soname" = "lib$lib.so.$sover" ] ||
        fail "lib$lib.so: SONAME '$soname', expected lib$lib.so.$sover"
    [ -f "$prefix/$libdir/$soname" ] || fail "not installed: $libdir/$soname"
    pc=$prefix/$libdir/pkgconfig/$lib.pc
    [ -f "$pc" ] || fail "not installed: $libdir/pkgconfig/$lib.pc"
    grep -qx "prefix=$prefix" "$pc" || fail "$lib.pc does not name the install prefix $prefix"
done

# The nginx module (built where nginx-dev is installed): Debian's layout, a snippet that loads
# the installed copy, and a module that finds the installed libskywalking.so by its RUNPATH
# (nginx -t loads it, with no LD_LIBRARY_PATH).
if [ -f "$build/agent/nginx/ngx_http_skywalking_module.so" ]; then
    module=$prefix/lib/nginx/modules/ngx_http_skywalking_module.so
    snippet=$prefix/share/nginx/modules-available/mod-http-skywalking.conf
    [ -f "$module" ] || fail "not installed: lib/nginx/modules/ngx_http_skywalking_module.so"
    [ -f "$snippet" ] || fail "not installed: share/nginx/modules-available/mod-http-skywalking.conf"
    grep -qx "load_module $module;" "$snippet" || fail "the snippet does not load $module"
    mkdir "$tmp/nginx"
    printf 'include %s;\nerror_log %s/error.log;\npid %s/nginx.pid;\nevents {}\nhttp { skywalking on; }\n' \
        "$snippet" "$tmp/nginx" "$tmp/nginx" >"$tmp/nginx/nginx.conf"
    env -u LD_LIBRARY_PATH nginx -t -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" >"$tmp/nginx.log" 2>&1 ||
        { cat "$tmp/nginx.log" >&2; fail "nginx -t does not load the installed module"; }
fi

export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
static_libs=$(pkg-config --static --libs skywalking) || fail "pkg-config --static skywalking"
for l in -lskywalking -lkproducer -ldatacarrier -lprotobuf-c -lgrpc -lz; do
    echo " $static_libs " | grep -q -- " $l " || fail "pkg-config --static --libs skywalking lacks $l: $static_libs"
done

# The C program: pkg-config, shared library, -finstrument-functions hooks from the library.
mkdir "$tmp/c"
cp "$here/consumer.c" "$tmp/c/"
cd "$tmp/c"
# shellcheck disable=SC2046 # pkg-config output is a list of flags
cc -std=c11 -Wall -Wextra -Werror -finstrument-functions -rdynamic consumer.c -o consumer \
    $(pkg-config --cflags --libs skywalking) || fail "building the C program with pkg-config"
readelf -dW consumer | grep -qF "[libskywalking.so.$sover]" ||
    fail "the C program is not linked with libskywalking.so.$sover"
LD_LIBRARY_PATH="$prefix/$libdir" SW_AGENT_NAME=c-consumer SW_REPORTER_FILE_PATH="$tmp/c.bin" \
    SW_CYG_INCLUDE='consumer_*' ./consumer || fail "the C program failed"
"$prefix/bin/swtrace" --json "$tmp/c.bin" >"$tmp/c.json" || fail "swtrace --json c.bin"
python3 "$here/check_recorded.py" c "$tmp/c.json"

# The C++ project: find_package(skywalking CONFIG REQUIRED), shared and static.
cp -r "$here/cxx" "$tmp/cxx-src"
"$cmake" -S "$tmp/cxx-src" -B "$tmp/cxx-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER=g++ -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$tmp/cxx.log" 2>&1 ||
    { cat "$tmp/cxx.log" >&2; fail "configuring the C++ project with find_package"; }
"$cmake" --build "$tmp/cxx-build" >>"$tmp/cxx.log" 2>&1 ||
    { cat "$tmp/cxx.log" >&2; fail "building the C++ project"; }
readelf -dW "$tmp/cxx-build/cxx_consumer_static" | grep -q 'NEEDED.*libskywalking' &&
    fail "cxx_consumer_static needs libskywalking.so: skywalking::skywalking_static is not static"
for exe in cxx_consumer cxx_consumer_static; do
    SW_AGENT_NAME=$exe SW_REPORTER_FILE_PATH="$tmp/$exe.bin" "$tmp/cxx-build/$exe" ||
        fail "$exe failed"
    "$prefix/bin/swtrace" --json "$tmp/$exe.bin" >"$tmp/$exe.json" || fail "swtrace --json $exe.bin"
    python3 "$here/check_recorded.py" cxx "$tmp/$exe.json"
done
echo "check_install: installed into a temporary prefix; C (pkg-config) and C++ (find_package," \
     "shared and static) programs built outside the tree recorded what they traced"
