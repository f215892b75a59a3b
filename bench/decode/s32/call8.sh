#!/bin/bash
# Session 32, device call 8 (H200): call 7's larger caps split by phase. g32: the dense gate/up jobs' partial
# sums up to 32 KB (lab knob MOE_SV_PSUM1; 64 -> 128 rows a job at passes of 4 tokens); d2: the one-wave down
# plan where the ring keeps 2 stages (MOE_SV_D1W_NS=2; gpt-oss's column-chunk stages of 24.7 KB fit 2 at the
# larger blocks); gd: both. Forced streaming and the layer a user gets, three rounds; plans of gd.
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call8.sh
RUN=${RUN:-8}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
A="--dense --default --no-kdec --reps 10 --only qwen3-30b-a3b,gpt-oss-20b,gpt-oss-120b --dtokens 2,3,4,5,6,8"
for r in 1 2 3; do
  for v in base g32 d2 gd; do
    e=""; [ $v = g32 ] && e="MOE_SV_PSUM1=32768"; [ $v = d2 ] && e="MOE_SV_D1W_NS=2"
    [ $v = gd ] && e="MOE_SV_PSUM1=32768 MOE_SV_D1W_NS=2"
    env $e timeout 200 $B $A --json $W/r${r}_$v.jsonl > $W/out_r${r}_$v.log 2>>$W/err.log
  done
done
MOE_SV_PSUM1=32768 MOE_SV_D1W_NS=2 timeout 100 $B --dense --no-kdec --describe --reps 2 \
  --only qwen3-30b-a3b,gpt-oss-20b,gpt-oss-120b --dtokens 3,4,5,6,8 > $W/desc_gd.log 2>&1
python3 $(dirname $0)/../s26/ab_table.py $W/r*_base.jsonl $W/r*_g32.jsonl $W/r*_d2.jsonl $W/r*_gd.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt
grep -oE "^[a-z0-9-]+ +bf16|T = [0-9]+|gate/up plan: [^;]*|down plan: [^;]*" $W/desc_gd.log | paste - - - - | cut -c1-330
cat $W/ab_table.txt; tail -3 $W/err.log
