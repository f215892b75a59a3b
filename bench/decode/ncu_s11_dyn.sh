#!/bin/bash
# Session 11: the gate/up streaming kernel of one forward under ncu (durations, issue, stalls,
# instructions), the planned grid and the run-time split side by side; each variant of
# VARS is name:ENV=V,... (default: static MOE_SV_DYN=0, split MOE_SV_DYN=1):
#   OUT=out CARRY=dir ARGS="--quant --only qwen3-30b-a3b --qtypes q8_0 --qtokens 8" bash bench/decode/ncu_s11_dyn.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
gunzip -c ${CARRY:-build-devbin/carry}/bench_decode.gz > /tmp/b/bench_decode; chmod +x /tmp/b/bench_decode
for spec in ${VARS:-static:MOE_SV_DYN=0 split:MOE_SV_DYN=1}; do
  IFS=: read -r v envs <<< "$spec"
  ( for kv in ${envs//,/ }; do export "$kv"; done
    MOE_DECODE_FUSED=${FUSED:-0} timeout 250 ncu --kernel-name regex:k_sv --launch-skip ${SKIP:-2} --launch-count ${COUNT:-2} \
      --section SpeedOfLight --section LaunchStats --section SchedulerStats --section WarpStateStats ${SECTIONS} \
      /tmp/b/bench_decode --no-kdec --reps 1 ${ARGS} > "$OUT/ncu_$v.txt" 2>&1 )
  echo "== $v ($envs)"
  grep -E "k_sv|Duration|DRAM Throughput|Grid Size|Issued Warp|Executed Instructions  |Elapsed Cycles|SM Active Cycles|Warp Cycles Per Issued" "$OUT/ncu_$v.txt"
done
