#!/bin/bash
# Session 32, device call 13 (H200): dense rows of at most 2 KB two a bulk copy (qwen3's down rows, 1.5 KB;
# MOE_SV_DCST=0: a copy a row, as before). Tests (the new cuda_decode_stream_pair_copies, the dense tables),
# memcheck and racecheck on the new test; ncu of qwen3 T = 4's down launch in both forms; forced streaming
# and the layer a user gets, three rounds.
# Needs bench/decode/s32/pair_copies.patch applied to the build (not merged).
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call13.sh
RUN=${RUN:-13}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=320$RUN
for t in cuda_decode_stream_pair_copies cuda_decode_ cuda_stream_ cuda_quant_cases; do
  ( timeout 400 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
s30_sanitize cuda_decode_stream_pair_copies cuda_decode_stream_pair_copies
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,sm__cycles_active.avg,gpc__cycles_elapsed.max,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__occupancy_limit_shared_mem
M=$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio
for T in 1 4; do
  for v in row pair; do
    e=""; [ $v = row ] && e="MOE_SV_DCST=0"
    env $e timeout 200 ncu --clock-control none -k "regex:k_sv" --metrics $M --launch-count 2 --csv --page raw \
      $B --dense --no-kdec --only qwen3-30b-a3b --dtokens $T --reps 1 > $W/ncu_qwen3_${v}_$T.csv 2>&1
  done
done
python3 $(dirname $0)/../s31/ncu_table.py $W/ncu_*.csv > $W/ncu_table.txt 2>&1
A="--dense --default --no-kdec --reps 10 --only qwen3-30b-a3b --dtokens 1,2,3,4,6,8"
for r in 1 2 3; do
  for v in row pair; do
    e=""; [ $v = row ] && e="MOE_SV_DCST=0"
    env $e timeout 200 $B $A --json $W/r${r}_$v.jsonl > $W/out_r${r}_$v.log 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_row.jsonl $W/r*_pair.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt; cut -c1-200 $W/ncu_table.txt; cat $W/ab_table.txt; tail -3 $W/err.log
