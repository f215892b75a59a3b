#!/bin/bash
# Session 4: ncu on the streaming decode kernels at HEAD (which phase, what limits it).
#   OUT=out bash bench/decode/prof_s4.sh      (device; needs build-devbin/bench_decode carried)
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
B=build-devbin/bench_decode
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis"
prof() { # name, preset, T, args...
  local n=$1 p=$2 t=$3; shift 3
  MOE_DECODE_FUSED=0 timeout 120 ncu $S -k regex:k_sv --launch-skip 6 --launch-count 2 $B "$@" --only $p --tokens $t --reps 1 > "$OUT/ncu_$n.txt" 2>&1
}
prof q4k_t8 qwen3-30b-a3b 8 --quant
prof mxfp4_t16 gpt-oss-20b 16 --quant
prof mxfp4_t1 gpt-oss-20b 1 --quant
prof bf16_t1 qwen3-30b-a3b 1 --dense
for f in "$OUT"/ncu_*.txt; do
  echo "== $f"
  grep -E "k_sv|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Block Size|Grid Size|Registers Per|Achieved Occupancy|Dynamic Shared" "$f" | head -60
done
