#!/bin/bash
# Session 40 run 6: where the register-A kernel's time goes, by ncu's sections (SpeedOfLight, ComputeWorkloadAnalysis:
# the pipes, MemoryWorkloadAnalysis: shared memory and L2, WarpStateStats), GEMM 1 and 2 of: qwen3 Q8_0 T = 4096 (the
# GGUF GEMMs), qwen3 bf16 T = 4096 on the register-A kernel (MOE_SM90_TN=1) and on the token-major one (=0).
#   OUT=out CARRY=dir bash bench/decode/s40/ncu6.sh
. bench/cuda/device_common.sh
dev_setup 4006
W=/tmp/w40; mkdir -p $W
S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats"
run1() { # tag, kernel regex, env, command...
  local tag=$1 k=$2 e=$3; shift 3
  env $e timeout 200 ncu --clock-control none $S -k "regex:$k" --launch-count 2 "$@" > $W/$tag.txt 2>&1
  echo "== $tag"
  grep -E "^  [a-z_]+.*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Executed Ipc A|Issue Slots Busy|SM Busy|Shared Memory|Mem Pipes Busy|Max Bandwidth|L1/TEX Hit|L2 Hit|Warp Cycles Per Issued|Avg. Active Threads|Theoretical Occ|Registers Per|Tensor" $W/$tag.txt | cut -c1-150
}
run1 q8qwen "gemm_sm90_qs" "MOE_X=0" /tmp/b/bench_decode --prefill --prefill-nodeq --reps 1 --only qwen3-30b-a3b --qtypes q8_0 --prefill-tokens 4096
run1 bfqwen_tn1 "gemm_sm90_qs" "MOE_SM90_TN=1" python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --probe --backends cuda-sm90 \
  --presets qwen3-30b-a3b --tokens 4096 --out /tmp/probe.json
run1 bfqwen_tn0 "gemm_sm90" "MOE_SM90_TN=0" python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --probe --backends cuda-sm90 \
  --presets qwen3-30b-a3b --tokens 4096 --out /tmp/probe.json
tar cf $OUT/run6.tar -C $W .
dev_gpu
exit 0
