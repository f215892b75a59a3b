#!/bin/bash
# Session 31, device call 8 (H100): the session's build against its start there (call7.sh's A/B, ROUNDS rounds,
# without the tests), then deepseek-v3 at T = 9-16 with the split's old window (MOE_SV_DYN=3: the planned grid
# there) against the default (run 7 on the H200: Q6_K T = 12 1.067 with the split, MXFP4 0.931).
#   RUN=8 ROUNDS=1 OUT=out CARRY=build-devbin/carryN bash bench/decode/s31/call8.sh
RUN=${RUN:-8}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in $(seq 1 ${ROUNDS:-1}); do
  MOE_SV_CST=0 MOE_SV_DYNW=0 MOE_SV_DYN=3 MOE_SV_GWAVES=1 MOE_SV_DWAVES=1 timeout 250 $B $A --only $P \
    --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 1,2,4,8,12,16,24,32 --json $W/r${r}_start.jsonl > /dev/null 2>>$W/err.log
  timeout 250 $B $A --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 1,2,4,8,12,16,24,32 --json $W/r${r}_new.jsonl \
    > /dev/null 2>>$W/err.log
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_start.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
for r in 1 2; do
  MOE_SV_DYN=3 timeout 100 $B $A --only deepseek-v3,qwen3-30b-a3b --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 9,10,12,14,16 \
    --json $W/w${r}_dyn3.jsonl > /dev/null 2>>$W/err.log
  timeout 100 $B $A --only deepseek-v3,qwen3-30b-a3b --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 9,10,12,14,16 \
    --json $W/w${r}_new.jsonl > /dev/null 2>>$W/err.log
done
python3 $(dirname $0)/../s26/ab_table.py $W/w*_dyn3.jsonl $W/w*_new.jsonl > $W/window_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
grep default $W/ab_table.txt | awk -F'|' '{print $2,$3,$4,$6,$7,$8}'; echo "== window"; grep default $W/window_table.txt | awk -F'|' '{print $2,$3,$4,$6,$7,$8}'; tail -3 $W/err.log
