#!/bin/bash
# Session 7 device calls (bench/decode/s7, src/cuda/NOTES_decode.md session 7).
#   OUT=out TESTS="..." SAN=1 VARIANTS="..." DARGS="..." QARGS="..." bash bench/decode/run_s7.sh
# One device call: the moe-tests filters of TESTS, and with SAN=1
# compute-sanitizer memcheck and racecheck on SAN_TESTS (environment SAN_ENV)
# and memcheck on SAN_TESTS2, all side by side; then, for each variant of VARIANTS (name:binary[:ENV=V,...];
# binary new = build-devbin/carry/bench_decode.gz, head = bench_decode_head.gz),
# bench_decode --dense DARGS and --quant QARGS (either empty = not run; the mma
# kernels are skipped unless the variant sets KDEC=1), and a table of the
# "stream" and "kdec" rows (table.txt); everything else in OUT/all.tgz.
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
C=build-devbin/carry; mkdir -p /tmp/b
for f in $C/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); done
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; } > "$OUT/gpu.txt" 2>&1
export MOE_TEST_SEED=${MOE_TEST_SEED:-12345}
# the tests and the sanitizer runs side by side (correctness only; the GPU is
# shared), each to its own log; the benchmark after all of them have finished
i=0
for t in $TESTS; do timeout ${TEST_TIMEOUT:-400} /tmp/b/moe-tests $t > "$OUT/tests_$((i++)).log" 2>&1 & done
if [ "$SAN" = 1 ]; then
  ( env $SAN_ENV timeout 400 compute-sanitizer --tool memcheck /tmp/b/moe-tests ${SAN_TESTS:-cuda_decode_cases_stream} ) > "$OUT/san_mem.log" 2>&1 &
  ( env $SAN_ENV timeout 400 compute-sanitizer --tool racecheck /tmp/b/moe-tests ${SAN_TESTS:-cuda_decode_cases_stream} ) > "$OUT/san_race.log" 2>&1 &
  [ -n "$SAN_TESTS2" ] && ( timeout 400 compute-sanitizer --tool memcheck /tmp/b/moe-tests $SAN_TESTS2 ) > "$OUT/san_mem2.log" 2>&1 &
fi
wait
[ -n "$TESTS" ] && { echo "== tests"; cat "$OUT"/tests_*.log | grep -E "^FAIL|FAILED|passed, |fail" | head -30; }
[ "$SAN" = 1 ] && { echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, |Error:" "$OUT"/san_*.log | head -20; }
[ -n "$VARIANTS" ] || exit 0
R=${REPS:-20}
for spec in $VARIANTS; do
  IFS=: read -r v bin envs <<< "$spec"
  b=/tmp/b/bench_decode; [ "$bin" = head ] && b=/tmp/b/bench_decode_head
  ( for kv in ${envs//,/ }; do export "$kv"; done
    nk=--no-kdec; [ "$KDEC" = 1 ] && nk=
    [ -n "$DARGS" ] && timeout 200 $b --dense $DARGS $nk --reps $R --json "$OUT/decode_$v.jsonl" > "$OUT/bench_$v.log" 2>&1
    [ -n "$QARGS" ] && timeout 200 $b --quant $QARGS $nk --reps $R --json "$OUT/decode_$v.jsonl" >> "$OUT/bench_$v.log" 2>&1 )
done
python3 bench/decode/s7_table.py "$OUT" "$VARIANTS" | tee "$OUT/table.txt"
# one archive instead of many files (the device returns a few files per call)
tar czf /tmp/s7_all.tgz -C "$OUT" . && find "$OUT" -type f ! -name table.txt -delete && mv /tmp/s7_all.tgz "$OUT/all.tgz"
