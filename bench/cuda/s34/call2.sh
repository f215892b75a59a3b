#!/bin/bash
# Session 34 run 2: 2 x 1 units in the order of their first m-tile (MOE_SM90_PAIRS=0: split units last) and
# the skip of warpgroups without rows (MOE_SM90_SKIP=0: none). GPU tests, compute-sanitizer, ncu's DRAM
# bytes under each, then the layer A/B of both knobs against the default in one library.
#   OUT=out CARRY=dir [TESTS=..] [SAN="tool:test .."] [NCU="preset:T:K=V ..."] [AB=rounds ABPRESETS=.. ABTOKENS=..]
#   bash bench/cuda/s34/call2.sh
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
xz -dc "$CARRY/bins.tar.xz" | tar -x -C /tmp/b
export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-3401}
Q=name,driver_version,clocks.max.sm,clocks.sm,power.draw,temperature.gpu
nvidia-smi --query-gpu=$Q --format=csv,noheader | tee "$OUT/gpu.txt"
for t in $TESTS; do
  timeout ${TT:-200} /tmp/b/moe-tests $t >> "$OUT/tests.log" 2>&1
  rc=$?; [ $rc -ge 124 ] && echo "TIMEOUT after ${TT:-200} s: moe-tests $t" | tee -a "$OUT/tests.log"
done
[ -n "$TESTS" ] && { echo "== GPU tests"; grep -E "^FAIL|^  " "$OUT/tests.log" | cut -c1-300 | head -20
  echo "$(grep -c '^ok' "$OUT/tests.log") passed, $(grep -c '^FAIL' "$OUT/tests.log") failed, $(grep -c '^skip' "$OUT/tests.log") skipped, $(grep -c '^TIMEOUT' "$OUT/tests.log") timed out"; }
for st in $SAN; do
  IFS=: read -r tool test <<< "$st"
  echo "== $tool $test" >> "$OUT/sanitizer.log"
  timeout 240 compute-sanitizer --tool $tool /tmp/b/moe-tests $test >> "$OUT/sanitizer.log" 2>&1
done
[ -n "$SAN" ] && { echo "== sanitizer"; grep -E "^== |ERROR SUMMARY|RACECHECK SUMMARY|^FAIL|passed" "$OUT/sanitizer.log"; }
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed
for v in $NCU; do
  IFS=: read -r p T env <<< "$v"
  b=cuda-decode; [ -n "$env" ] && b="cuda-decode@$env"
  nm=$(echo "$env" | tr '=+' '_-')  # '=' and '+' in a file name keep it from coming back
  timeout 150 ncu --clock-control none -k "regex:gemm" --metrics $M --launch-count 2 --csv --page raw \
    python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --probe --backends "$b" --presets $p \
    --tokens $T --out /tmp/probe.json > "$OUT/ncu_${p}_${T}_${nm}.csv" 2>&1
  echo "== $p T=$T $env"; python3 bench/cuda/s33/ncu_raw.py "$OUT/ncu_${p}_${T}_${nm}.csv" | tail -n +2 | cut -c1-400
  xz -f "$OUT/ncu_${p}_${T}_${nm}.csv"
done
[ -n "$AB" ] && PYTHONUNBUFFERED=1 timeout ${ABT:-400} python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so \
  --backends "${ABBACKENDS:-cuda-decode,cuda-decode@MOE_SM90_SKIP=0,cuda-decode@MOE_SM90_PAIRS=0}" --ab $AB --reps 5 \
  --presets ${ABPRESETS:-gpt-oss-120b,qwen3-30b-a3b,gpt-oss-20b,deepseek-v3,mixtral-8x7b} --tokens ${ABTOKENS:-4096,16384} \
  --out "$OUT/ab.json" 2>&1 | grep -E "^#|AB |failed" | cut -c1-220
nvidia-smi --query-gpu=$Q --format=csv,noheader | tee -a "$OUT/gpu.txt"
exit 0
