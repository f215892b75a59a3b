#!/bin/bash
# Session 26, device call 6: the final tree (call 5's plus dense T = 1 on rows of I <= 1024 through the
# token-major down, decode.cu sv_down_expert): the decode GPU tests, then main against it, dense T = 1, 2
# on the five presets (three rounds) and GGUF T = 1 (one round, as a control of call 5).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s26/call6.sh
W=/tmp/w6; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=2606
for t in cuda_decode_ cuda_stream_ cuda_quant_cases_stream cuda_quant_graph_capture; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
CS=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1); [ -z "$CS" ] && CS=compute-sanitizer
for tool in memcheck racecheck; do
  timeout 100 $CS --tool $tool --print-limit 5 /tmp/b/bench_decode --dense --no-kdec --only qwen3-30b-a3b --dtokens 1 \
    --reps 1 > $W/san_$tool.log 2>&1
  echo "== $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $W/san_$tool.log | tr '\n' ' ')"
done
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
DA="--dense --default --no-kdec --only $P --dtokens 1,2 --reps 20 --routings 2"
QA="--quant --default --no-kdec --no-i8 --only $P --qtypes q4_K,q8_0,mxfp4,q6_K --qtokens 1 --reps 20 --routings 2"
for r in 1 2 3; do
  for v in main new; do
    b=/tmp/b/bench_decode; [ $v = main ] && b=/tmp/b/bench_decode_main
    timeout 120 $b $DA --json $W/r${r}d_$v.jsonl > $W/out_r${r}d_$v.log 2>>$W/ab_err.log
    [ $r = 1 ] && timeout 200 $b $QA --json $W/r${r}q_$v.jsonl > $W/out_r${r}q_$v.log 2>>$W/ab_err.log
  done
done
python3 $(dirname $0)/ab_table.py $W/r*_main.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call6.tar.xz -C $W .
cat $W/ab_table.txt; tail -3 $W/ab_err.log
