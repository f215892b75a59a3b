#!/bin/bash
# Session 6, device call 1: every CUDA test of moe-tests on the GPU in one run
# (including the commits of session 5 that had not run on a GPU: the shared
# B-tile loader, the 16-byte alignment check and its test), compute-sanitizer
# on the sm90 bad-ids/graph case and on the quant streaming cases, the qdot probe.
#   OUT=out bash bench/s6/verify.sh   (build-devbin/carry/{moe-tests,moe-qdot-test}.gz)
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
for f in build-devbin/carry/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); done
export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-2026}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
start=$(date +%s)
timeout ${TLIM:-330} /tmp/b/moe-tests cuda > "$OUT/tests.log" 2>&1; echo "moe-tests cuda rc $? in $(( $(date +%s) - start )) s" >> "$OUT/tests.log"
timeout 60 /tmp/b/moe-qdot-test >> "$OUT/tests.log" 2>&1
echo "== tests"; grep -E "^FAIL|FAILED|passed, |rc " "$OUT/tests.log" | tail -12
( timeout 90 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_bad_ids_graph_sm90
  timeout 90 compute-sanitizer --tool racecheck /tmp/b/moe-tests cuda_bad_ids_graph_sm90
  timeout 90 compute-sanitizer --tool synccheck /tmp/b/moe-tests cuda_bad_ids_graph_sm90
  timeout 90 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_quant_cases_stream ) > "$OUT/sanitizer.log" 2>&1
echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, " "$OUT/sanitizer.log"
