#!/bin/sh
# Builds the GGUF fuzzer with clang (libFuzzer + ASan + UBSan), makes the seed
# corpus (small MoE .gguf files of every architecture and weight type, from
# tests/fuzz/make_seeds.py; needs a Python with numpy and gguf), runs the
# fuzzer for SECONDS seconds and reports how many inputs it tried.
#
#   tests/fuzz/run_fuzz.sh SECONDS [extra libFuzzer flags]
#
# Environment: CC (default clang), PYTHON (default: the first of the
# repository's .venv/bin/python and python3 that imports gguf), MOE_FUZZ_DIR (default
# build-fuzz/ in the repository). A crash leaves crash-* files in
# MOE_FUZZ_DIR and makes the script exit non-zero.
set -eu
SECS=${1:-60}
[ $# -gt 0 ] && shift
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${MOE_FUZZ_DIR:-$ROOT/build-fuzz}
CC=${CC:-clang}
mkdir -p "$OUT/corpus" "$OUT/seeds"

if [ -z "${PYTHON:-}" ]; then
    for p in "$ROOT/.venv/bin/python" python3; do
        if "$p" -c "import gguf, numpy" 2>/dev/null; then PYTHON=$p; break; fi
    done
fi
if [ -n "${PYTHON:-}" ]; then
    "$PYTHON" "$ROOT/tests/fuzz/make_seeds.py" "$OUT/seeds"
else
    echo "run_fuzz.sh: no Python with numpy and gguf: fuzzing without seeds" >&2
fi

echo "run_fuzz.sh: building $OUT/fuzz_gguf with $CC"
"$CC" -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -std=gnu11 -D_GNU_SOURCE -DMOE_BUILDING=1 \
    -I"$ROOT/include" -I"$ROOT/src" -I"$ROOT/src/core" -I"$ROOT/src/ref" -I"$ROOT/src/quant" \
    "$ROOT/tests/fuzz/fuzz_gguf.c" "$ROOT"/src/core/*.c "$ROOT"/src/ref/*.c "$ROOT"/src/quant/*.c \
    "$ROOT"/src/gguf/*.c "$ROOT/src/backends.c" -lm -lpthread -o "$OUT/fuzz_gguf"

echo "run_fuzz.sh: fuzzing for $SECS s (corpus $OUT/corpus, seeds $OUT/seeds)"
set +e
(cd "$OUT" && ./fuzz_gguf -max_total_time="$SECS" -print_final_stats=1 -max_len=65536 -timeout=20 \
    -rss_limit_mb=4096 "$@" corpus seeds) >"$OUT/fuzz.log" 2>&1
rc=$?
set -e
tail -n 25 "$OUT/fuzz.log"
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/fuzz.log" | tail -n 1)
echo "run_fuzz.sh: rc=$rc, inputs tried: ${execs:-unknown}, corpus: $(ls "$OUT/corpus" | wc -l) files"
exit $rc
