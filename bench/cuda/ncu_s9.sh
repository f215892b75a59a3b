#!/bin/bash
# ncu on the GEMMs of one forward per shape (session 9): tensor pipe, L2, DRAM
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY}/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); done
export MOE_CACHE_DIR=/tmp/moe-jit-cache
ncu --query-metrics 2>/dev/null | grep -iE "gmma|tensor_op" | head -20 > "$OUT/metrics.txt"
cat "$OUT/metrics.txt" | cut -c1-120
M=gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,smsp__average_warp_latency_issue_stalled_barrier,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct
for shape in "deepseek-v3 4096" "qwen3-30b-a3b 4096" "gpt-oss-20b 16384" "gpt-oss-120b 4096"; do
  set -- $shape
  echo "== ncu $1 $2"
  timeout 150 ncu --clock-control none --kernel-name regex:'gemm' --launch-count 2 --metrics $M \
    python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --probe --presets $1 --tokens $2 --backends cuda-decode 2>&1 | \
    grep -E "gemm|gpu__time|gmma|dram__|lts__|sm__throughput|stalled" | sed -E 's/\(int, int, int\)|moe_cuda_gemm//g' | cut -c1-150
done 2>&1 | tee "$OUT/ncu.log"
