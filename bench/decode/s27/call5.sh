#!/bin/bash
# Session 27, device call 5: GGUF decode, every path on the same routings (the streaming kernels, the mma
# kernels k_dec, the int8 tensor-core kernels, the default layer), Q4_K / Q6_K / Q8_0 / MXFP4 at
# T = 1..16 on every preset, two rounds of 2 routings: do the hand-overs of sessions 12-19 still pick
# the faster path?
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call5.sh
W=/tmp/w5; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
for r in 1 2; do
  timeout 280 $B --quant --default --only $P --qtypes q4_K,q6_K,q8_0,mxfp4 --qtokens 1,2,3,4,6,8,12,16 --reps 12 \
    --routings 2 --json $W/r$r.jsonl > $W/out_r$r.log 2>>$W/err.log
done
python3 $(dirname $0)/paths_table.py --variants stream,kdec,i8,default --best $W/r*.jsonl > $W/paths.txt
tar cJf $OUT/call5.tar.xz -C $W .
grep " <" $W/paths.txt; echo; tail -3 $W/err.log
