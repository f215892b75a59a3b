#!/bin/bash
# cuda-quant's prefill path (GGUF blocks dequantised into the workspace, then
# the grouped GEMM), one device call with the binaries carried in build-devbin/:
# the CUDA tests (case table, sweeps, the path forced on and off, clusters),
# compute-sanitizer on a forced prefill forward (graph captured), then
# bench_decode --prefill: bf16 against each GGUF type with the path on and off.
#   OUT=out bash bench/decode/run_prefill.sh        # PART=all | tests | bench
OUT=${OUT:-out}; mkdir -p "$OUT"
export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-4711}
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; git rev-parse HEAD 2>/dev/null; } | tee "$OUT/gpu.txt"
T=build-devbin/tests/moe-tests; B=build-devbin/bench_decode
if [ "${PART:-all}" != bench ]; then
  timeout 330 $T cuda > "$OUT/tests.log" 2>&1
  ( MOE_QUANT_PREFILL_T=0 timeout 120 compute-sanitizer --tool memcheck $T cuda_quant_graph_capture
    MOE_QUANT_PREFILL_T=0 timeout 120 compute-sanitizer --tool racecheck $T cuda_quant_graph_capture
    MOE_SM90_CM=2 timeout 90 compute-sanitizer --tool memcheck $T cuda_bad_ids_graph_sm90
    MOE_SM90_CN=2 timeout 90 compute-sanitizer --tool racecheck $T cuda_bad_ids_graph_sm90 ) > "$OUT/sanitizer.log" 2>&1
  echo "== tests"; grep -E "^FAIL|FAILED|passed, |^skip" "$OUT/tests.log" | head -30
  echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, " "$OUT/sanitizer.log"
fi
if [ "${PART:-all}" != tests ]; then
  timeout ${BENCH_TIMEOUT:-240} $B --prefill --reps 10 --json "$OUT/prefill.jsonl" > "$OUT/prefill.log" 2>&1
  echo "== prefill"; grep -E "^prefill|^ *\(" "$OUT/prefill.log" | sed 's/  */ /g'
fi
