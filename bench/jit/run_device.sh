#!/bin/bash
# cuda-jit on one Hopper GPU, one device call (about 4 minutes): build, the
# JIT tests (NVRTC compile + cache) and the case table on cuda-jit and
# cuda-sm90, then cuda-jit against cuda-sm90 (and torch) on two presets.
# Logs and JSON under $OUT (or ./out). Usage: bash bench/jit/run_device.sh
set -o pipefail
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
export MOE_CACHE_DIR=/tmp/moe-jit-cache   # starts empty on a fresh machine: the first layer of each shape compiles
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee $OUT/gpu.txt
t0=$(date +%s)
(cmake -S . -B build-gpu -DMOE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="80-real;90a-real" && cmake --build build-gpu -j16 --target moe moe-tests) > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
for f in jit sm90; do timeout 150 ./build-gpu/tests/moe-tests $f 2>&1 | tee -a $OUT/tests.log | grep -vE '^moe-tests'; done
ls -la $MOE_CACHE_DIR | tail -n +2 | wc -l | xargs echo "cubins in the cache:"
PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-150} python3 bench/cuda/bench_layer.py --lib build-gpu/libmoe.so \
  --backends cuda-sm90,cuda-jit --presets qwen3-30b-a3b,gpt-oss-20b --tokens 512,4096,16384 --reps 10 \
  --out $OUT/results_jit.json 2>&1 | tee $OUT/bench.log | grep -E "^\\||^#"
