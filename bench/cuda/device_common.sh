# Sourced by the device scripts (bench/cuda/s33/call3.sh, s34/call1.sh, s34/call2.sh): unpack the carried
# binaries, record the GPU, run GPU tests and compute-sanitizer.
#   dev_setup SEED     OUT (default out) made; $CARRY/bins.tar.xz into /tmp/b; MOE_TEST_SEED (default SEED);
#                      $OUT/gpu.txt (Q: the nvidia-smi fields, again at the end with dev_gpu)
#   dev_tests          TESTS="name .." one moe-tests process each (TT s, default 200), $OUT/tests.log and a summary;
#                      SAN="tool:test .." under compute-sanitizer (240 s each), $OUT/sanitizer.log and its summaries
Q=name,driver_version,clocks.max.sm,clocks.sm,power.draw,temperature.gpu
dev_setup() {
  OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
  xz -dc "$CARRY/bins.tar.xz" | tar -x -C /tmp/b
  export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-$1}
  nvidia-smi --query-gpu=$Q --format=csv,noheader | tee "$OUT/gpu.txt"
}
dev_gpu() { nvidia-smi --query-gpu=$Q --format=csv,noheader | tee -a "$OUT/gpu.txt"; }
dev_tests() {
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
  return 0
}
