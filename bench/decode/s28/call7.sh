#!/bin/bash
# Session 28, device call 7: why qwen3 Q3_K ran slower in run 5 (T = 1 / 4 / 16 1.057 / 1.041 /
# 1.047, T = 2 0.910) while deepseek-v3 and mixtral gained: three builds side by side, the one before
# Q3_K's change (base: not carried, the tree's size limit; run 5 has it), run 5's (new) and run 5's with Q3_K's offsets made every unit instead of once
# a row (noat: -DMOE_SV_Q3K_AT=0 on decode_stream.cu), three rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s28/call7.sh
W=/tmp/w7; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in 1 2 3; do
  for v in new noat; do
    B=/tmp/b/bench_decode; [ $v = base ] && B=/tmp/b/bench_decode_base; [ $v = noat ] && B=/tmp/b/bench_decode_noat
    timeout 60 $B $A --only qwen3-30b-a3b --qtypes q3_K --qtokens 1,2,4,8,16 --json $W/r${r}a_$v.jsonl > /dev/null 2>>$W/err.log
    timeout 60 $B $A --only deepseek-v3,mixtral-8x7b --qtypes q3_K --qtokens 1,2,4 --json $W/r${r}b_$v.jsonl > /dev/null 2>>$W/err.log
  done
done
timeout 60 /tmp/b/bench_decode --quant --no-kdec --no-i8 --describe --reps 3 --only qwen3-30b-a3b --qtypes q3_K --qtokens 1,2,4 > $W/desc.log 2>&1
python3 $(dirname $0)/../s26/ab_table.py $W/r*_new.jsonl $W/r*_noat.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call7.tar.xz -C $W .
grep default $W/ab_table.txt; grep -E "cuda-quant: T = [124]," $W/desc.log | cut -c1-400; tail -3 $W/err.log
