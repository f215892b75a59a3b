#!/bin/bash
# Session 28, device call 5: Q3_K's unit by the funnel shifts (qdot.cuh moe__q3k_at; the offsets made
# once where a lane's blocks share their alignment). Tests: the decoders on the device, the quant
# GPU tests, memcheck on the streaming tests; then this build against call 4's (bench_decode_base),
# the default layer and the streaming kernels forced, Q3_K on three presets (Q2_K and Q6_K as
# controls: their code did not change), three rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s28/call5.sh
W=/tmp/w5; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
export MOE_TEST_SEED=2805
/tmp/b/moe-qdot-test > $W/qdot.log 2>&1; echo "qdot: $(tail -n1 $W/qdot.log)"
for t in cuda_quant_cases cuda_quant_sweep_ cuda_quant_stream_ cuda_decode_ decode_; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
timeout 240 compute-sanitizer --tool memcheck --print-limit 5 /tmp/b/moe-tests cuda_quant_stream_ > $W/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1) $(tail -n1 $W/memcheck.log)"
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in 1 2 3; do
  for v in base new; do
    B=/tmp/b/bench_decode; [ $v = base ] && B=/tmp/b/bench_decode_base
    timeout 120 $B $A --only deepseek-v3 --qtypes q3_K,q2_K,q6_K --qtokens 1,2,4,8,16 \
      --json $W/r${r}a_$v.jsonl > /dev/null 2>>$W/err.log
    timeout 60 $B $A --only mixtral-8x7b,qwen3-30b-a3b --qtypes q3_K --qtokens 1,2,4,16 \
      --json $W/r${r}b_$v.jsonl > /dev/null 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_base.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call5.tar.xz -C $W .
grep default $W/ab_table.txt; tail -3 $W/err.log
