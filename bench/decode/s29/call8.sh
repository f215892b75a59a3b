#!/bin/bash
# Session 29, device call 8 (H100): the final build (call 7's carry) against MOE_SV_MXFP4_RB=4 in one
# binary, as run 6 on the H200: the default layer, MXFP4 on every preset at T = 1-16, two rounds of 2
# routings; Q8_0 as a control.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s29/call8.sh
W=/tmp/w8; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader > $W/gpu.txt
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
B=/tmp/b/bench_decode
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in 1 2; do
  for v in rb4 new; do
    E=; [ $v = rb4 ] && E="MOE_SV_MXFP4_RB=4"
    env $E timeout 150 $B $A --only $P --qtypes mxfp4 --qtokens 1,2,4,8,16 --json $W/r${r}a_$v.jsonl > /dev/null 2>>$W/err.log
    env $E timeout 60 $B $A --only deepseek-v3 --qtypes q8_0 --qtokens 1,16 --json $W/r${r}b_$v.jsonl > /dev/null 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_rb4.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call8.tar.xz -C $W .
cat $W/gpu.txt; grep default $W/ab_table.txt; tail -3 $W/err.log
