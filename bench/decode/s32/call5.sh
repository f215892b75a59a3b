#!/bin/bash
# Session 32, device call 5 (H200): the dense paths side by side where the one-wave down plan changed the
# streaming kernels (qwen3 T = 3-8) and at the rule's edge for long rows (gpt-oss T = 2-4): streaming
# (MOE_SV_D1W=0: the 16 KB cap, and the default), the mma kernels (kdec) and the layer a user gets, three
# rounds; the hand-over constant (decode.cu sv_init: dense streams to T = 2, T = 3 where I >= 2048) is
# re-decided from this table and call 4's (H100).
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call5.sh
RUN=${RUN:-5}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
A="--dense --default --reps 10 --only qwen3-30b-a3b,gpt-oss-20b,gpt-oss-120b --dtokens 1,2,3,4,5,6,8"
for r in 1 2 3; do
  for v in cap 1w; do
    e=""; [ $v = cap ] && e="MOE_SV_D1W=0"
    env $e timeout 250 $B $A --json $W/r${r}_$v.jsonl > $W/out_r${r}_$v.log 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_cap.jsonl $W/r*_1w.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt; cat $W/ab_table.txt; tail -3 $W/err.log
