#!/usr/bin/env bash
# Extracts the C example of README.md (the ```c block after
# "<!-- example -->"), compiles it against the built library and runs it.
set -eu
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk '/<!-- example -->/{f=1; next} f && /^```c/{g=1; next} g && /^```/{exit} g{print}' "$src/README.md" > "$tmp/example.c"
test -s "$tmp/example.c" || { echo "no example found in README.md"; exit 1; }
cc ${MOE_TEST_CFLAGS:-} -std=c11 -Wall -Werror -I "$src/include" "$tmp/example.c" -o "$tmp/example" -L "$build" -lmoe -Wl,-rpath,"$build" -lm
"$tmp/example"
