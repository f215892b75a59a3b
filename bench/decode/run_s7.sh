#!/bin/bash
# Session 7 device calls (bench/decode/s7, src/cuda/NOTES_decode.md session 7).
#   OUT=out TESTS="..." SAN="..." VARIANTS="..." DARGS="..." QARGS="..." bash bench/decode/run_s7.sh
# One device call: the moe-tests filters of TESTS and the compute-sanitizer runs
# of SAN ("tool:test[:NAME]", binary moe-tests or moe-tests-NAME, environment
# SAN_ENV), all side by side; then, for each variant of VARIANTS
# (name:binary[:ENV=V,...]; binary new = build-devbin/carry/bench_decode.gz,
# NAME = bench_decode_NAME.gz),
# bench_decode --dense DARGS and --quant QARGS (either empty = not run; the mma
# kernels are skipped unless the variant sets KDEC=1), and a table of the
# "stream" and "kdec" rows (table.txt); everything else in OUT/all.tgz.
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
C=${CARRY:-build-devbin/carry}; mkdir -p /tmp/b
for f in $C/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); done
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; } > "$OUT/gpu.txt" 2>&1
export MOE_TEST_SEED=${MOE_TEST_SEED:-12345}
# the tests and the sanitizer runs side by side (correctness only; the GPU is
# shared), each to its own log; the benchmark after all of them have finished
for t in $TESTS; do timeout ${TEST_TIMEOUT:-400} /tmp/b/moe-tests $t > "$OUT/tests_$t.log" 2>&1 & done
# SAN: "tool:test[:NAME]" ..., each under SAN_ENV (binary moe-tests or moe-tests-NAME)
for spec in $SAN; do
  IFS=: read -r tool t sb <<< "$spec"
  ( env $SAN_ENV timeout 400 compute-sanitizer --tool $tool /tmp/b/moe-tests${sb:+-$sb} $t ) > "$OUT/san_${tool}_${t}_${sb}.log" 2>&1 &
done
wait
[ -n "$TESTS" ] && { echo "== tests"; cat "$OUT"/tests_*.log | grep -E "^FAIL|FAILED|passed, |fail" | head -30; }
[ -n "$SAN" ] && { echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT"/san_*.log | head -20; }
[ -n "$VARIANTS" ] || exit 0
R=${REPS:-20}
for spec in $VARIANTS; do
  IFS=: read -r v bin envs <<< "$spec"
  b=/tmp/b/bench_decode; [ "$bin" = new ] || b=/tmp/b/bench_decode_$bin
  ( for kv in ${envs//,/ }; do export "$kv"; done
    nk=--no-kdec; [ "$KDEC" = 1 ] && nk=
    [ -n "$DARGS" ] && timeout 200 $b --dense $DARGS $nk --reps $R --json "$OUT/decode_$v.jsonl" > "$OUT/bench_$v.log" 2>&1
    [ -n "$QARGS" ] && timeout 200 $b --quant $QARGS $nk --reps $R --json "$OUT/decode_$v.jsonl" >> "$OUT/bench_$v.log" 2>&1 )
done
python3 bench/decode/s7_table.py "$OUT" "$VARIANTS" | tee "$OUT/table.txt"
# one archive instead of many files (the device returns a few files per call)
tar czf /tmp/s7_all.tgz -C "$OUT" . && find "$OUT" -type f ! -name table.txt -delete && mv /tmp/s7_all.tgz "$OUT/all.tgz"
