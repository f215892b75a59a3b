#!/bin/bash
# One device call: build, SASS check, CUDA tests, compute-sanitizer on small
# cases, the benchmark. Logs and JSON under $OUT (or ./out).
# Usage: bash bench/cuda/run_device.sh [bench args...]
set -o pipefail
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee $OUT/gpu.txt
t0=$(date +%s)
(cmake -S . -B build-gpu -DMOE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="80-real;90a-real" && cmake --build build-gpu -j16 --target moe moe-tests) > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
cuobjdump -sass build-gpu/libmoe.so > /tmp/sass.txt 2>/dev/null
echo "SASS: HGMMA $(grep -c HGMMA /tmp/sass.txt), UTMALDG $(grep -c UTMALDG /tmp/sass.txt), HMMA $(grep -c HMMA /tmp/sass.txt), LDL/STL $(grep -cE 'LDL|STL' /tmp/sass.txt)"
for f in route sm80 sm90; do timeout ${TEST_TIMEOUT:-150} ./build-gpu/tests/moe-tests $f 2>&1 | tee -a $OUT/tests.log | grep -vE '^moe-tests' ; done
# every sm90 cluster shape on the case table
for v in "1 1" "2 1" "1 2" "2 2"; do set -- $v; echo "sm90 cluster $1x$2:"; MOE_SM90_CM=$1 MOE_SM90_CN=$2 timeout 120 ./build-gpu/tests/moe-tests sm90 2>&1 | tee -a $OUT/tests.log | grep -E 'FAIL|passed'; done
MOE_TEST_SEED=1 timeout 240 compute-sanitizer --tool memcheck --print-limit 5 ./build-gpu/tests/moe-tests bad_ids > $OUT/sanitizer.log 2>&1
timeout 240 compute-sanitizer --tool racecheck --print-limit 5 ./build-gpu/tests/moe-tests bad_ids_graph_sm90 >> $OUT/sanitizer.log 2>&1
MOE_SM90_CM=2 MOE_SM90_CN=2 timeout 240 compute-sanitizer --tool memcheck --print-limit 5 ./build-gpu/tests/moe-tests bad_ids_graph_sm90 >> $OUT/sanitizer.log 2>&1
echo "sanitizer: $(tail -3 $OUT/sanitizer.log | tr '\n' ' ')"
[ -n "$NO_BENCH" ] && exit 0
PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-330} python3 bench/cuda/bench_layer.py --lib build-gpu/libmoe.so --out $OUT/results.json "$@" 2>&1 | tee $OUT/bench.log | tail -45
