#!/bin/bash
# Session 9: GEMM 2 in n-tiles of 240 where D pads less so (gpt-oss, D = 2880;
# layer.cu moe__cuda_sm90_bn2) against the baseline build and against
# MOE_SM90_BN2=256 on the same build; GPU tests and compute-sanitizer first.
#   OUT=out bash bench/cuda/run_s9.sh     (device; CARRY=dir of {libmoe,libmoe_head,moe-tests}.gz)
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY:-build-devbin/carry23}/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); done
chmod +x /tmp/b/moe-tests
export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-2029}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
for t in ${TESTS:-cuda_cases cuda_sm90 cuda_jit cuda_bad_ids_graph cuda_route cuda_quant cuda_decode jit_}; do
  timeout ${TT:-240} /tmp/b/moe-tests $t >> "$OUT/tests.log" 2>&1
  rc=$?; [ $rc -ge 124 ] && echo "TIMEOUT after ${TT:-240} s: moe-tests $t (the tests after the last ok did not run)" | tee -a "$OUT/tests.log"
done
echo "== GPU tests"; grep -E "^FAIL" "$OUT/tests.log" | cut -c1-300
echo "$(grep -c '^ok' "$OUT/tests.log") passed, $(grep -c '^FAIL' "$OUT/tests.log") failed, $(grep -c '^TIMEOUT' "$OUT/tests.log") filters timed out"
if [ -z "$NOSAN" ]; then
( timeout 150 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_bad_ids_graph_sm90
  timeout 150 compute-sanitizer --tool racecheck /tmp/b/moe-tests cuda_bad_ids_graph_jit_bm64
  timeout 200 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_jit_bn240_default
  timeout 200 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_cases_sm90_cluster2x1
  timeout 200 compute-sanitizer --tool racecheck /tmp/b/moe-tests cuda_cases_sm90_cluster2x1_gather ) > "$OUT/sanitizer.log" 2>&1
echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^FAIL|^ok" "$OUT/sanitizer.log"
fi
B=bench/cuda/bench_layer.py
BASEARG="--base-lib /tmp/b/libmoe_head.so"; [ -n "$NOBASE" ] && BASEARG=""
PYTHONUNBUFFERED=1 timeout ${ABT:-300} python3 $B --lib /tmp/b/libmoe.so $BASEARG \
  --backends ${BACKENDS:-cuda-decode,cuda-decode@MOE_SM90_BN2=256} --ab ${AB:-5} --reps 5 \
  --presets ${PRESETS:-gpt-oss-20b,gpt-oss-120b} --tokens ${TOKENS:-512,4096,16384} --out "$OUT/ab.json" 2>&1 |
  grep -E "^#|AB " | cut -c1-170
BENCH_BREAKDOWN=1 PYTHONUNBUFFERED=1 timeout 150 python3 $B --lib /tmp/b/libmoe.so --backends ${TBACKENDS:-cuda-decode} --reps 8 \
  --presets ${TPRESETS:-gpt-oss-20b,gpt-oss-120b} --tokens ${TTOKENS:-4096,16384} --out "$OUT/table.json" 2>&1 | grep -E "kernels|^\|" | cut -c1-220
