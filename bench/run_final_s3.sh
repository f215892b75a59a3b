#!/bin/bash
# Session 3's closing device call: every C test on the GPU machine (CPU tests on
# its host too) with the carried build-devbin binaries, then the whole-layer table
# on the default backend chain (cuda-decode, which hands these T to cuda-jit)
# against the torch pipeline.   OUT=out bash bench/run_final_s3.sh
OUT=${OUT:-out}; mkdir -p "$OUT"
export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-2026}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git rev-parse HEAD 2>/dev/null; } | tee "$OUT/gpu.txt"
timeout 330 build-devbin/tests/moe-tests > "$OUT/tests.log" 2>&1
echo "== tests"; grep -E "^FAIL|passed, " "$OUT/tests.log"
PYTHONUNBUFFERED=1 timeout 230 python3 bench/cuda/bench_layer.py --lib build-devbin/libmoe.so.0.1.0 \
  --backends cuda-decode --tokens 512,4096,16384 --reps 10 --out "$OUT/results_layer_s3.json" > "$OUT/layer.log" 2>&1
echo "== layer"; grep -E "^\||^#" "$OUT/layer.log"
