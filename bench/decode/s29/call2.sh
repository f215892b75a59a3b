#!/bin/bash
# Session 29, device call 2: call 1's build (new: MXFP4's biased unit, records {scale, -64 sum}) against
# the build before (base: 5188046's decode_stream.cu and decode.cu, compiled here, in call 1's
# library otherwise): the default layer and the streaming kernels forced, MXFP4 on every preset, T = 1-16,
# three rounds of 2 routings; Q8_0 on deepseek-v3 as a control (its code did not change); and both
# plans of deepseek-v3 MXFP4 at T = 4-16 (--describe), where call 1 ran 1.09-1.16x slower than s28 run 4.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s29/call2.sh
W=/tmp/w2; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
for v in base new; do
  B=/tmp/b/bench_decode; [ $v = base ] && B=/tmp/b/bench_decode_base
  timeout 60 $B --quant --no-kdec --no-i8 --describe --reps 2 --routings 1 --only deepseek-v3 --qtypes mxfp4 \
    --qtokens 4,8,16 > $W/desc_$v.log 2>&1
done
for r in 1 2 3; do
  for v in base new; do
    B=/tmp/b/bench_decode; [ $v = base ] && B=/tmp/b/bench_decode_base
    timeout 150 $B $A --only $P --qtypes mxfp4 --qtokens 1,2,4,8,16 --json $W/r${r}a_$v.jsonl > /dev/null 2>>$W/err.log
    timeout 60 $B $A --only deepseek-v3 --qtypes q8_0 --qtokens 1,4,16 --json $W/r${r}b_$v.jsonl > /dev/null 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_base.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call2.tar.xz -C $W .
grep default $W/ab_table.txt; tail -3 $W/err.log
for v in base new; do echo "== $v"; grep -E "cuda-quant: T = (4|8|16)," $W/desc_$v.log | cut -c1-700; done
