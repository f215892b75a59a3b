#!/bin/bash
# Session 32, device call 1: session 31's unrun commits (the stream_env tests, MOE_SV_DYNORD unweighted),
# then the dense bf16 layers where they miss 90% of read (qwen3, gpt-oss at T = 1-16): every path with
# its plan, and ncu raw metrics (time, DRAM, issue, warps, stalls) of each launch of one forward.
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call1.sh
RUN=${RUN:-1}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=320$RUN
for t in cuda_quant_stream_ cuda_stream_ cuda_decode_ cuda_quant_cases decode_; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
for t in cuda_quant_cases cuda_quant_stream_split; do
  ( MOE_SV_DYNORD=1 timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_dynord_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
MOE_SV_DYNORD=1 $B --quant --default --no-kdec --no-i8 --reps 10 --routings 2 --only qwen3-30b-a3b,mixtral-8x7b \
  --qtypes q4_K,q8_0 --qtokens 4,8 > $W/dynord.txt 2>&1
$B --dense --default --describe --reps 10 --only qwen3-30b-a3b,gpt-oss-20b,gpt-oss-120b \
  --dtokens 1,2,3,4,6,8,12,16,32 --json $W/dense.jsonl > $W/dense.txt 2>&1
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,sm__cycles_active.avg,gpc__cycles_elapsed.max,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__occupancy_limit_shared_mem
M=$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio
for c in ${CASES:-qwen3-30b-a3b:1:s qwen3-30b-a3b:4:k qwen3-30b-a3b:8:k qwen3-30b-a3b:4:s qwen3-30b-a3b:8:s gpt-oss-20b:2:k gpt-oss-20b:4:k}; do
  IFS=: read -r preset T p <<< "$c"
  if [ $p = s ]; then K="regex:k_sv|k_route"; else K="regex:k_dec|k_route"; fi
  timeout 200 ncu --clock-control none -k "$K" --metrics $M --launch-count 3 --csv --page raw \
    $B --dense --only $preset --dtokens $T --reps 1 > $W/ncu_${preset}_${p}_${T}.csv 2>&1
  echo "== $c $(wc -l < $W/ncu_${preset}_${p}_${T}.csv)"
done
python3 $(dirname $0)/../s31/ncu_table.py $W/ncu_*.csv > $W/ncu_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
grep -E "^(qwen3|gpt-oss)" $W/dynord.txt | cut -c1-110
grep -E "^(qwen3|gpt-oss)" $W/dense.txt | cut -c1-110
cat $W/ncu_table.txt | cut -c1-250
