#!/bin/bash
# Session 25, device call 7: the layer a user gets at run 6's Q2_K / Q3_K hand-over values (decode.cu
# qp_pairs_fused: Q2_K 5 / 4 / 3, Q3_K 8 / 6 pairs an expert), on both sides, mixtral and deepseek-v3.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s25/call7.sh
W=/tmp/w7; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
B=/tmp/b/bench_decode
( timeout 40 $B --quant --default --no-kdec --no-i8 --only mixtral-8x7b --qtypes q3_K --qtokens 32,36 --reps 5 ; \
  timeout 70 $B --quant --default --no-kdec --no-i8 --only deepseek-v3 --qtypes q2_K,q3_K --qtokens 128,160,192,224 \
    --reps 3 ) > $W/default.log 2>&1
echo "== default (rc $?)"
grep -hE " default " $W/default.log | sed -E 's/  +/ /g'
tar cJf $OUT/call7.tar.xz -C $W .
