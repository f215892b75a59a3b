#!/bin/bash
# The sm90 tile table (BM 128 / BM 64) on one Hopper GPU, one device call:
# the CUDA tests (every backend on the case table, each tile forced, graph
# capture), compute-sanitizer on the BM 64 kernels, then an A/B of the tiles
# on cuda-jit and cuda-sm90 for the five presets. Uses the binaries carried
# in build-devbin/ (sm_90a) when they run, else builds build-gpu/.
#   OUT=out bash bench/cuda/run_tiles.sh            # PART=all (tests + ab + ncu) | tests | ab | ncu | layer
set -o pipefail
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-777}
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; git rev-parse HEAD 2>/dev/null; } | tee "$OUT/gpu.txt"
B=build-devbin
if ! { [ -x $B/tests/moe-tests ] && $B/tests/moe-tests nothing_matches > /dev/null 2>&1; }; then
  B=build-gpu
  (cmake -S . -B $B -DMOE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a-real -DCMAKE_BUILD_TYPE=Release &&
   cmake --build $B -j16 --target moe moe-tests) > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
fi
LIB=$(ls $B/libmoe.so.*.*.* | head -1)
PART=${PART:-all}
if [ $PART = all ] || [ $PART = tests ]; then
  ( timeout 300 $B/tests/moe-tests cuda; timeout 100 $B/tests/moe-tests jit ) > "$OUT/tests.log" 2>&1
  ( for bm in 64; do
      timeout 90 compute-sanitizer --tool memcheck $B/tests/moe-tests cuda_bad_ids_graph_sm90_bm$bm
      timeout 90 compute-sanitizer --tool racecheck $B/tests/moe-tests cuda_bad_ids_graph_sm90_bm$bm
    done
    timeout 90 compute-sanitizer --tool memcheck $B/tests/moe-tests cuda_decode_graph ) > "$OUT/sanitizer.log" 2>&1
  echo "== tests"; grep -E "^FAIL|FAILED|passed, |cases passed" "$OUT/tests.log" | head -40
  echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, " "$OUT/sanitizer.log"
fi
if [ $PART = all ] || [ $PART = ab ]; then
  PYTHONUNBUFFERED=1 timeout ${AB_TIMEOUT:-300} python3 bench/cuda/bench_layer.py --lib $LIB \
    --backends ${AB_BACKENDS:-cuda-jit@MOE_SM90_BM=128,cuda-jit@MOE_SM90_BM=64,cuda-sm90@MOE_SM90_BM=128,cuda-sm90@MOE_SM90_BM=64} \
    --presets ${PRESETS:-qwen3-30b-a3b,gpt-oss-120b,deepseek-v3,gpt-oss-20b,mixtral-8x7b} --tokens ${TOKENS:-512,1024,2048,4096,16384} \
    --reps ${REPS:-7} --ab ${ROUNDS:-4} --out "$OUT/results_tiles_ab.json" > "$OUT/ab.log" 2>&1
  echo "== ab"; grep -E "AB |^#|failed" "$OUT/ab.log" | sed 's/  */ /g'
fi
if [ $PART = all ] || [ $PART = ncu ]; then
  for sh in ${NCU_SHAPES:-"deepseek-v3 4096" "qwen3-30b-a3b 4096"}; do
    for bm in ${NCU_BMS:-128 64}; do echo "== ncu $sh cuda-jit BM $bm"; LIB=$LIB timeout 120 bash bench/cuda/ncu_probe.sh $sh cuda-jit@MOE_SM90_BM=$bm; done
  done > "$OUT/ncu.log" 2>&1
  echo "== ncu"; grep -E "^==|gemm|dram__bytes|gpu__time|lts__throughput|dram__throughput" "$OUT/ncu.log" | grep -v PROF | sed 's/  */ /g'
fi
if [ $PART = layer ]; then
  PYTHONUNBUFFERED=1 timeout ${LAYER_TIMEOUT:-400} python3 bench/cuda/bench_layer.py --lib $LIB --backends ${BACKENDS:-cuda-jit,cuda-sm90} \
    --presets ${PRESETS:-qwen3-30b-a3b,gpt-oss-120b,deepseek-v3,gpt-oss-20b,mixtral-8x7b} --tokens ${TOKENS:-512,4096,16384} \
    --reps ${REPS:-10} --out "$OUT/results_layer.json" > "$OUT/layer.log" 2>&1
  echo "== layer"; grep -E "^\\||^#|failed" "$OUT/layer.log"
fi
