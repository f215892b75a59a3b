#!/bin/bash
# Session 28, device call 3: the K-quants' hand-over from the streaming kernels to the int8 ones,
# re-measured after run 2's faster streaming loop: the streaming kernels forced ("stream"), the
# int8 kernels forced ("i8") and the layer a user gets ("default"), this build only, around the
# rules' crossings (decode.h moe__dec_stream_pairs_qg, moe__dec_stream_max_t); two rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s28/call3.sh
W=/tmp/w3; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
A="--quant --default --no-kdec --reps 10 --routings 2"
for r in 1 2; do
  timeout 150 $B $A --only deepseek-v3 --qtypes q4_K --qtokens 6,8,10,12,16 --json $W/r${r}_dsq4.jsonl > /dev/null 2>>$W/err.log
  timeout 200 $B $A --only deepseek-v3 --qtypes q5_K,q6_K --qtokens 16,24,32,40,48 --json $W/r${r}_dsq56.jsonl > /dev/null 2>>$W/err.log
  timeout 100 $B $A --only mixtral-8x7b --qtypes q4_K,q5_K,q6_K --qtokens 4,5,6,7,8 --json $W/r${r}_mx.jsonl > /dev/null 2>>$W/err.log
  timeout 100 $B $A --only qwen3-30b-a3b --qtypes q4_K,q6_K --qtokens 24,32,40,48 --json $W/r${r}_qw.jsonl > /dev/null 2>>$W/err.log
done
python3 $(dirname $0)/paths.py $W/r*_*.jsonl > $W/paths.txt 2>&1
tar cJf $OUT/call3.tar.xz -C $W .
cat $W/paths.txt; tail -3 $W/err.log
