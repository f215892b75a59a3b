#!/bin/bash
# Session 31, device call 1 (H200): session 30's last two commits run at last (cuda_quant_i8_hq's describe
# check, qg_put_q32 shared by k_qg_quant and k_qg's epilogue: the int8 tests and sweeps in both MOE_QG_HQ
# forms, memcheck on cuda_quant_i8_hq); then where the middle T goes: describe and ncu (raw metrics: time,
# DRAM, issue, warps, stall reasons per issue) of every launch of one forward at T = 8-16, the streaming
# kernels (qwen3, gpt-oss-20b) and the int8 ones (mixtral).
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s31/call1.sh
RUN=${RUN:-1}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=310$RUN
for t in cuda_quant_i8_ cuda_quant_sweep_T_i8 cuda_quant_stream_hq cuda_quant_cases cuda_decode_; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
for t in cuda_quant_i8_ cuda_quant_sweep_T_i8; do
  ( MOE_QG_HQ=0 timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_qghq0_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
timeout 200 compute-sanitizer --tool memcheck --print-limit 5 /tmp/b/moe-tests cuda_quant_i8_hq > $W/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1) $(tail -n1 $W/memcheck.log)"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,sm__cycles_active.avg,gpc__cycles_elapsed.max,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__occupancy_limit_shared_mem
M=$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio
for c in ${CASES:-qwen3-30b-a3b:q4_K:16:s qwen3-30b-a3b:mxfp4:16:s qwen3-30b-a3b:q8_0:16:s qwen3-30b-a3b:q4_K:8:s gpt-oss-20b:mxfp4:16:s gpt-oss-20b:mxfp4:8:s mixtral-8x7b:q4_K:8:i mixtral-8x7b:mxfp4:16:i}; do
  IFS=: read -r preset qt T p <<< "$c"
  if [ $p = s ]; then K="regex:k_sv"; X="--no-kdec --no-i8"; N=2; else K="regex:k_qg|k_route"; X="--no-kdec"; N=4; fi
  timeout 200 ncu --clock-control none -k "$K" --metrics $M --launch-count $N --csv --page raw \
    $B --quant --only $preset --qtypes $qt --qtokens $T $X --reps 1 --routings 1 > $W/ncu_${preset}_${qt}_${T}.csv 2>&1
  echo "== $c $(wc -l < $W/ncu_${preset}_${qt}_${T}.csv)"
done
$B --quant --default --no-kdec --no-i8 --describe --reps 1 --routings 1 --only qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b \
  --qtypes q4_K,mxfp4,q8_0 --qtokens 8,16 > $W/describe.txt 2>&1
python3 $(dirname $0)/ncu_table.py $W/ncu_*.csv > $W/ncu_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/ncu_table.txt | cut -c1-250
