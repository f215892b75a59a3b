#!/bin/bash
# Session 27, device call 16: the formats without int8 kernels (Q2_K, Q3_K) between the streaming
# kernels and the mma kernels (k_dec): stream, kdec and the default on the
# same routings, qwen3 T = 8-64 and mixtral T = 4-32, two rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call16.sh
W=/tmp/w16; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
A="--quant --default --no-i8 --reps 10 --routings 2"
for r in 1 2; do
  timeout 150 $B $A --only qwen3-30b-a3b --qtypes q2_K,q3_K --qtokens 8,16,32,48,64 --json $W/r${r}_a.jsonl > $W/out_r${r}_a.log 2>>$W/err.log
  timeout 150 $B $A --only mixtral-8x7b --qtypes q2_K,q3_K --qtokens 4,8,16,24,32 --json $W/r${r}_b.jsonl > $W/out_r${r}_b.log 2>>$W/err.log
done
python3 $(dirname $0)/paths_table.py --variants stream,kdec,default --ratio kdec/stream $W/r*.jsonl > $W/paths.txt
tar cJf $OUT/call16.tar.xz -C $W .
cat $W/paths.txt; tail -3 $W/err.log
