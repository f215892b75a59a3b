#!/bin/bash
# Session 16 device calls (cuda-quant's int8 tensor-core kernels, src/cuda/decode_qmma.cu).
#   OUT=out CARRY=dir TESTS="..." SAN="tool:test ..." QARGS="..." bash bench/decode/run_s16.sh
# CARRY holds moe-tests.gz and bench_decode.gz (this tree's build; .xz, or all in one .tar.xz). The moe-tests
# filters of TESTS and the compute-sanitizer runs of SAN side by side, then
# bench_decode --quant QARGS (rows stream / kdec / i8 / default), its report
# lines last (everything in OUT).
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
C=${CARRY:-build-devbin/carry}; mkdir -p /tmp/b
for f in $C/*.gz; do [ -e "$f" ] && { gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); }; done
for f in $C/*.tar.xz; do [ -e "$f" ] && xz -dc $f | tar xf - -C /tmp/b; done   # several binaries in one archive (xz's window shares their device code)
for f in $C/*.xz; do case $f in *.tar.xz) continue;; esac; [ -e "$f" ] && { xz -dc $f > /tmp/b/$(basename $f .xz); chmod +x /tmp/b/$(basename $f .xz); }; done
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; } > "$OUT/gpu.txt" 2>&1
export MOE_TEST_SEED=${MOE_TEST_SEED:-12345}
for t in $TESTS; do timeout ${TEST_TIMEOUT:-300} /tmp/b/moe-tests $t > "$OUT/tests_$t.log" 2>&1 & done
for spec in $SAN; do
  IFS=: read -r tool t <<< "$spec"
  ( timeout ${SAN_TIMEOUT:-300} compute-sanitizer --tool $tool /tmp/b/moe-tests $t ) > "$OUT/san_${tool}_${t}.log" 2>&1 &
done
wait
[ -n "$TESTS" ] && { echo "== tests"; cat "$OUT"/tests_*.log | grep -E "^FAIL|FAILED|passed, |fail|cases passed" | head -40; }
[ -n "$SAN" ] && { echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, " "$OUT"/san_*.log | head -20; }
[ -n "$QARGS" ] || exit 0
# VARIANTS: name:binary (binary new = bench_decode, else bench_decode_NAME); the first
# runs bench_decode --quant QARGS (its rows: stream, kdec unless --no-kdec, i8, default)
for spec in ${VARIANTS:-new:new}; do
  IFS=: read -r v bin <<< "$spec"
  b=/tmp/b/bench_decode; [ "$bin" = new ] || b=/tmp/b/bench_decode_$bin
  timeout ${BENCH_TIMEOUT:-400} $b --quant $QARGS --json "$OUT/quant_$v.jsonl" > "$OUT/bench_$v.log" 2>&1
  echo "== bench $v (rc $?)"
  grep -E "^(GPU|[a-z0-9-]+ +[a-z0-9_]+ +(stream|kdec|i8|default) )" "$OUT/bench_$v.log" | sed -E 's/ +\(.*//' | head -${ROWS:-120}
done
