#!/bin/bash
# Session 26, device call 5: the final tree. The T = 1 routing now compiled into the one-pair-group
# instances only (the SASS of every other k_sv / k_svf instance is byte-identical to main's: call 4's
# nt build, whose runtime test was in every instance, ran T = 2 3-5% slower on gpt-oss and qwen3);
# the streaming launches through one instance lookup (sv_pick) shared with the occupancy query.
# GPU tests of the decode paths, then main against the final build at T = 1, 2, 4, three rounds.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s26/call5.sh
W=/tmp/w5; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=2605
for t in cuda_stream_ cuda_quant_cases cuda_decode_cases cuda_quant_sweep_T cuda_decode_sweep_T cuda_quant_graph_capture \
         cuda_decode_graph_capture cuda_quant_stream cuda_quant_i8 cuda_decode_; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
CS=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1); [ -z "$CS" ] && CS=compute-sanitizer
for tool in memcheck racecheck; do
  timeout 120 $CS --tool $tool --print-limit 5 /tmp/b/bench_decode --quant --no-kdec --no-i8 --only qwen3-30b-a3b \
    --qtypes q4_K,mxfp4 --qtokens 1 --reps 1 > $W/san_$tool.log 2>&1
  timeout 100 $CS --tool $tool --print-limit 5 /tmp/b/bench_decode --dense --no-kdec --only gpt-oss-20b --dtokens 1 \
    --reps 1 >> $W/san_$tool.log 2>&1
  echo "== $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $W/san_$tool.log | tr '\n' ' ')"
done
tar cJf $OUT/call5_partial.tar.xz -C $W .
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
QA="--quant --no-kdec --no-i8 --only $P --qtypes q4_K,q8_0,mxfp4,q6_K --qtokens 1,2,4 --reps 20 --routings 2"
DA="--dense --no-kdec --only $P --dtokens 1,2,4 --reps 20 --routings 2"
QD="--quant --default --no-kdec --no-i8 --only $P --qtypes q4_K,q8_0,mxfp4,q6_K --qtokens 1 --reps 20 --routings 2"
one() { # variant binary
  timeout 200 $2 $QA --json $W/r${r}q_$1.jsonl > $W/out_r${r}q_$1.log 2>>$W/ab_err.log
  timeout 120 $2 $DA --json $W/r${r}d_$1.jsonl > $W/out_r${r}d_$1.log 2>>$W/ab_err.log
}
for r in 1 2 3; do
  one main /tmp/b/bench_decode_main
  one new /tmp/b/bench_decode
done
timeout 200 /tmp/b/bench_decode $QD --json $W/default_new.jsonl > $W/default_new.log 2>>$W/ab_err.log
python3 $(dirname $0)/ab_table.py $W/r*_main.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call5.tar.xz -C $W .
cat $W/ab_table.txt; tail -3 $W/ab_err.log
