#!/bin/bash
# Session 31, device call 6 (H200): GGUF planned grids in more waves of smaller blocks (measurement knobs
# MOE_SV_DWAVES for the expert-major down launch, MOE_SV_GWAVES for the gate/up launch where it is not split at
# run time), so that the block scheduler balances groups of unequal pairs (run 1: qwen3 T = 16 SMs active
# 56-63%). The default layer against 2 and 3 waves, Q8_0 / Q4_K / Q6_K / MXFP4 on qwen3, deepseek-v3, gpt-oss-20b
# and gpt-oss-120b, T = 12-32, ROUNDS rounds of 2 routings.
#   RUN=6 ROUNDS=1 OUT=out CARRY=build-devbin/carryN bash bench/decode/s31/call6.sh
RUN=${RUN:-6}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in $(seq 1 ${ROUNDS:-1}); do
  for v in -:base MOE_SV_DWAVES=2:dw2 MOE_SV_DWAVES=3:dw3 MOE_SV_GWAVES=2:gw2 "MOE_SV_DWAVES=2 MOE_SV_GWAVES=2:dgw2"; do
    IFS=: read -r e n <<< "$v"
    E=; [ "$e" != - ] && E="$e"
    env $E timeout 200 $B $A --only qwen3-30b-a3b,deepseek-v3,gpt-oss-20b,gpt-oss-120b --qtypes q8_0,q4_K,q6_K,mxfp4 \
      --qtokens 12,16,24,32 --json $W/r${r}_$n.jsonl > /dev/null 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_base.jsonl $W/r*_dw2.jsonl $W/r*_dw3.jsonl $W/r*_gw2.jsonl $W/r*_dgw2.jsonl > $W/ab_table.txt 2>&1
MOE_SV_DWAVES=2 $B --quant --default --no-kdec --no-i8 --describe --reps 1 --routings 1 --only qwen3-30b-a3b --qtypes q4_K --qtokens 16 > $W/describe.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
grep default $W/ab_table.txt | awk -F'|' '{print $2,$3,$4,$6,$11,$12,$13,$14}'; tail -3 $W/err.log
