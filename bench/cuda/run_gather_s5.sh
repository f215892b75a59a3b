#!/bin/bash
# Session 5: GEMM 1's A rows gathered from x by the sm90 producer warp (cp.async,
# default) against the permuted copy xp read through TMA (MOE_SM90_GATHER=0).
#   OUT=out bash bench/cuda/run_gather_s5.sh    (device; build-devbin/carry/{moe-tests,libmoe.so}.gz)
# 1. the sm90 case tables first, under a short timeout (a lost barrier arrival hangs);
# 2. the other CUDA tests of the GEMM backends, compute-sanitizer on a small case;
# 3. bench_layer.py (default chain, torch pipeline in the same process) once per mode.
# TESTS=0 skips 1-2; XP=0 skips the MOE_SM90_GATHER=0 run; PRESETS / TOKENS / REPS choose
# the shapes. Runs 1-4 of bench/cuda/s5 forced the gather on for every preset (the first
# default); run 5 is the default rule (gather for I <= 2048).
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
for f in build-devbin/carry/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); done
chmod +x /tmp/b/moe-tests
export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-2026}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
if [ "${TESTS:-1}" = 1 ]; then
timeout 150 /tmp/b/moe-tests cuda_cases_sm90 > "$OUT/tests.log" 2>&1; rc=$?
echo "== sm90 case tables (rc $rc)"; grep -E "^FAIL|^ok|passed, " "$OUT/tests.log"
[ $rc = 0 ] || exit 1
for t in cuda_cases_jit cuda_cases_sm80 cuda_bad_ids cuda_route cuda_graph cuda_decode_sweep_T cuda_quant_prefill; do timeout 150 /tmp/b/moe-tests $t >> "$OUT/tests.log" 2>&1; done
echo "== other GEMM tests"; grep -E "^FAIL|passed, " "$OUT/tests.log" | tail -6
( timeout 90 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_bad_ids_graph_sm90
  timeout 90 compute-sanitizer --tool racecheck /tmp/b/moe-tests cuda_bad_ids_graph_sm90
  timeout 90 compute-sanitizer --tool synccheck /tmp/b/moe-tests cuda_bad_ids_graph_sm90 ) > "$OUT/sanitizer.log" 2>&1
echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/sanitizer.log"
fi
A="--lib /tmp/b/libmoe.so --backends cuda-decode --presets ${PRESETS:-qwen3-30b-a3b,gpt-oss-20b,deepseek-v3} --tokens ${TOKENS:-4096,16384} --reps ${REPS:-8}"
PYTHONUNBUFFERED=1 timeout 200 python3 bench/cuda/bench_layer.py $A --out "$OUT/gather.json" > "$OUT/gather.log" 2>&1
echo "== default"; grep -E "^\||^#" "$OUT/gather.log"
[ "${XP:-1}" = 1 ] || exit 0
MOE_SM90_GATHER=0 PYTHONUNBUFFERED=1 timeout 200 python3 bench/cuda/bench_layer.py $A --out "$OUT/xp.json" > "$OUT/xp.log" 2>&1
echo "== xp (MOE_SM90_GATHER=0)"; grep -E "^\||^#" "$OUT/xp.log"
