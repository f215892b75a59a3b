#!/bin/bash
# Session 31, device call 3 (H200): the stage copies in chunks of rows (moe_sv_args.cst rows a copy, at most
# MOE_SV_CST bytes; 0: a copy a row). Run 2 had one copy a stage 0.84-0.93 on qwen3 T = 4-8 but deepseek-v3
# Q8_0 T = 2-8 1.06-1.09 and gpt-oss-120b Q8_0 T = 8-16 1.03-1.05 slower. Tests at three caps, memcheck on
# the chunked form; ncu of deepseek-v3 Q8_0 T = 4 in both forms; then the caps against MOE_SV_CST=0 in one
# binary (Q8_0 / Q4_K / MXFP4, the five presets, T = 1-16, ROUNDS rounds of 2 routings).
#   RUN=3 ROUNDS=2 OUT=out CARRY=build-devbin/carryN bash bench/decode/s31/call3.sh
RUN=${RUN:-3}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=310$RUN
for c in 0 4096 1073741824; do
  for t in cuda_quant_stream_ cuda_quant_cases_stream cuda_quant_sweep_T; do
    ( MOE_SV_CST=$c timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_c${c}_$t.log 2>&1 &
  done
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
MOE_SV_CST=4096 timeout 200 compute-sanitizer --tool memcheck --print-limit 5 /tmp/b/moe-tests cuda_quant_stream_odd_units > $W/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1) $(tail -n1 $W/memcheck.log)"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,sm__cycles_active.avg,gpc__cycles_elapsed.max,launch__grid_size,launch__block_size,launch__registers_per_thread
M=$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio
for c in 0 1073741824; do
  MOE_SV_CST=$c timeout 200 ncu --clock-control none -k "regex:k_sv" --metrics $M --launch-count 2 --csv --page raw \
    $B --quant --only deepseek-v3 --qtypes q8_0 --qtokens 4 --no-kdec --no-i8 --reps 1 --routings 1 > $W/ncu_ds_q8_0_4_c$c.csv 2>&1
done
python3 $(dirname $0)/ncu_table.py $W/ncu_*.csv > $W/ncu_table.txt 2>&1
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in $(seq 1 ${ROUNDS:-2}); do
  for v in 0:cst0 4096:c4k 8192:c8k 16384:c16k -:all; do
    IFS=: read -r c n <<< "$v"
    E=; [ $c != - ] && E="MOE_SV_CST=$c"
    env $E timeout 150 $B $A --only $P --qtypes q8_0,q4_K,mxfp4 --qtokens 1,2,4,8,16 \
      --json $W/r${r}_$n.jsonl > /dev/null 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_cst0.jsonl $W/r*_c4k.jsonl $W/r*_c8k.jsonl $W/r*_c16k.jsonl $W/r*_all.jsonl > $W/ab_table.txt 2>&1
$B --quant --default --no-kdec --no-i8 --describe --reps 1 --routings 1 --only $P --qtypes q8_0,q4_K,mxfp4 --qtokens 4 > $W/describe.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cut -c1-250 $W/ncu_table.txt; grep default $W/ab_table.txt | awk -F'|' '{print $2,$3,$4,$6,$11,$12,$13,$14}'; tail -3 $W/err.log
