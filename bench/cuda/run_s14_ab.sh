#!/bin/bash
# Session 14: GPU tests, compute-sanitizer and A/B rounds of this tree's library against
# another build's (--base-lib), one call:
#   OUT=out CARRY=dir BASE=dir [TESTS=..] [SAN="tool:test ..."] [PRESETS=..] [TOKENS=..] [AB=n]
#   [BACKENDS=..] [TBACKENDS=.. TPRESETS=.. TTOKENS=..: a table] [PROFILES=..] bash bench/cuda/run_s14_ab.sh
# (device; CARRY holds libmoe.so.gz and moe-tests.gz of the build under test, BASE libmoe_base.so.gz)
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY}/*.gz ${BASE:+$BASE/*.gz}; do gunzip -c $f > /tmp/b/$(basename $f .gz); done
chmod +x /tmp/b/moe-tests
export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-2031}
Q=name,driver_version,clocks.max.sm,clocks.sm,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader | tee "$OUT/gpu.txt"
for t in $TESTS; do
  timeout ${TT:-200} /tmp/b/moe-tests $t >> "$OUT/tests.log" 2>&1
  rc=$?; [ $rc -ge 124 ] && echo "TIMEOUT after ${TT:-200} s: moe-tests $t" | tee -a "$OUT/tests.log"
done
[ -n "$TESTS" ] && { echo "== GPU tests"; grep -E "^FAIL" "$OUT/tests.log" | cut -c1-300
  echo "$(grep -c '^ok' "$OUT/tests.log") passed, $(grep -c '^FAIL' "$OUT/tests.log") failed, $(grep -c '^TIMEOUT' "$OUT/tests.log") timed out"; }
for st in $SAN; do
  IFS=: read -r tool test <<< "$st"
  echo "== $tool $test" >> "$OUT/sanitizer.log"
  timeout 200 compute-sanitizer --tool $tool /tmp/b/moe-tests $test >> "$OUT/sanitizer.log" 2>&1
done
[ -n "$SAN" ] && { echo "== sanitizer"; grep -E "^== |ERROR SUMMARY|RACECHECK SUMMARY|^FAIL|passed" "$OUT/sanitizer.log"; }
[ -n "$AB" ] && PYTHONUNBUFFERED=1 timeout ${ABT:-400} python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so \
  --base-lib /tmp/b/libmoe_base.so --backends ${BACKENDS:-cuda-decode} --ab $AB --reps 5 \
  --presets ${PRESETS:-qwen3-30b-a3b,gpt-oss-20b,deepseek-v3} --tokens ${TOKENS:-4096,16384} \
  --out "$OUT/ab.json" 2>&1 | grep -E "^#|AB |failed" | cut -c1-200
[ -n "$TBACKENDS" ] && BENCH_BREAKDOWN=1 PYTHONUNBUFFERED=1 timeout ${TT2:-400} python3 bench/cuda/bench_layer.py \
  --lib /tmp/b/libmoe.so --backends $TBACKENDS --reps 8 --presets ${TPRESETS:-qwen3-30b-a3b,gpt-oss-20b} \
  --tokens ${TTOKENS:-16384} --out "$OUT/table.json" 2>&1 | grep -E "kernels|^\||^  [a-z]" | cut -c1-250
[ -n "$PROFILES" ] && AB= BASE= OUT=$OUT CARRY=$CARRY PROFILES="$PROFILES" bash bench/cuda/run_s14.sh
nvidia-smi --query-gpu=$Q --format=csv,noheader | tee -a "$OUT/gpu.txt"
exit 0
