#!/bin/bash
# ncu warp-state and pipe sections of the GEMMs of one forward (session 9, run 14):
#   OUT=out CARRY=dir bash bench/cuda/ncu_stalls_s9.sh PRESET T
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY}/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); done
export MOE_CACHE_DIR=/tmp/moe-jit-cache
timeout 300 ncu --clock-control none --kernel-name regex:'gemm' --launch-count 2 \
  --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --probe --presets ${1:-gpt-oss-20b} --tokens ${2:-16384} \
  --backends cuda-decode > "$OUT/ncu_stalls.log" 2>&1
grep -E "gemm|Stall|stall|Warp Cycles|Issued|Eligible|Active Warps|Pipe|Throughput|Busy|Hit Rate" "$OUT/ncu_stalls.log" | cut -c1-140 | head -90
