#!/bin/bash
# Session 11: the streaming kernels of one forward under ncu (durations, DRAM, issue), the
# static and the run-time split side by side:
#   OUT=out CARRY=dir ARGS="--quant --only qwen3-30b-a3b --qtypes q8_0 --qtokens 8" bash bench/decode/ncu_s11_dyn.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
gunzip -c ${CARRY:-build-devbin/carry}/bench_decode.gz > /tmp/b/bench_decode; chmod +x /tmp/b/bench_decode
for dyn in ${DYNS:-0 1}; do
  [ "$dyn" = 3 ] && export MOE_SV_DYNORD=1
  MOE_SV_DYN=${dyn/3/1} MOE_DECODE_FUSED=${FUSED:-0} timeout 250 ncu --kernel-name regex:k_sv --launch-skip ${SKIP:-2} --launch-count 2 \
    --section SpeedOfLight --section LaunchStats --section SchedulerStats --section WarpStateStats \
    /tmp/b/bench_decode --no-kdec --reps 1 ${ARGS} > "$OUT/ncu_dyn$dyn.txt" 2>&1
  echo "== MOE_SV_DYN=$dyn"
  grep -E "k_sv|Duration|DRAM Throughput|Grid Size|Issued Warp|No Eligible|Stall Long|Warp Cycles Per Issued" "$OUT/ncu_dyn$dyn.txt"
done
