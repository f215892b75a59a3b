#!/bin/bash
# Session 36, device call 14: mixtral's GGUF GEMMs under both orders and raster bands (MOE_SM90_RASTER
# forces the bands of both GEMMs; the rule sizes them by GEMM 1's A rows, D wide, while GEMM 2's are I
# wide: mixtral's 14336). Run 13's ncu put the dynamic order's loss in GEMM 2 (DRAM 1.27 -> 1.70 GB).
# ROUNDS rounds of bench_decode --prefill (GGUF GEMMs forced) per variant in VARIANTS (name:VAR=V,...);
# the table against the first variant last (runN/ab_table.txt).
#   RUN=14 ROUNDS=3 OUT=out CARRY=build-gpu/carryN bash bench/decode/s36/call14.sh
RUN=${RUN:-14}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
VARIANTS=${VARIANTS:-"static:MOE_SM90_SCHED=0 dyn:MOE_SM90_SCHED=1 static2:MOE_SM90_SCHED=0,MOE_SM90_RASTER=2 dyn2:MOE_SM90_SCHED=1,MOE_SM90_RASTER=2"}
A="--prefill --prefill-nodeq --reps 10"
for r in $(seq 1 ${ROUNDS:-3}); do
  for vv in $VARIANTS; do
    IFS=: read v e <<< "$vv"
    env ${e//,/ } timeout 200 $B $A --only ${PRESETS:-mixtral-8x7b} --qtypes ${QTYPES:-q8_0,q4_K} \
      --prefill-tokens ${TOKENS:-2048,4096} --json $W/r${r}_$v.jsonl > $W/out_r${r}_$v.log 2>>$W/err.log
  done
done
first=${VARIANTS%%:*}
python3 $(dirname $0)/prefill_ab.py $W/r*_$first.jsonl $(for vv in $VARIANTS; do v=${vv%%:*}; [ $v != $first ] && echo $W/r*_$v.jsonl; done) > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt; cat $W/ab_table.txt; tail -3 $W/err.log
