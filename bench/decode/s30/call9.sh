#!/bin/bash
# Session 30, device call 9 (H200, the binary of calls 6-8): with T = 2 now two launches, the run-time
# split of phase 1 (MOE_SV_DYN=2) against the planned grid (the default below T = 3) at T = 2, and at
# T = 3-4 the default (split) against the planned grid (MOE_SV_DYN=0); the default layer, GGUF, three
# rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carry6 bash bench/decode/s30/call9.sh
W=/tmp/w9
. $(dirname $0)/lib.sh
s30_unpack
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2 --only $P --qtypes q8_0,q4_K,q6_K,mxfp4"
for r in 1 2 3; do
  timeout 100 $B $A --qtokens 2,3,4 --json $W/r${r}_def.jsonl > /dev/null 2>>$W/err.log
  MOE_SV_DYN=2 timeout 100 $B $A --qtokens 2 --json $W/r${r}_dyn.jsonl > /dev/null 2>>$W/err.log
  MOE_SV_DYN=0 timeout 100 $B $A --qtokens 3,4 --json $W/r${r}_dyn.jsonl > /dev/null 2>>$W/err.log
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_def.jsonl $W/r*_dyn.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call9.tar.xz -C $W .
grep default $W/ab_table.txt | awk -F'|' '{print $2,$3,$4,$6,$7,$8}'; tail -3 $W/err.log
