#!/bin/bash
# Session 27, device call 12: the GGUF streaming down phase at T = 8-32 where T K < E (token-major by
# default, decode.cu sv_down_expert): expert-major forced (MOE_SV_DOWNE=1) against the default, forced
# streaming, on deepseek-v3, qwen3 and gpt-oss-120b; three rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call12.sh
W=/tmp/w12; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
A="--quant --no-kdec --no-i8 --reps 12 --routings 2"
for r in 1 2 3; do
  for v in base emaj; do
    e=""; [ $v = emaj ] && e="MOE_SV_DOWNE=1"
    env $e timeout 100 $B $A --only deepseek-v3 --qtypes q8_0,q6_K,mxfp4 --qtokens 6,8,12,16,24 \
      --json $W/r${r}a_$v.jsonl > $W/out_r${r}a_$v.log 2>>$W/err.log
    env $e timeout 100 $B $A --only qwen3-30b-a3b,gpt-oss-120b --qtypes q8_0,mxfp4,q4_K --qtokens 6,8,12,16,24 \
      --json $W/r${r}b_$v.jsonl > $W/out_r${r}b_$v.log 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_base.jsonl $W/r*_emaj.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call12.tar.xz -C $W .
cat $W/ab_table.txt; tail -3 $W/err.log
