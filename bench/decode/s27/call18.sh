#!/bin/bash
# Session 27, device call 18: the streaming planner's cap on a block's partial sums (decode.cu sv_plan rcap,
# 16 KB: R <= 16384 / (4 parts), parts counting NT = 8 tokens) sends groups of 8 past one wave of blocks
# (run 17's plans: qwen3 Q4_K T = 40 256 rows a block against 352 at T = 32). Lab knob MOE_SV_PSUM =
# 32768 / 65536 against the default, forced streaming, where groups of 8 run; controls at T = 1 and 8.
# Three rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call18.sh
W=/tmp/w18; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
A="--quant --no-kdec --no-i8 --reps 10 --routings 2"
for r in 1 2 3; do
  for v in p16 p32 p64; do
    e=""; [ $v = p32 ] && e="MOE_SV_PSUM=32768"; [ $v = p64 ] && e="MOE_SV_PSUM=65536"
    env $e timeout 100 $B $A --only qwen3-30b-a3b --qtypes q4_K,q8_0,q3_K,q2_K --qtokens 1,8,40,48,64 \
      --json $W/r${r}a_$v.jsonl > $W/out_r${r}a_$v.log 2>>$W/err.log
    env $e timeout 100 $B $A --only gpt-oss-20b --qtypes q8_0,mxfp4 --qtokens 1,20,24,32 \
      --json $W/r${r}b_$v.jsonl > $W/out_r${r}b_$v.log 2>>$W/err.log
    env $e timeout 100 $B $A --only mixtral-8x7b --qtypes q8_0,q3_K,q2_K --qtokens 1,10,16,32 \
      --json $W/r${r}c_$v.jsonl > $W/out_r${r}c_$v.log 2>>$W/err.log
  done
done
timeout 60 env MOE_SV_PSUM=32768 $B --quant --no-kdec --no-i8 --describe --reps 3 --only qwen3-30b-a3b --qtypes q4_K \
  --qtokens 40 > $W/desc32.log 2>&1
python3 $(dirname $0)/../s26/ab_table.py $W/r*_p16.jsonl $W/r*_p32.jsonl $W/r*_p64.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call18.tar.xz -C $W .
grep -oE "gate/up plan: [^;]*|down plan: [^;]*" $W/desc32.log; cat $W/ab_table.txt; tail -3 $W/err.log
