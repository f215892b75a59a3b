#!/bin/bash
# Session 31, device call 2 (H200): GGUF stages whose rows lie back to back as one bulk copy each
# (moe_sv_args.cst; MOE_SV_CST=0: a copy a row, as before). Tests in both forms (the quant and decode
# GPU tests; the int8 ones untouched), memcheck and racecheck on streaming tests; ncu of qwen3 Q4_K T = 16
# again; then the default layer against MOE_SV_CST=0 in one binary, Q8_0 / Q4_K / Q6_K / MXFP4 on the five
# presets, T = 1-16, ROUNDS rounds of 2 routings.
#   RUN=2 ROUNDS=2 OUT=out CARRY=build-devbin/carryN bash bench/decode/s31/call2.sh
RUN=${RUN:-2}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=310$RUN
for t in cuda_quant_stream_ cuda_quant_cases cuda_quant_sweep_T cuda_quant_graph_capture cuda_decode_ cuda_stream_ decode_; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
for t in cuda_quant_stream_ cuda_quant_cases_stream cuda_quant_sweep_T; do
  ( MOE_SV_CST=0 timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_cst0_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
s30_sanitize cuda_quant_stream_odd_units cuda_quant_cases_stream_down_expert
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,sm__cycles_active.avg,gpc__cycles_elapsed.max,launch__grid_size,launch__block_size,launch__registers_per_thread
M=$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio
for c in qwen3-30b-a3b:q4_K:16 qwen3-30b-a3b:mxfp4:16; do
  IFS=: read -r preset qt T <<< "$c"
  timeout 200 ncu --clock-control none -k "regex:k_sv" --metrics $M --launch-count 2 --csv --page raw \
    $B --quant --only $preset --qtypes $qt --qtokens $T --no-kdec --no-i8 --reps 1 --routings 1 > $W/ncu_${preset}_${qt}_${T}.csv 2>&1
done
python3 $(dirname $0)/ncu_table.py $W/ncu_*.csv > $W/ncu_table.txt 2>&1
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in $(seq 1 ${ROUNDS:-2}); do
  MOE_SV_CST=0 timeout 150 $B $A --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 1,2,4,8,16 \
    --json $W/r${r}_cst0.jsonl > /dev/null 2>>$W/err.log
  timeout 150 $B $A --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 1,2,4,8,16 --json $W/r${r}_new.jsonl \
    > /dev/null 2>>$W/err.log
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_cst0.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
$B --quant --default --no-kdec --no-i8 --describe --reps 1 --routings 1 --only qwen3-30b-a3b --qtypes q4_K --qtokens 16 > $W/describe.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cut -c1-250 $W/ncu_table.txt; grep default $W/ab_table.txt | awk -F'|' '{print $2,$3,$4,$6,$7,$8,$9,$10}'; tail -3 $W/err.log
