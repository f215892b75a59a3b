#!/bin/bash
# Session 5: ncu on the streaming kernels at T = 1 (after the word-load decoders):
# per-kernel time, DRAM share, issue activity and what the warps wait on.
#   OUT=out bash bench/decode/prof_s5.sh      (device; build-devbin/carry/bench_decode.gz carried)
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
gunzip -c build-devbin/carry/bench_decode.gz > /tmp/b/bench_decode; chmod +x /tmp/b/bench_decode
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats"
prof() { # name, format number (MOE_DF_*), preset, T, args...
  local n=$1 f=$2 p=$3 t=$4; shift 4
  timeout 120 ncu --clock-control none $S --kernel-name-base demangled -k "regex:k_sv<.int.$f," --launch-skip 4 --launch-count 2 /tmp/b/bench_decode "$@" --only $p --tokens $t --reps 1 > "$OUT/ncu_$n.txt" 2>&1
}
prof q4k_t1 7 qwen3-30b-a3b 1 --quant
prof mxfp4_t1 4 gpt-oss-20b 1 --quant
prof q80_t1 3 gpt-oss-20b 1 --quant
prof bf16_t1 0 qwen3-30b-a3b 1 --dense
for f in "$OUT"/ncu_*.txt; do
  echo "== $f"
  grep -E "k_sv|Duration|DRAM Throughput|L1/TEX Cache|Compute \(SM\)|Issued Warp Per|No Eligible|Eligible Warps|Warp Cycles Per Issued|Grid Size|Registers Per|Achieved Occupancy|Dynamic Shared|Waves Per" "$f" | head -40
done
