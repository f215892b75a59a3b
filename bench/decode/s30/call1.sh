#!/bin/bash
# Session 30, device call 1 (lab, timing only): how much of the down phase is h's quantisation?
# MOE_SV_LAB_HQ=1 makes the streaming down phase copy h's 32-element blocks (32 int8 + a 16-byte
# record, as if phase 1 had quantised them) instead of reading f32 h and quantising it in every
# down block. Its results are wrong (it reads the f32 buffer as bytes): only the times count.
# The default layer and the streaming kernels forced, GGUF Q8_0 / Q4_K / MXFP4, T = 1-8.
#   OUT=out CARRY=build-devbin/carry1 bash bench/decode/s30/call1.sh
W=/tmp/w1
. $(dirname $0)/lib.sh
s30_unpack
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in 1 2; do
  for v in base lab; do
    E=; [ $v = lab ] && E="MOE_SV_LAB_HQ=1"
    env $E timeout 140 $B $A --only $P --qtypes q8_0,q4_K,mxfp4 --qtokens 1,2,4,8 --json $W/r${r}_$v.jsonl > /dev/null 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_base.jsonl $W/r*_lab.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call1.tar.xz -C $W .
cat $W/ab_table.txt | head -80; tail -3 $W/err.log
