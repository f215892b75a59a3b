#!/bin/bash
# Session 26, device call 2: T = 1 by work stealing (MOE_SV_STEAL units a block). Tests (the new
# cuda_stream_steal and the streaming kernels' case tables, whose DOWN_E combine now takes its row
# tile from the job), compute-sanitizer on the stealing launches, timelines with stealing
# (bench_decode_tl: the tree + bench/decode/s26/stream_timeline.patch, stamps in the stealing
# branch too), then the A/B: planned grids (s0) against 4 / 8 / 16 units a block, two rounds.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s26/call2.sh
W=/tmp/w2; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=2602
B=/tmp/b/bench_decode
for t in cuda_stream_steal cuda_quant_cases_stream cuda_decode_cases_stream cuda_stream_runtime_split \
         cuda_quant_graph_capture cuda_decode_graph_capture; do
  ( timeout 240 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
CS=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1); [ -z "$CS" ] && CS=compute-sanitizer
for tool in memcheck racecheck; do
  MOE_SV_STEAL=8 timeout 150 $CS --tool $tool --print-limit 5 $B --quant --no-kdec --no-i8 --only qwen3-30b-a3b \
    --qtypes q4_K,q8_0 --qtokens 1 --reps 1 > $W/san_$tool.log 2>&1
  MOE_SV_STEAL=8 timeout 100 $CS --tool $tool --print-limit 5 $B --dense --no-kdec --only gpt-oss-20b --dtokens 1 \
    --reps 1 >> $W/san_$tool.log 2>&1
  echo "== $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $W/san_$tool.log | tr '\n' ' ')"
done
tar cJf $OUT/call2_partial.tar.xz -C $W .
export MOE_SV_TIMELINE=1
for q in q4_K q8_0; do for p in mixtral-8x7b deepseek-v3; do
  echo "== $p $q T=1 steal 8" >> $W/tl.log
  MOE_SV_STEAL=8 timeout 60 /tmp/b/bench_decode_tl --quant --no-kdec --no-i8 --only $p --qtypes $q --qtokens 1 --reps 5 >> $W/tl.log 2>&1
done; done
unset MOE_SV_TIMELINE
python3 $(dirname $0)/tl_table.py $W/tl.log > $W/tl_table.txt 2>&1
QA="--quant --no-kdec --no-i8 --qtypes q4_K,q8_0,mxfp4,q6_K --qtokens 1 --reps 20 --routings 2"
DA="--dense --no-kdec --dtokens 1 --reps 20 --routings 2"
for r in 1 2; do
  for v in 0 8 4 16; do
    MOE_SV_STEAL=$v timeout 150 $B $QA --json $W/r${r}q_s$v.jsonl > /dev/null 2>>$W/ab_err.log
    MOE_SV_STEAL=$v timeout 100 $B $DA --json $W/r${r}d_s$v.jsonl > /dev/null 2>>$W/ab_err.log
  done
done
python3 $(dirname $0)/ab_table.py $W/r*_s0.jsonl $W/r*_s8.jsonl $W/r*_s4.jsonl $W/r*_s16.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call2.tar.xz -C $W .
cat $W/tl_table.txt; cat $W/ab_table.txt; tail -3 $W/ab_err.log
