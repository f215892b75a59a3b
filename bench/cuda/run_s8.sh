#!/bin/bash
# Session 8: the sm90 GEMM's epilogue and partial tiles (issue 5), this build against the
# baseline build in the same process (bench_layer.py --base-lib, A/B rounds), then the
# whole-layer table against PyTorch.
#   OUT=out bash bench/cuda/run_s8.sh       (device; build-devbin/carry8/{libmoe,libmoe_head,moe-tests}.gz)
# TESTS=0 skips the GPU tests and compute-sanitizer; AB=0 skips the A/B rounds; TABLE=1 adds
# the table against PyTorch; NCU=PRESET:T adds an ncu pass over the GEMM kernels of one forward.
# PRESETS / TOKENS / ROUNDS / REPS choose the A/B shapes; TPRESETS / TTOKENS the table's;
# CARRY names another folder of .gz files; BASELIBS=NAME=PATH,... several baseline builds;
# BACKENDS the A/B entries (backend@KNOB=V+KNOB=V, e.g. cuda-decode,cuda-decode@MOE_SM90_GATHER=1).
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY:-build-devbin/carry8}/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); done
chmod +x /tmp/b/moe-tests
export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-2026}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
if [ "${TESTS:-1}" = 1 ]; then
  timeout 150 /tmp/b/moe-tests cuda_cases_sm90 > "$OUT/tests.log" 2>&1; rc=$?
  echo "== sm90 case table (rc $rc)"; grep -E "^FAIL|passed, " "$OUT/tests.log"
  [ $rc = 0 ] || exit 1
  for t in cuda_cases_sm90_bm64 cuda_cases_sm90_bm128 cuda_cases_sm90_xp_bm128 cuda_cases_sm90_gather_bm128 \
           cuda_cases_sm90_gather_bm64 cuda_cases_jit cuda_cases_jit_bm64 cuda_cases_jit_xp cuda_cases_jit_gather \
           cuda_cases_sm90_cluster2x1 cuda_cases_sm90_cluster1x2 cuda_cases_sm90_cluster2x2 cuda_cases_jit_cluster2x2 \
           cuda_cases cuda_bad_ids_graph_sm90 cuda_bad_ids_graph_sm90_bm64 cuda_bad_ids_graph_sm90_bm128 \
           cuda_bad_ids_graph_jit_bm64 cuda_route_topk cuda_quant_prefill_forced; do
    timeout 150 /tmp/b/moe-tests $t >> "$OUT/tests.log" 2>&1
  done
  echo "== GPU tests"; grep -E "^(ok|FAIL|skip)" "$OUT/tests.log" | cut -c1-160
  echo "$(grep -c '^ok' "$OUT/tests.log") passed, $(grep -c '^FAIL' "$OUT/tests.log") failed"
  ( MOE_SM90_BM=128 timeout 120 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_bad_ids_graph_sm90
    MOE_SM90_BM=128 timeout 120 compute-sanitizer --tool racecheck /tmp/b/moe-tests cuda_bad_ids_graph_sm90
    timeout 120 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_cases_sm90_bm128
    timeout 120 compute-sanitizer --tool synccheck /tmp/b/moe-tests cuda_bad_ids_graph_sm90 ) > "$OUT/sanitizer.log" 2>&1
  echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^FAIL|passed, " "$OUT/sanitizer.log"
fi
if [ "${AB:-1}" = 1 ]; then
  PYTHONUNBUFFERED=1 timeout ${ABTIME:-300} python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so \
    --base-lib ${BASELIBS:-/tmp/b/libmoe_head.so} --backends ${BACKENDS:-cuda-decode} --ab ${ROUNDS:-3} --reps ${REPS:-6} \
    --presets ${PRESETS:-gpt-oss-20b,qwen3-30b-a3b,mixtral-8x7b} --tokens ${TOKENS:-4096,16384} \
    --out "$OUT/ab.json" > "$OUT/ab.log" 2>&1
  echo "== A/B (ratio = this build / baseline)"; grep -E "^#|AB " "$OUT/ab.log" | cut -c1-200
fi
if [ "${TABLE:-0}" = 1 ]; then
  BENCH_BREAKDOWN=1 PYTHONUNBUFFERED=1 timeout ${TTIME:-300} python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so \
    --backends cuda-decode --reps ${REPS:-8} --presets ${TPRESETS:-qwen3-30b-a3b,mixtral-8x7b,deepseek-v3,gpt-oss-20b,gpt-oss-120b} \
    --tokens ${TTOKENS:-512,4096,16384} --out "$OUT/table.json" > "$OUT/table.log" 2>&1
  echo "== table"; grep -E "^\||^#" "$OUT/table.log"
fi
if [ -n "$NCU" ]; then
  LIB=/tmp/b/libmoe.so timeout 200 bash bench/cuda/ncu_probe.sh ${NCU%%:*} ${NCU##*:} cuda-decode > "$OUT/ncu.log" 2>&1
  echo "== ncu $NCU"; cat "$OUT/ncu.log" | tail -40
fi
