#!/bin/bash
# Session 20 device calls: cuda-quant's prefill GEMMs on the GGUF blocks (src/cuda/gemm_sm90_q.cu).
#   OUT=out CARRY=dir TESTS="..." SAN="tool:test ..." PARGS="..." bash bench/decode/s20/run.sh
# CARRY holds bins.tar.xz (moe-tests, bench_decode of this tree, stripped). The moe-tests filters of
# TESTS and the compute-sanitizer runs of SAN side by side, then bench_decode --prefill PARGS.
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
C=${CARRY:-build-devbin/carry}; mkdir -p /tmp/b
for f in $C/*.tar.xz; do [ -e "$f" ] && xz -dc $f | tar xf - -C /tmp/b; done
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; } > "$OUT/gpu.txt" 2>&1
export MOE_TEST_SEED=${MOE_TEST_SEED:-12345}
for t in $TESTS; do timeout ${TEST_TIMEOUT:-300} /tmp/b/moe-tests $t > "$OUT/tests_$t.log" 2>&1 & done
for spec in $SAN; do
  IFS=: read -r tool t <<< "$spec"
  ( MOE_QUANT_PREFILL_T=0 timeout ${SAN_TIMEOUT:-300} compute-sanitizer --tool $tool /tmp/b/moe-tests $t ) > "$OUT/san_${tool}_${t}.log" 2>&1 &
done
wait
[ -n "$TESTS" ] && { echo "== tests"; cat "$OUT"/tests_*.log | grep -E "^FAIL|FAILED|passed, |fail|cases passed|GGUF GEMMs|error" | head -40; }
[ -n "$SAN" ] && { echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, " "$OUT"/san_*.log | head -20; }
[ -n "$PARGS" ] || exit 0
# VARIANTS: names of bench binaries (new = bench_decode, else bench_decode_NAME), each run in turn
for v in ${VARIANTS:-new}; do
  b=/tmp/b/bench_decode; [ "$v" = new ] || b=/tmp/b/bench_decode_$v
  timeout ${BENCH_TIMEOUT:-300} $b --prefill $PARGS --json "$OUT/prefill_$v.jsonl" > "$OUT/prefill_$v.log" 2>&1
  echo "== prefill $v (rc $?)"
  grep -E "^prefill" "$OUT/prefill_$v.log" | sed -E 's/ +\(.*//; s/  +/ /g; s/TFLOP.s//; s/the bf16 time//'
done
