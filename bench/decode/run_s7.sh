#!/bin/bash
# Session 7: phase 1 of the streaming kernels prefetches the down launch's rows
# into L2 (src/cuda/decode_stream.cuh sv_prefetch_down, decode.cu MOE_SV_L2PF*).
#   OUT=out bash bench/decode/run_s7.sh
# One device call: the C tests of TESTS (a moe-tests filter list, default none)
# and the sanitizers (SAN=1), then, for each variant of VARIANTS
# (name:binary[:ENV=V,...], binary new = build-devbin/carry/bench_decode.gz,
# head = bench_decode_head.gz), bench_decode with DARGS (dense) and QARGS
# (quant; empty = none), and a table of the "stream" rows (last). The dense runs
# skip the mma kernels unless the variant sets KDEC=1.
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
C=build-devbin/carry; mkdir -p /tmp/b
for f in $C/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); done
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; } > "$OUT/gpu.txt" 2>&1
export MOE_TEST_SEED=${MOE_TEST_SEED:-12345}
for t in $TESTS; do timeout ${TEST_TIMEOUT:-280} /tmp/b/moe-tests $t; done > "$OUT/tests.log" 2>&1
[ -n "$TESTS" ] && { echo "== tests"; grep -E "^FAIL|FAILED|passed, |fail" "$OUT/tests.log" | head -30; }
if [ "$SAN" = 1 ]; then
  ( timeout 150 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_decode_cases_stream
    timeout 120 compute-sanitizer --tool racecheck /tmp/b/moe-tests cuda_decode_cases_stream
    timeout 120 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_quant_cases_stream_down_expert ) > "$OUT/sanitizer.log" 2>&1
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
    [ -n "$QARGS" ] && timeout 200 $b --quant $QARGS --reps $R --json "$OUT/decode_$v.jsonl" >> "$OUT/bench_$v.log" 2>&1 )
done
python3 bench/decode/s7_table.py "$OUT" "$VARIANTS"
