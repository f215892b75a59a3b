#!/bin/bash
# Session 8, second part: the sm80 kernel's epilogue (cuda-sm80 forced, this build against
# the baseline build) and the cluster shapes of the sm90 kernels with more rounds.
#   OUT=out bash bench/cuda/run_s8b.sh     (device; build-devbin/carry11/{libmoe,libmoe_head,moe-tests}.gz)
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY:-build-devbin/carry11}/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); done
chmod +x /tmp/b/moe-tests
export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-2026}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
for t in cuda_cases_sm80 cuda_bad_ids_graph_sm80 cuda_cases cuda_cases_sm90 cuda_cases_jit; do
  timeout 150 /tmp/b/moe-tests $t >> "$OUT/tests.log" 2>&1
done
echo "== GPU tests"; grep -E "^(ok|FAIL)" "$OUT/tests.log" | cut -c1-160
( timeout 120 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_bad_ids_graph_sm80
  timeout 120 compute-sanitizer --tool racecheck /tmp/b/moe-tests cuda_bad_ids_graph_sm80 ) > "$OUT/sanitizer.log" 2>&1
echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^FAIL" "$OUT/sanitizer.log"
B=bench/cuda/bench_layer.py
PYTHONUNBUFFERED=1 timeout 150 python3 $B --lib /tmp/b/libmoe.so --base-lib /tmp/b/libmoe_head.so --backends cuda-sm80 \
  --ab 3 --reps 5 --presets gpt-oss-20b,qwen3-30b-a3b --tokens 4096 --out "$OUT/ab_sm80.json" 2>&1 | grep -E "^#|AB " | cut -c1-190
PYTHONUNBUFFERED=1 timeout 300 python3 $B --lib /tmp/b/libmoe.so \
  --backends cuda-decode,cuda-decode@MOE_SM90_CN=2,cuda-decode@MOE_SM90_CM=2 --ab ${ROUNDS:-8} --reps 5 \
  --presets ${PRESETS:-gpt-oss-120b,gpt-oss-20b,mixtral-8x7b,deepseek-v3} --tokens ${TOKENS:-4096,16384} \
  --out "$OUT/ab_clusters.json" 2>&1 | grep -E "^#|AB " | cut -c1-190
