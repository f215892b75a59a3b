#!/bin/bash
# Session 13: the grouped GEMMs' epilogue (issue 5). GPU tests of the variant under
# test (MOE_LAB_EPI=$EPI_TEST), compute-sanitizer on it, then A/B rounds of the
# epilogue variants against the default on one build:
#   OUT=out CARRY=dir bash bench/cuda/run_s13.sh   (device; CARRY holds libmoe.so.gz, moe-tests.gz)
# Runs 1-3 (epilogue variants): a build with bench/cuda/lab/s13_epilogue_variants.patch
# applied; runs 4-5 (staged against direct): bench/cuda/lab/s13_jit_epilogue_knob.patch,
# BASE=cuda-decode@MOE_LAB_EPI=1 VARIANTS=cuda-decode; runs 7-8 the same patch with
# VARIANTS=cuda-decode@MOE_LAB_HINT=1,..., @MOE_LAB_NOCOPY=1 or @MOE_LAB_NOWAIT=1 (runs 7-8, 10;
# bench/cuda/README.md, session 13).
# Variables: NOAB (skip the A/B), TBACKENDS (a table of these backends, kernel times), EPI_TEST (the MOE_LAB_EPI the tests run under; a lab build reads it into cuda-jit
# programs, see bench/cuda/lab/), SANTEST..SANTEST4 (compute-sanitizer filters), VARIANTS (backend entries after
# the default), PRESETS, TOKENS, AB (rounds), TESTS, NOSAN.
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY}/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); done
chmod +x /tmp/b/moe-tests
export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-2031}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
for t in ${TESTS:-cuda_cases_jit cuda_jit_}; do
  MOE_LAB_EPI=${EPI_TEST:-0} timeout ${TT:-200} /tmp/b/moe-tests $t >> "$OUT/tests.log" 2>&1
  rc=$?; [ $rc -ge 124 ] && echo "TIMEOUT after ${TT:-200} s: moe-tests $t" | tee -a "$OUT/tests.log"
done
echo "== GPU tests (MOE_LAB_EPI=${EPI_TEST:-0})"; grep -E "^FAIL" "$OUT/tests.log" | cut -c1-300
echo "$(grep -c '^ok' "$OUT/tests.log") passed, $(grep -c '^FAIL' "$OUT/tests.log") failed, $(grep -c '^TIMEOUT' "$OUT/tests.log") timed out"
if [ -z "$NOSAN" ]; then
( MOE_LAB_EPI=${EPI_TEST:-0} timeout 150 compute-sanitizer --tool racecheck /tmp/b/moe-tests ${SANTEST:-cuda_cases_jit_bm128}
  MOE_LAB_EPI=${EPI_TEST:-0} timeout 150 compute-sanitizer --tool memcheck /tmp/b/moe-tests ${SANTEST2:-cuda_cases_jit_cluster2x1}
  [ -n "$SANTEST3" ] && timeout 150 compute-sanitizer --tool racecheck /tmp/b/moe-tests $SANTEST3
  [ -n "$SANTEST4" ] && timeout 150 compute-sanitizer --tool memcheck /tmp/b/moe-tests $SANTEST4 ) > "$OUT/sanitizer.log" 2>&1
echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^FAIL|passed|Error" "$OUT/sanitizer.log"
fi
B=bench/cuda/bench_layer.py
[ -z "$NOAB" ] && PYTHONUNBUFFERED=1 timeout ${ABT:-420} python3 $B --lib /tmp/b/libmoe.so \
  --backends ${BASE:-cuda-decode},${VARIANTS:-cuda-decode@MOE_LAB_EPI=1,cuda-decode@MOE_LAB_EPI=2,cuda-decode@MOE_LAB_EPI=3,cuda-decode@MOE_LAB_EPI=4} \
  --ab ${AB:-5} --reps 5 --presets ${PRESETS:-qwen3-30b-a3b,gpt-oss-20b,deepseek-v3} --tokens ${TOKENS:-4096,16384} \
  --out "$OUT/ab.json" 2>&1 | grep -E "^#|AB |failed" | cut -c1-190
if [ -n "$TBACKENDS" ]; then
BENCH_BREAKDOWN=1 PYTHONUNBUFFERED=1 timeout ${TT2:-240} python3 $B --lib /tmp/b/libmoe.so --backends $TBACKENDS --reps 8 \
  --presets ${TPRESETS:-qwen3-30b-a3b,gpt-oss-20b} --tokens ${TTOKENS:-16384} --out "$OUT/table.json" 2>&1 | grep -E "kernels|^\||^  [a-z]" | cut -c1-250
fi
