#!/bin/bash
# Session 7 device calls (bench/decode/s7, src/cuda/NOTES_decode.md session 7).
#   OUT=out TESTS="..." SAN=1 VARIANTS="..." DARGS="..." QARGS="..." bash bench/decode/run_s7.sh
# One device call: the moe-tests filters of TESTS, one after the other; with
# SAN=1 compute-sanitizer memcheck and racecheck on SAN_TESTS and memcheck on
# SAN_TESTS2; then, for each variant of VARIANTS (name:binary[:ENV=V,...];
# binary new = build-devbin/carry/bench_decode.gz, head = bench_decode_head.gz),
# bench_decode --dense DARGS and --quant QARGS (either empty = not run; the mma
# kernels are skipped unless the variant sets KDEC=1), and a table of the
# "stream" and "kdec" rows (table.txt); everything else in OUT/all.tgz.
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
C=build-devbin/carry; mkdir -p /tmp/b
for f in $C/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); done
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; } > "$OUT/gpu.txt" 2>&1
export MOE_TEST_SEED=${MOE_TEST_SEED:-12345}
for t in $TESTS; do timeout ${TEST_TIMEOUT:-280} /tmp/b/moe-tests $t; done > "$OUT/tests.log" 2>&1
[ -n "$TESTS" ] && { echo "== tests"; grep -E "^FAIL|FAILED|passed, |fail" "$OUT/tests.log" | head -30; }
if [ "$SAN" = 1 ]; then
  ( timeout 150 compute-sanitizer --tool memcheck /tmp/b/moe-tests ${SAN_TESTS:-cuda_decode_cases_stream}
    timeout 120 compute-sanitizer --tool racecheck /tmp/b/moe-tests ${SAN_TESTS:-cuda_decode_cases_stream}
    timeout 120 compute-sanitizer --tool memcheck /tmp/b/moe-tests ${SAN_TESTS2:-cuda_quant_cases_stream_down_expert} ) > "$OUT/sanitizer.log" 2>&1
  echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, " "$OUT/sanitizer.log"
fi
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
tar czf "$OUT/all.tgz" -C "$OUT" --exclude all.tgz . && find "$OUT" -type f ! -name all.tgz ! -name table.txt -delete
