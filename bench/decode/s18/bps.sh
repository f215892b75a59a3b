#!/bin/bash
# Session 18: the int8 kernels at 2 and 3 blocks an SM (MOE_QG_BPS), this tree's
# bench_decode and the base's side by side.
#   OUT=out CARRY=dir QARGS="..." bash bench/decode/s18/bps.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY:-build-devbin/carry}/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
for bin in ${BINS:-bench_decode bench_decode_base}; do
  for bps in ${BPSS:-2 3}; do
    MOE_QG_BPS=$bps timeout ${BENCH_TIMEOUT:-150} /tmp/b/$bin --quant $QARGS --json "$OUT/quant_${bin}_bps$bps.jsonl" > "$OUT/bench_${bin}_bps$bps.log" 2>&1
    echo "== $bin bps $bps (rc $?)"
    grep -E "^[a-z0-9-]+ +[a-z0-9_]+ +i8 " "$OUT/bench_${bin}_bps$bps.log" | sed -E 's/ +\(.*//'
  done
done
