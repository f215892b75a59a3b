#!/bin/bash
# Session 27, device call 14: the streaming -> int8 hand-over at larger T on the layers call 5 did not
# reach: qwen3 Q4_K / Q6_K / Q8_0 / MXFP4 T = 24-64, gpt-oss-20b MXFP4 T = 12-24, gpt-oss-120b MXFP4
# T = 32-96, deepseek-v3 MXFP4 T = 32-96 and Q6_K T = 24-48 (stream, i8, default on the same routings),
# two rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call14.sh
W=/tmp/w14; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
A="--quant --default --no-kdec --reps 10 --routings 2"
for r in 1 2; do
  timeout 120 $B $A --only qwen3-30b-a3b --qtypes q4_K,q6_K,q8_0,mxfp4 --qtokens 24,32,40,48,56,64 --json $W/r${r}_a.jsonl > $W/out_r${r}_a.log 2>>$W/err.log
  timeout 100 $B $A --only gpt-oss-20b --qtypes mxfp4 --qtokens 12,16,20,24 --json $W/r${r}_b.jsonl > $W/out_r${r}_b.log 2>>$W/err.log
  timeout 100 $B $A --only gpt-oss-120b --qtypes mxfp4 --qtokens 32,48,64,80,96 --json $W/r${r}_c.jsonl > $W/out_r${r}_c.log 2>>$W/err.log
  timeout 150 $B $A --only deepseek-v3 --qtypes mxfp4 --qtokens 32,48,64,80,96 --json $W/r${r}_d.jsonl > $W/out_r${r}_d.log 2>>$W/err.log
  timeout 150 $B $A --only deepseek-v3 --qtypes q6_K --qtokens 24,32,40,48 --json $W/r${r}_e.jsonl > $W/out_r${r}_e.log 2>>$W/err.log
done
python3 $(dirname $0)/paths_table.py --variants stream,i8,default --ratio i8/stream $W/r*.jsonl > $W/paths.txt
tar cJf $OUT/call14.tar.xz -C $W .
cat $W/paths.txt; tail -3 $W/err.log
