#!/bin/bash
# Session 28, device call 4: the K-quants' new hand-overs (decode.h moe__dec_stream_max_t: on large
# experts Q4_K to 1.5 pairs and T = 8, Q5_K to 1.25 pairs, Q6_K to 1.5). Tests (the rules' host
# tests, the quant GPU tests on every path, graph capture); the paths around the new ends (stream,
# i8, default: two rounds of 2 routings); then the state (the default layer, GGUF T = 1..16 on
# every preset, one round, as s27 call 9).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s28/call4.sh
W=/tmp/w4; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
export MOE_TEST_SEED=2804
for t in cuda_quant_cases cuda_quant_sweep_ cuda_quant_stream_ cuda_quant_i8_ cuda_quant_graph_capture decode_; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
B=/tmp/b/bench_decode
A="--quant --default --no-kdec --reps 10 --routings 2"
for r in 1 2; do
  timeout 200 $B $A --only deepseek-v3 --qtypes q6_K --qtokens 40,48,56,64,80 --json $W/r${r}_ds6.jsonl > /dev/null 2>>$W/err.log
  timeout 200 $B $A --only deepseek-v3 --qtypes q4_K,q5_K --qtokens 6,8,10,32,40,48 --json $W/r${r}_ds45.jsonl > /dev/null 2>>$W/err.log
  timeout 100 $B $A --only mixtral-8x7b --qtypes q4_K,q5_K,q6_K --qtokens 4,5,6,7 --json $W/r${r}_mx.jsonl > /dev/null 2>>$W/err.log
done
python3 $(dirname $0)/paths.py $W/r*_*.jsonl > $W/paths.txt 2>&1
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
timeout 300 $B --quant --default --no-kdec --no-i8 --only $P --qtokens 1,2,4,6,8,12,16 --reps 15 --routings 2 \
  --json $W/quant.jsonl > $W/quant.log 2>>$W/err.log
python3 $(dirname $0)/../s27/state_table.py $W/quant.jsonl > $W/state.txt
tar cJf $OUT/call4.tar.xz -C $W .
cat $W/paths.txt; cat $W/state.txt; tail -3 $W/err.log
