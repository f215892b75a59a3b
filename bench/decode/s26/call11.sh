#!/bin/bash
# Session 26, device call 11: the run-time split's range in 32-bit arithmetic (decode.h moe__sv_split_range; its
# 64-bit divisions took 0.6-0.9 us of every split block's start, run 10) against run 6's final build (base),
# T = 2-8 where the split runs (GGUF 3-8, dense 2-8), four routings a point, two rounds; the tests first.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s26/call11.sh
W=/tmp/w11; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=2611
for t in cuda_stream_ cuda_quant_cases_stream cuda_decode_cases_stream cuda_quant_sweep_T cuda_decode_sweep_T \
         cuda_quant_graph_capture cuda_decode_graph_capture; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
CS=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1); [ -z "$CS" ] && CS=compute-sanitizer
for tool in memcheck racecheck; do
  timeout 120 $CS --tool $tool --print-limit 5 /tmp/b/bench_decode --quant --no-kdec --no-i8 --only qwen3-30b-a3b \
    --qtypes q4_K --qtokens 4 --reps 1 > $W/san_$tool.log 2>&1
  echo "== $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $W/san_$tool.log | tr '\n' ' ')"
done
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3
QA="--quant --default --no-kdec --no-i8 --only $P --qtypes q4_K,q8_0,mxfp4 --qtokens 3,4,8 --reps 15 --routings 4"
DA="--dense --no-kdec --only qwen3-30b-a3b,gpt-oss-20b --dtokens 2,3,4,8 --reps 15 --routings 4"
for r in 1 2; do
  for v in base new; do
    b=/tmp/b/bench_decode; [ $v = base ] && b=/tmp/b/bench_decode_base
    timeout 200 $b $QA --json $W/r${r}q_$v.jsonl > /dev/null 2>>$W/ab_err.log
    timeout 120 $b $DA --json $W/r${r}d_$v.jsonl > /dev/null 2>>$W/ab_err.log
  done
  tar cJf $OUT/call11_partial.tar.xz -C $W .
done
python3 $(dirname $0)/ab_table.py $W/r*_base.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call11.tar.xz -C $W .
cat $W/ab_table.txt; tail -3 $W/ab_err.log
