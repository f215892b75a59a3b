#!/bin/bash
# Session 6: ncu on the GGUF streaming kernels at T = 8 and 16 (qwen3 Q4_K and
# Q8_0): time per phase, DRAM share, issue activity, instructions and shared-memory
# wavefronts per kernel, what the warps wait on.
#   OUT=out bash bench/decode/prof_s6.sh      (build-devbin/carry/bench_decode.gz)
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
gunzip -c build-devbin/carry/bench_decode.gz > /tmp/b/bench_decode; chmod +x /tmp/b/bench_decode
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis_Tables"
M="--metrics smsp__inst_executed.sum,smsp__thread_inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,dram__bytes_read.sum,sm__cycles_active.avg"
prof() { # name, format number (MOE_DF_*), preset, T, args...
  local n=$1 f=$2 p=$3 t=$4; shift 4
  timeout 120 ncu --clock-control none $S $M --kernel-name-base demangled -k "regex:k_sv<.int.$f," --launch-skip 4 --launch-count 2 /tmp/b/bench_decode "$@" --only $p --tokens $t --reps 1 > "$OUT/ncu_$n.txt" 2>&1
}
prof q4k_t8 7 qwen3-30b-a3b 8 --quant
prof q4k_t16 7 qwen3-30b-a3b 16 --quant
prof q80_t16 3 qwen3-30b-a3b 16 --quant
for f in "$OUT"/ncu_*.txt; do
  echo "== $f"
  grep -E "k_sv<|Duration|DRAM Throughput|Compute \(SM\)|Issued Warp Per|No Eligible|Warp Cycles Per Issued|Grid Size|Registers Per|Achieved Occupancy|smsp__inst_executed.sum|thread_inst|wavefronts_mem_shared|dram__bytes_read|cycles_active" "$f" | head -40
done
