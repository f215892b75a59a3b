#!/bin/bash
# Session 10: ncu of the two streaming kernels (gate/up, then the expert-major down) of a
# dense T = 1 forward:  OUT=out CARRY=dir NCU_ARGS="--only qwen3-30b-a3b" bash bench/decode/ncu_s10_stream.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
gunzip -c ${CARRY:-build-devbin/carry}/bench_decode.gz > /tmp/b/bench_decode; chmod +x /tmp/b/bench_decode
timeout 300 ncu --kernel-name regex:k_sv --launch-skip 6 --launch-count 2 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
  --section LaunchStats --section Occupancy \
  /tmp/b/bench_decode --dense --no-kdec --dtokens 1 --reps 1 ${NCU_ARGS} > "$OUT/ncu_stream.txt" 2>&1
grep -E "k_sv|Duration|DRAM Throughput|Memory Throughput|L2 Hit|SM Active|Elapsed Cycles|Eligible|Issued Warp|Active Warps|Grid Size|Registers|Dynamic Shared|Achieved Occ" "$OUT/ncu_stream.txt"
