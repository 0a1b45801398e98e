#!/bin/sh
# check_deb.sh CMAKE CPACK BUILD_DIR SOVERSION
# Builds the Debian package (cpack -G DEB) of BUILD_DIR into a temporary directory and checks
# with dpkg-deb -c that it holds exactly the files `cmake --install` puts under /usr (installed
# with DESTDIR into another temporary directory), and that its pkg-config files name /usr.
set -eu
cmake=$1
cpack=$2
build=$3
sover=$4 # the SONAME version, e.g. 0.2
tmp=$(mktemp -d /tmp/sw-deb-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "check_deb: $*" >&2
    exit 1
}

"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1 ||
    { cat "$tmp/cpack.log" >&2; fail "cpack -G DEB failed"; }
set -- "$tmp"/pkg/*.deb
[ $# = 1 ] && [ -f "$1" ] || fail "expected one .deb in $tmp/pkg, got: $*"
deb=$1

# dpkg-deb -c: "perms owner/group size date time ./path[ -> target]"; directories end in /.
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./||' | grep -v '/$' | sort >"$tmp/deb.list"
DESTDIR="$tmp/root" "$cmake" --install "$build" --prefix /usr >"$tmp/install.log" ||
    { cat "$tmp/install.log" >&2; fail "cmake --install with DESTDIR failed"; }
(cd "$tmp/root" && find . ! -type d | sed 's|^\./||' | sort) >"$tmp/install.list"
if ! diff -u "$tmp/install.list" "$tmp/deb.list" >"$tmp/diff"; then
    cat "$tmp/diff" >&2
    fail "the package's files differ from the install layout (- install, + package)"
fi
for f in usr/bin/swtrace usr/include/skywalking.hpp usr/share/man/man1/swtrace.1; do
    grep -qx "$f" "$tmp/deb.list" || fail "the package lacks $f"
done
grep -q "^usr/lib.*/libskywalking\.so\.$sover\$" "$tmp/deb.list" ||
    fail "the package lacks libskywalking.so.$sover"
grep -Eq '^usr/lib.*/libskywalking-preload\.so$' "$tmp/deb.list" ||
    fail "the package lacks libskywalking-preload.so"

dpkg-deb -x "$deb" "$tmp/extract"
if [ -f "$build/agent/nginx/ngx_http_skywalking_module.so" ]; then
    for f in usr/lib/nginx/modules/ngx_http_skywalking_module.so \
        usr/share/nginx/modules-available/mod-http-skywalking.conf; do
        grep -qx "$f" "$tmp/deb.list" || fail "the package lacks $f"
    done
    grep -qx 'load_module /usr/lib/nginx/modules/ngx_http_skywalking_module.so;' \
        "$tmp/extract/usr/share/nginx/modules-available/mod-http-skywalking.conf" ||
        fail "the package's mod-http-skywalking.conf does not load /usr/lib/nginx/modules/..."
fi
for pc in "$tmp"/extract/usr/lib*/pkgconfig/*.pc; do
    grep -qx 'prefix=/usr' "$pc" || fail "$(basename "$pc") in the package does not say prefix=/usr"
done
echo "check_deb: $(basename "$deb") holds the $(wc -l <"$tmp/deb.list") installed files" \
     "($(dpkg-deb -f "$deb" Depends))"
