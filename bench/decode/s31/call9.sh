#!/bin/bash
# Session 31, device call 9 (H100, as call 8): the split's T = 9-16 window on gpt-oss-20b / 120b (K = 4) against
# the planned grid in two waves (MOE_SV_DYN=3), two rounds of 2 routings (call 8 had it even or slower on
# deepseek-v3 and qwen3).
#   RUN=9 OUT=out CARRY=build-devbin/carryN bash bench/decode/s31/call9.sh
RUN=${RUN:-9}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in 1 2; do
  MOE_SV_DYN=3 timeout 100 $B $A --only gpt-oss-20b,gpt-oss-120b --qtypes q8_0,mxfp4 --qtokens 9,10,12,14,16 \
    --json $W/w${r}_dyn3.jsonl > /dev/null 2>>$W/err.log
  timeout 100 $B $A --only gpt-oss-20b,gpt-oss-120b --qtypes q8_0,mxfp4 --qtokens 9,10,12,14,16 \
    --json $W/w${r}_new.jsonl > /dev/null 2>>$W/err.log
done
python3 $(dirname $0)/../s26/ab_table.py $W/w*_dyn3.jsonl $W/w*_new.jsonl > $W/window_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
grep default $W/window_table.txt | awk -F'|' '{print $2,$3,$4,$6,$7,$8}'; tail -3 $W/err.log
