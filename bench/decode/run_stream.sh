#!/bin/bash
# The device calls behind bench/decode/README.md (streaming kernels, session 2):
#   PART=tests OUT=bench/decode/out bash bench/decode/run_stream.sh   # every C test, dp4a decoders, sanitizers
#   PART=bench OUT=bench/decode/out bash bench/decode/run_stream.sh   # read probe, decode benchmark, torch
# Uses binaries carried in build-devbin/ (built on the dev machine for sm_90a)
# when they run, else builds into build-gpu/.
OUT=${OUT:-bench/decode/out}
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; git rev-parse HEAD 2>/dev/null; } > "$OUT/gpu.txt" 2>&1
TESTS=build-devbin/tests/moe-tests; QDOT=build-devbin/tests/moe-qdot-test; BENCH=build-devbin/bench_decode
if ! { [ -x $TESTS ] && [ -x $BENCH ] && $TESTS nothing_matches > /dev/null 2>&1; }; then
  echo "== building on the device" | tee -a "$OUT/build.log"
  cmake -S . -B build-gpu -DMOE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a-real -DCMAKE_BUILD_TYPE=Release >> "$OUT/build.log" 2>&1 &&
  timeout 400 cmake --build build-gpu -j$(nproc) --target moe-tests moe-qdot-test moe_internal >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Iinclude bench/decode/bench_decode.cu \
    build-gpu/libmoe_internal.a -lcuda -o build-gpu/bench_decode >> "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
  TESTS=build-gpu/tests/moe-tests; QDOT=build-gpu/tests/moe-qdot-test; BENCH=build-gpu/bench_decode
fi
export MOE_TEST_SEED=${MOE_TEST_SEED:-12345}
if [ "${PART:-tests}" = tests ]; then
  ( timeout 60 $QDOT | grep -v '^ok '; timeout 400 $TESTS ) > "$OUT/tests.log" 2>&1
  ( timeout 60 compute-sanitizer --tool memcheck $TESTS cuda_decode_bad_ids
    timeout 60 compute-sanitizer --tool racecheck $TESTS cuda_decode_bad_ids
    timeout 60 compute-sanitizer --tool synccheck $TESTS cuda_decode_bad_ids
    timeout 60 compute-sanitizer --tool memcheck $TESTS cuda_decode_graph
    MOE_DECODE_FUSED=1 timeout 60 compute-sanitizer --tool racecheck $TESTS cuda_decode_bad_ids
    timeout 120 compute-sanitizer --tool memcheck $TESTS cuda_quant_cases_stream ) > "$OUT/sanitizer.log" 2>&1
  echo "== tests"; grep -E "^FAIL|FAILED|passed, |^skip" "$OUT/tests.log" | head -40
  echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, " "$OUT/sanitizer.log"
else
  timeout 60 $BENCH --probe --dense --only none > "$OUT/probe.log" 2>&1
  timeout 330 $BENCH --dense --quant --reps ${REPS:-20} --json "$OUT/decode.jsonl" > "$OUT/bench.log" 2>&1
  [ -z "$NO_TORCH" ] && PYTHONUNBUFFERED=1 timeout 150 python3 bench/decode/torch_moe.py --reps 20 --json "$OUT/torch.jsonl" > "$OUT/torch.log" 2>&1
  echo "== probe"; grep -E "probe|HBM" "$OUT/probe.log"
  echo "== bench"; grep -E " us " "$OUT/bench.log" | sed 's/ GB\/s.*of read/ GB\/s/; s/  */ /g' | head -200
  echo "== torch"; tail -40 "$OUT/torch.log"
fi
