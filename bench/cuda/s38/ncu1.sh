#!/bin/bash
# Session 38 run 2: ncu of the GEMMs of the default layer and of MOE_SM90_TN=1 (the register-A kernel on bf16
# weights) at a few shapes: time, SM clock, tensor pipe, issue, L2 and DRAM, and the warp-state split.
#   OUT=out CARRY=dir [CASES="preset:T .."] bash bench/cuda/s38/ncu1.sh
. bench/cuda/device_common.sh
dev_setup 3802
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_tensor_op_gmma.sum,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,dram__bytes_read.sum,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio
for c in ${CASES:-qwen3-30b-a3b:4096 mixtral-8x7b:2048 deepseek-v3:8192}; do
  IFS=: read -r p T <<< "$c"
  for b in cuda-sm90 cuda-sm90@MOE_SM90_TN=1; do
    nm=$(echo "$b" | tr '=@' '__')
    timeout 150 ncu --clock-control none -k "regex:gemm" --metrics $M --launch-count 2 --csv --page raw \
      python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --probe --backends "$b" --presets $p \
      --tokens $T --out /tmp/probe.json > "$OUT/ncu_${p}_${T}_${nm}.csv" 2>&1
    echo "== $p T=$T $b"; python3 bench/cuda/s33/ncu_raw.py "$OUT/ncu_${p}_${T}_${nm}.csv" | cut -c1-600
    xz -f "$OUT/ncu_${p}_${T}_${nm}.csv"
  done
done
dev_gpu
exit 0
