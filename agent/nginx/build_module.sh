#!/bin/sh
# build_module.sh SRC_TREE WORK_DIR MODULE_DIR INCLUDE_DIR LIB_DIR RUNPATH OUT
#
# Builds ngx_http_skywalking_module.so the way Debian builds its nginx modules: a copy of the
# nginx-dev tree (SRC_TREE, /usr/share/nginx/src) in WORK_DIR, configured with the flags
# Debian's nginx was built with (SRC_TREE/conf_flags) plus --add-dynamic-module=MODULE_DIR,
# then `make modules`. The module links libskywalking.so from LIB_DIR and finds it at run time
# through RUNPATH (passed to the linker in a response file, so that $ORIGIN reaches it
# untouched by make and the shell). The result is copied to OUT. Run by agent/nginx/CMakeLists.txt.
set -eu
src=$1 work=$2 module=$3 inc=$4 libdir=$5 runpath=$6 out=$7

if [ ! -f "$work/objs/Makefile" ] || [ "$module/config" -nt "$work/objs/Makefile" ]; then
    rm -rf "$work"
    mkdir -p "$work"
    cp -a "$src/." "$work/"
    printf -- '-rpath=%s\n' "$runpath" > "$work/sw_runpath.opts"
    # conf_flags is a bash array assignment: NGX_CONF_FLAGS=( ... ) of plain words.
    flags=$(sed -n 's/^NGX_CONF_FLAGS=( *\(.*\) *)$/\1/p' "$src/conf_flags")
    (
        cd "$work"
        SW_NGINX_INCS="$inc" \
        SW_NGINX_LIBS="-L$libdir -lskywalking -Wl,@$work/sw_runpath.opts" \
        ./configure $flags \
            --with-cc-opt='-g -O2 -fPIC -fstack-protector-strong -Wformat -Werror=format-security -D_FORTIFY_SOURCE=2' \
            --with-ld-opt='-Wl,-z,relro -Wl,-z,now -fPIC' \
            --add-dynamic-module="$module" > configure.log 2>&1 ||
            { cat configure.log; exit 1; }
    )
fi
make -C "$work" -f objs/Makefile modules > "$work/make.log" 2>&1 || { cat "$work/make.log"; exit 1; }
cp "$work/objs/ngx_http_skywalking_module.so" "$out"
