#!/bin/bash
# Session 27, device call 3: where the layer a user gets stands against issue 6 (main's code): dense
# T = 1..64 and GGUF Q4_K / Q6_K / Q8_0 / MXFP4 T = 1..16 on every preset, one round, 2 routings a point.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call3.sh
W=/tmp/w3; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
timeout 250 $B --dense --default --no-kdec --only $P --reps 15 --routings 2 --json $W/dense.jsonl > $W/dense.log 2>>$W/err.log
timeout 300 $B --quant --default --no-kdec --no-i8 --only $P --reps 15 --routings 2 --json $W/quant.jsonl > $W/quant.log 2>>$W/err.log
python3 $(dirname $0)/state_table.py $W/dense.jsonl $W/quant.jsonl > $W/state.txt
tar cJf $OUT/call3.tar.xz -C $W .
cat $W/state.txt; tail -3 $W/err.log
