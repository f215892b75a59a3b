#!/bin/bash
# Session 28, device call 8: Q6_K on experts under 100 MB streamed to 2 pairs an expert (decode.h
# moe__dec_stream_max_t; deepseek-v3 to T = 64, mixtral's 144 MB stay at 1.5): the rules' host
# tests and the quant GPU tests, then stream / i8 / default around the new end, two rounds.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s28/call8.sh
W=/tmp/w8; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
export MOE_TEST_SEED=2808
for t in cuda_quant_cases cuda_quant_sweep_ cuda_quant_stream_ decode_; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
B=/tmp/b/bench_decode
A="--quant --default --no-kdec --reps 10 --routings 2"
for r in 1 2; do
  timeout 200 $B $A --only deepseek-v3 --qtypes q6_K --qtokens 48,56,64,72 --json $W/r${r}_ds6.jsonl > /dev/null 2>>$W/err.log
  timeout 100 $B $A --only mixtral-8x7b --qtypes q6_K --qtokens 6,7 --json $W/r${r}_mx.jsonl > /dev/null 2>>$W/err.log
done
python3 $(dirname $0)/paths.py $W/r*_*.jsonl > $W/paths.txt 2>&1
tar cJf $OUT/call8.tar.xz -C $W .
cat $W/paths.txt; tail -3 $W/err.log
