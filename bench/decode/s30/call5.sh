#!/bin/bash
# Session 30, device call 5 (the binary of call 4): GGUF's single cooperative launch (MOE_DECODE_FUSED=1,
# the default since session 2) against two launches (0) at T = 1-6 on the default layer and the
# streaming kernels forced, with this session's default (h quantised by phase 1 by its rule). Run 4 had
# two launches 3-13% faster at T = 2 on gpt-oss and qwen3 and even at T = 1.
#   OUT=out CARRY=build-devbin/carry4 bash bench/decode/s30/call5.sh
W=/tmp/w5
. $(dirname $0)/lib.sh
s30_unpack
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in 1 2; do
  for f in 1 0; do
    MOE_DECODE_FUSED=$f timeout 140 $B $A --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 1,2,3,4,6 \
      --json $W/r${r}_fused$f.jsonl > /dev/null 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_fused1.jsonl $W/r*_fused0.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call5.tar.xz -C $W .
grep default $W/ab_table.txt; tail -3 $W/err.log
