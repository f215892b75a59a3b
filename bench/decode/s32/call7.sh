#!/bin/bash
# Session 32, device call 7 (H200): (1) the mechanism of the one-wave down plan: ncu raw metrics of the
# streaming launches at qwen3 T = 4 and 8, the default against MOE_SV_D1W=0; (2) the dense gate/up's jobs,
# held to 64 rows by the same 16 KB partial-sum cap at passes of 4 tokens (2 x 8 parts x 4 tokens): lab knob
# MOE_SV_PSUM = 32768 / 65536 against the default, forced streaming, qwen3 and gpt-oss at T = 2-8, 2 rounds.
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call7.sh
RUN=${RUN:-7}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,sm__cycles_active.avg,gpc__cycles_elapsed.max,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__occupancy_limit_shared_mem
M=$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio
for T in 4 8; do
  for v in cap 1w; do
    e=""; [ $v = cap ] && e="MOE_SV_D1W=0"
    env $e timeout 200 ncu --clock-control none -k "regex:k_sv" --metrics $M --launch-count 2 --csv --page raw \
      $B --dense --no-kdec --only qwen3-30b-a3b --dtokens $T --reps 1 > $W/ncu_qwen3_${v}_$T.csv 2>&1
  done
done
python3 $(dirname $0)/../s31/ncu_table.py $W/ncu_*.csv > $W/ncu_table.txt 2>&1
A="--dense --no-kdec --reps 10 --only qwen3-30b-a3b,gpt-oss-20b,gpt-oss-120b --dtokens 2,3,4,5,6,8"
for r in 1 2; do
  for v in p16 p32 p64; do
    e=""; [ $v = p32 ] && e="MOE_SV_PSUM=32768"; [ $v = p64 ] && e="MOE_SV_PSUM=65536"
    env $e timeout 200 $B $A --json $W/r${r}_$v.jsonl > $W/out_r${r}_$v.log 2>>$W/err.log
  done
done
MOE_SV_PSUM=65536 timeout 100 $B --dense --no-kdec --describe --reps 2 --only qwen3-30b-a3b,gpt-oss-20b --dtokens 4,8 \
  > $W/desc64.log 2>&1
python3 $(dirname $0)/../s26/ab_table.py $W/r*_p16.jsonl $W/r*_p32.jsonl $W/r*_p64.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt; cut -c1-200 $W/ncu_table.txt
grep -oE "T = [0-9]+|gate/up plan: [^;]*|down plan: [^;]*" $W/desc64.log | paste - - - | cut -c1-250
cat $W/ab_table.txt; tail -3 $W/err.log
