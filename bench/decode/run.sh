#!/bin/bash
# One lease of the GPU: (build), tests, sanitizer, decode benchmark, torch
# baseline, ncu of qwen3 T=1; logs and JSON under $OUT (default
# bench/decode/out), short table last.
#   bash bench/decode/run.sh
# Prebuilt binaries in build-devbin/ (moe-tests, bench_decode: built on the dev
# machine with the same nvcc for sm_90a, carried) are used when they run;
# otherwise everything is built here into build-gpu/.
OUT=${OUT:-bench/decode/out}
mkdir -p "$OUT"
J=$(nproc)
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; git rev-parse HEAD 2>/dev/null; } > "$OUT/gpu.txt" 2>&1
TESTS=build-devbin/moe-tests; BENCH=build-devbin/bench_decode
if ! { [ -x $TESTS ] && [ -x $BENCH ] && $TESTS nothing_matches > /dev/null 2>&1; }; then
  echo "== building on the device" | tee -a "$OUT/build.log"
  cmake -S . -B build-gpu -DMOE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a-real -DCMAKE_BUILD_TYPE=Release >> "$OUT/build.log" 2>&1 &&
  timeout 400 cmake --build build-gpu -j$J --target moe-tests moe_internal >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Iinclude bench/decode/bench_decode.cu \
    build-gpu/libmoe_internal.a -lcuda -o build-gpu/bench_decode >> "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
  TESTS=build-gpu/tests/moe-tests; BENCH=build-gpu/bench_decode
fi
export MOE_TEST_SEED=${MOE_TEST_SEED:-12345}
( timeout 100 $TESTS cuda_decode; timeout 100 $TESTS cuda_quant ) > "$OUT/tests.log" 2>&1
( timeout 60 compute-sanitizer --tool memcheck $TESTS cuda_decode_bad_ids
  timeout 60 compute-sanitizer --tool racecheck $TESTS cuda_decode_bad_ids
  timeout 40 compute-sanitizer --tool memcheck $TESTS cuda_decode_graph ) > "$OUT/sanitizer.log" 2>&1
timeout 200 $BENCH $BENCH_ARGS --reps ${REPS:-20} --json "$OUT/decode.jsonl" > "$OUT/bench.log" 2>&1
[ -z "$NO_TORCH" ] && PYTHONUNBUFFERED=1 timeout 150 python3 bench/decode/torch_moe.py --reps 20 --json "$OUT/torch.jsonl" > "$OUT/torch.log" 2>&1
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ] && [ -z "$NO_NCU" ]; then
  timeout 60 $NCU --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    -k regex:"k_dec|k_route" --launch-count 12 $BENCH --dense --only qwen3-30b-a3b --tokens 1 --reps 1 > "$OUT/ncu.log" 2>&1
fi
echo "== tests"; grep -E "FAIL|passed|fail|skip" "$OUT/tests.log" | head -30
echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed" "$OUT/sanitizer.log"
echo "== ncu"; grep -E "k_dec|k_route|gpu__time|dram__bytes|dram__thr" "$OUT/ncu.log" 2>/dev/null | sed 's/(moe_dec_args).*//; s/^ *//' | cut -c1-90 | head -24
echo "== bench"; grep -E "^GPU| us " "$OUT/bench.log" | sed 's/ GB\/s.*of read/ GB\/s/' | head -130
echo "== torch"; head -40 "$OUT/torch.log"
