#!/bin/bash
# Session 8, third part: the default 2 x 1 clusters at large T (layer.cu moe__cuda_sm90_shape).
#   OUT=out bash bench/cuda/run_s8c.sh     (device; build-devbin/carry13/{libmoe,moe-tests}.gz)
# GPU tests of the GEMM backends and the rule, compute-sanitizer on 2 x 1 clusters, then
# A/B rounds: MOE_SM90_CM=1 (1 x 1, no 2 x 1 kernels compiled) against the default.
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY:-build-devbin/carry13}/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); done
chmod +x /tmp/b/moe-tests
export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-2026}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
for t in cuda_sm90_c21_default cuda_jit_c21_default cuda_cases_sm90 cuda_cases_jit cuda_cases_sm90_cluster2x1 \
         cuda_cases_jit_cluster2x2 cuda_cases cuda_bad_ids_graph_sm90 cuda_bad_ids_graph_jit_bm64 cuda_decode_cases; do
  timeout 200 /tmp/b/moe-tests $t >> "$OUT/tests.log" 2>&1
done
echo "== GPU tests"; grep -E "^(ok|FAIL)" "$OUT/tests.log" | cut -c1-300
echo "$(grep -c '^ok' "$OUT/tests.log") passed, $(grep -c '^FAIL' "$OUT/tests.log") failed"
( timeout 200 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_cases_sm90_cluster2x1
  timeout 200 compute-sanitizer --tool racecheck /tmp/b/moe-tests cuda_cases_sm90_cluster2x1 ) > "$OUT/sanitizer.log" 2>&1
echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^FAIL" "$OUT/sanitizer.log"
PYTHONUNBUFFERED=1 timeout ${ABTIME:-300} python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so \
  --backends cuda-decode@MOE_SM90_CM=1,cuda-decode --ab ${ROUNDS:-6} --reps 5 \
  --presets ${PRESETS:-mixtral-8x7b,deepseek-v3} --tokens ${TOKENS:-4096,16384} --out "$OUT/ab_c21.json" 2>&1 | grep -E "^#|AB " | cut -c1-200
