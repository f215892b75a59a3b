#!/bin/bash
# Session 27, device call 6: the GGUF hand-over from the streaming kernels to the int8 kernels where
# call 5 found the default slower (mixtral Q8_0 T = 8-12, deepseek-v3 Q4_K T = 6-16, mixtral Q4_K T = 6),
# on a finer T grid and on the neighbours the rule moves with (gpt-oss Q8_0, deepseek-v3 Q8_0),
# stream / i8 / default on the same routings, two rounds of 3 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call6.sh
W=/tmp/w6; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
Q="--quant --default --no-kdec --reps 12 --routings 3"
for r in 1 2; do
  timeout 100 $B $Q --only mixtral-8x7b --qtypes q8_0,q4_K --qtokens 4,5,6,7,8,10,12,14 --json $W/r${r}_a.jsonl > $W/out_r${r}_a.log 2>>$W/err.log
  timeout 150 $B $Q --only deepseek-v3 --qtypes q4_K,q8_0 --qtokens 4,5,6,8,12,16,24,32,48,64,96 --json $W/r${r}_b.jsonl > $W/out_r${r}_b.log 2>>$W/err.log
  timeout 100 $B $Q --only gpt-oss-20b,gpt-oss-120b --qtypes q8_0 --qtokens 8,12,16,20,24,32,48,64,96 --json $W/r${r}_c.jsonl > $W/out_r${r}_c.log 2>>$W/err.log
done
python3 $(dirname $0)/paths_table.py --variants stream,i8,default --ratio i8/stream $W/r*.jsonl > $W/paths.txt
tar cJf $OUT/call6.tar.xz -C $W .
cat $W/paths.txt; tail -3 $W/err.log
