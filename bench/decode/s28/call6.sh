#!/bin/bash
# Session 28, device call 6 (on an H100): the K-quants' new hand-overs (run 4's points) on the other
# GPU: stream, i8 and the default on the same routings, two rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s28/call6.sh
W=/tmp/w6; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
A="--quant --default --no-kdec --reps 10 --routings 2"
nvidia-smi --query-gpu=name --format=csv,noheader > $W/gpu.txt
for r in 1 2; do
  timeout 200 $B $A --only deepseek-v3 --qtypes q6_K --qtokens 32,40,48,56 --json $W/r${r}_ds6.jsonl > /dev/null 2>>$W/err.log
  timeout 200 $B $A --only deepseek-v3 --qtypes q4_K,q5_K --qtokens 6,8,10,32,40 --json $W/r${r}_ds45.jsonl > /dev/null 2>>$W/err.log
  timeout 100 $B $A --only mixtral-8x7b --qtypes q4_K,q5_K,q6_K --qtokens 4,5,6,7 --json $W/r${r}_mx.jsonl > /dev/null 2>>$W/err.log
done
python3 $(dirname $0)/paths.py $W/r*_*.jsonl > $W/paths.txt 2>&1
tar cJf $OUT/call6.tar.xz -C $W .
cat $W/gpu.txt $W/paths.txt; tail -3 $W/err.log
