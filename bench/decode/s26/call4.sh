#!/bin/bash
# Session 26, device call 4: the T = 1 routing change (nt: call 3's build) and the streaming planner's
# shared-memory margin (new: the static variables' 128 bytes and the runtime's reserve as the device
# reports them, and describe's "(but N fit)" where a plan's blocks an SM do not fit) against main at the
# session's start (bench_decode_main: decode.cu and decode_stream.cu of main rebuilt into a copy of the
# archive), T = 1, 2, 4 on the five presets, GGUF and dense, two rounds; the tests first.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s26/call4.sh
W=/tmp/w4; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=2604
for t in cuda_stream_plan_fits cuda_quant_cases_stream cuda_decode_cases_stream cuda_stream_runtime_split \
         cuda_quant_graph_capture cuda_decode_graph_capture cuda_quant_cases cuda_decode_cases; do
  ( timeout 240 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
QA="--quant --no-kdec --no-i8 --only $P --qtypes q4_K,q8_0,mxfp4,q6_K --qtokens 1,2,4 --reps 20 --routings 2"
DA="--dense --no-kdec --only $P --dtokens 1,2,4 --reps 20 --routings 2"
one() { # variant binary
  timeout 200 $2 $QA --json $W/r${r}q_$1.jsonl > $W/out_r${r}q_$1.log 2>>$W/ab_err.log
  timeout 120 $2 $DA --json $W/r${r}d_$1.jsonl > $W/out_r${r}d_$1.log 2>>$W/ab_err.log
}
for r in 1 2; do
  one main /tmp/b/bench_decode_main
  one nt /tmp/b/bench_decode_nt
  one new /tmp/b/bench_decode
  tar cJf $OUT/call4_partial.tar.xz -C $W .
done
echo "== plans that do not fit: $(grep -c '(but ' $W/out_*_new.log | tr '\n' ' ')"
python3 $(dirname $0)/ab_table.py $W/r*_main.jsonl $W/r*_nt.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call4.tar.xz -C $W .
cat $W/ab_table.txt; tail -3 $W/ab_err.log
