#!/bin/bash
# Session 27, device call 2: how much of a T = 1-2 forward is code and small data coming from HBM:
# bench_decode --warm-code (a forward routed to other experts between the L2 flush and the timed one)
# against the plain flush, dense and GGUF, every preset, two rounds.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call2.sh
W=/tmp/w2; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
for r in 1 2; do
  for v in cold warm; do
    o=""; [ $v = warm ] && o=--warm-code
    timeout 100 $B $o --dense --default --no-kdec --only $P --dtokens 1,2 --reps 20 --routings 2 \
      --json $W/r${r}d_$v.jsonl > $W/out_r${r}d_$v.log 2>>$W/err.log
    timeout 150 $B $o --quant --default --no-kdec --no-i8 --only $P --qtypes q4_K,q8_0,mxfp4 --qtokens 1 \
      --reps 20 --routings 2 --json $W/r${r}q_$v.jsonl > $W/out_r${r}q_$v.log 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_cold.jsonl $W/r*_warm.jsonl > $W/warm_table.txt 2>&1
tar cJf $OUT/call2.tar.xz -C $W .
cat $W/warm_table.txt; tail -3 $W/err.log
