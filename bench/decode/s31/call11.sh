#!/bin/bash
# Session 31, device call 11 (H200): the stage copies with at least n copies a stage (measurement knob
# MOE_SV_CSTN=n), against the whole stage (the default) and a copy a row (MOE_SV_CST=0): runs 5, 7 and 10 had the
# whole stage 1.02-1.05 slower at qwen3 / gpt-oss T = 1-2 and, on some machines, deepseek-v3 Q8_0 T = 2-8 up to
# 1.06 (ncu, run 3: its gate/up launch, 4 rows of 7.6 KB a stage). Q8_0 / Q4_K / Q6_K / MXFP4, five presets, T = 1-8.
# The knob was a lab build (sv_cst_rows: "|| a->SRS / cr < minc" in the halving loop), not kept: neither n = 2 nor 4
# mended those points, and mixtral Q8_0 T = 2-4 lost its 0.94 (1.015-1.05).
#   RUN=11 OUT=out CARRY=build-devbin/carryN bash bench/decode/s31/call11.sh
RUN=${RUN:-11}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for v in MOE_SV_CST=0:cst0 -:all MOE_SV_CSTN=2:n2 MOE_SV_CSTN=4:n4; do
  IFS=: read -r e n <<< "$v"
  E=; [ "$e" != - ] && E="$e"
  env $E timeout 120 $B $A --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 1,2,4,8 --json $W/r1_$n.jsonl \
    > /dev/null 2>>$W/err.log
done
python3 $(dirname $0)/../s26/ab_table.py $W/r1_cst0.jsonl $W/r1_all.jsonl $W/r1_n2.jsonl $W/r1_n4.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
grep default $W/ab_table.txt | awk -F'|' '{print $2,$3,$4,$6,$10,$11,$12}'; tail -3 $W/err.log
