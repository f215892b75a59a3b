#!/bin/bash
# Session 39 run 1: where the register-A kernel's consumers spend their time (ncu SourceCounters: warp-stall
# samples per SASS line, WarpStateStats, SpeedOfLight, the tensor pipe and L2): GGUF Q8_0 qwen3 T = 4096 and
# MXFP4 gpt-oss-20b T = 4096 (bench_decode --prefill, the GGUF GEMMs), bf16 qwen3 T = 4096 on it (MOE_SM90_TN=1).
#   OUT=out CARRY=dir [CASES="tag:cmd .."] bash bench/decode/s39/ncu1.sh
. bench/cuda/device_common.sh
dev_setup 3901
W=/tmp/w39; mkdir -p $W
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,dram__bytes_read.sum,smsp__issue_active.avg.pct_of_peak_sustained_elapsed
BD="/tmp/b/bench_decode --prefill --prefill-nodeq --reps 1"
run1() { # tag, env, command...
  local tag=$1 e=$2; shift 2
  env $e timeout 240 ncu --clock-control none --section SourceCounters --section WarpStateStats --metrics $M \
    -k "regex:gemm_sm90_qs" --launch-count 2 -o $W/rep_$tag "$@" > $W/log_$tag.txt 2>&1
  ncu -i $W/rep_$tag.ncu-rep --page source --csv --print-source sass > $W/src_$tag.csv 2>&1
  ncu -i $W/rep_$tag.ncu-rep --page raw --csv > $W/raw_$tag.csv 2>&1
  echo "== $tag"; python3 bench/decode/s32/src_top.py $W/src_$tag.csv 12 | cut -c1-200
  python3 bench/cuda/s33/ncu_raw.py $W/raw_$tag.csv | cut -c1-400
}
run1 q8qwen "MOE_X=0" $BD --only qwen3-30b-a3b --qtypes q8_0 --prefill-tokens 4096
run1 mxgpt "MOE_X=0" $BD --only gpt-oss-20b --qtypes mxfp4 --prefill-tokens 4096
run1 bfqwen "MOE_SM90_TN=1" python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --probe --backends cuda-sm90 \
  --presets qwen3-30b-a3b --tokens 4096 --out /tmp/probe.json
rm -f $W/*.ncu-rep; xz -9 $W/*.csv
tar cf $OUT/run1.tar -C $W .
dev_gpu
exit 0
