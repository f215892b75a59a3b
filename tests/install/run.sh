#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then builds a small program
# against the installed copy twice: with CMake's find_package(libmoe) and with
# pkg-config. Usage: run.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1 src=$2
# MOE_TEST_CFLAGS: extra compile/link flags (the sanitizers in a sanitizer build)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(ls -d "$tmp"/prefix/lib*/ | head -1)
test -f "$tmp/prefix/include/moe.h"
ls "$libdir"libmoe.so* "$libdir"libmoe.a >/dev/null

echo "-- find_package(libmoe)"
cmake -S "$src/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_C_FLAGS="${MOE_TEST_CFLAGS:-}" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/consumer/consumer"

if command -v pkg-config >/dev/null 2>&1; then
    echo "-- pkg-config libmoe"
    export PKG_CONFIG_PATH="$libdir/pkgconfig"
    cc ${MOE_TEST_CFLAGS:-} "$src/tests/install/consumer.c" -o "$tmp/consumer_pc" $(pkg-config --cflags --libs libmoe)
    LD_LIBRARY_PATH="$libdir" "$tmp/consumer_pc"
    echo "-- pkg-config --static libmoe"
    cc ${MOE_TEST_CFLAGS:-} "$src/tests/install/consumer.c" -o "$tmp/consumer_static" -Wl,-Bstatic $(pkg-config --cflags --static --libs-only-L libmoe) -lmoe -Wl,-Bdynamic $(pkg-config --static --libs-only-l libmoe | sed 's/-lmoe//') -lstdc++
    "$tmp/consumer_static"
else
    echo "-- pkg-config not installed: that half is skipped"
fi
