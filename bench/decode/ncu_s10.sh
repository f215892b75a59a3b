#!/bin/bash
# ncu of the one-pass kernel (session 10): NCU_ARGS="--only qwen3-30b-a3b --dtokens 1" OUT=out bash bench/decode/ncu_s10.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
C=${CARRY:-build-devbin/carry}
[ -x /tmp/b/bench_decode ] || for f in $C/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); done
timeout 200 ncu --kernel-name regex:k_op --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
  /tmp/b/bench_decode --dense --onepass --no-kdec --reps 1 $NCU_ARGS > "$OUT/ncu_${NCU_TAG:-op}.txt" 2>&1
grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Stall|Warp Cycles Per Issued|Issued Warp|Mem Busy|Max Bandwidth|L1/TEX Hit|L2 Hit" "$OUT/ncu_${NCU_TAG:-op}.txt" | head -40
