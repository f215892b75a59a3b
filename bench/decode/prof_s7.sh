#!/bin/bash
# Session 7: ncu on the streaming gate/up kernel of qwen3 Q8_0 at T = 128 (groups of
# 8 tokens) with the int8 tensor-core consumer (default) and with dp4a
# (MOE_SV_QMMA=0): time, DRAM share, issue activity, instructions, and what the
# warps wait on (stall reasons per issued instruction).
#   OUT=out bash bench/decode/prof_s7.sh      (build-devbin/carry/bench_decode.gz)
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
gunzip -c build-devbin/carry/bench_decode.gz > /tmp/b/bench_decode; chmod +x /tmp/b/bench_decode
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats"
st=""
for r in barrier long_scoreboard short_scoreboard mio_throttle wait math_pipe_throttle lg_throttle not_selected dispatch_stall no_instruction branch_resolving membar sleeping; do
  st="$st,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
M="--metrics smsp__inst_executed.sum,smsp__thread_inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,dram__bytes_read.sum,sm__cycles_active.avg$st"
prof() { # name, env, args...
  local n=$1 e=$2; shift 2
  env $e timeout 150 ncu --clock-control none $S $M --kernel-name-base demangled -k "regex:k_sv<.int.3, .int.0, .int.8>" \
    --launch-skip 2 --launch-count 1 /tmp/b/bench_decode "$@" > "$OUT/ncu_$n.txt" 2>&1
}
prof q80_t128_mma MOE_SV_QMMA=4 --quant --only qwen3-30b-a3b --qtypes q8_0 --qtokens 128 --no-kdec --reps 1
prof q80_t128_dp4a MOE_SV_QMMA=0 --quant --only qwen3-30b-a3b --qtypes q8_0 --qtokens 128 --no-kdec --reps 1
for f in "$OUT"/ncu_*.txt; do
  echo "== $f"
  grep -E "k_sv<|Duration|DRAM Throughput|Issued Warp Per|No Eligible|Warp Cycles Per Issued|Grid Size|Registers Per|Achieved Occupancy|Block Limit|smsp__inst_executed.sum|wavefronts_mem_shared|dram__bytes_read|stalled" "$f" | head -40
done
