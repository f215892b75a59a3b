#!/bin/bash
# Session 8, fourth part: routing through shared-memory histograms (layer.cu k_count_blk,
# k_place_blk, k_copy_rows) against the baseline build, tests and compute-sanitizer.
#   OUT=out bash bench/cuda/run_s8d.sh     (device; build-devbin/carry17 or CARRY=...: {libmoe,libmoe_head,moe-tests}.gz)
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY:-build-devbin/carry17}/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); done
chmod +x /tmp/b/moe-tests
export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-2028}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
for t in cuda_cases cuda_cases_sm90 cuda_cases_sm80 cuda_cases_jit cuda_bad_ids_graph cuda_sm90_c21_default \
         cuda_quant_cases cuda_decode_cases cuda_route_topk; do
  timeout 200 /tmp/b/moe-tests $t >> "$OUT/tests.log" 2>&1
done
echo "== GPU tests"; grep -E "^FAIL" "$OUT/tests.log" | cut -c1-300
echo "$(grep -c '^ok' "$OUT/tests.log") passed, $(grep -c '^FAIL' "$OUT/tests.log") failed"
( timeout 150 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_bad_ids_graph_sm90
  timeout 150 compute-sanitizer --tool racecheck /tmp/b/moe-tests cuda_bad_ids_graph_sm90
  MOE_SM90_GATHER=0 timeout 150 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_cases_sm90_bm128 ) > "$OUT/sanitizer.log" 2>&1
echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^FAIL" "$OUT/sanitizer.log"
B=bench/cuda/bench_layer.py
PYTHONUNBUFFERED=1 timeout 200 python3 $B --lib /tmp/b/libmoe.so --base-lib /tmp/b/libmoe_head.so --backends cuda-decode \
  --ab 5 --reps 5 --presets ${PRESETS:-qwen3-30b-a3b,gpt-oss-20b,deepseek-v3,mixtral-8x7b} --tokens ${TOKENS:-512,4096,16384} --out "$OUT/ab_route.json" 2>&1 |
  grep -E "^#|AB " | cut -c1-170
BENCH_BREAKDOWN=1 PYTHONUNBUFFERED=1 timeout 120 python3 $B --lib /tmp/b/libmoe.so --backends cuda-decode --reps 8 \
  --presets qwen3-30b-a3b,gpt-oss-20b --tokens 4096,16384 --out "$OUT/table_route.json" 2>&1 | grep -E "kernels|^\|" | cut -c1-220
