#!/bin/bash
# Session 6, run 8: the decode/quant C tests; head against new on mixtral-8x7b and
# deepseek-v3 (Q4_K, Q8_0, T = 1..16: the 16 KB stages kept for long rows); the
# streaming kernels against the mma decode kernels at T = 16..64 on mixtral-8x7b,
# deepseek-v3 and gpt-oss-120b (GGUF streaming now up to MOE_SV_MAXP pairs).
#   OUT=out bash bench/decode/run_s6_r8.sh   (build-devbin/carry: moe-tests, bench_decode{,_head})
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
for f in build-devbin/carry/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); done
export MOE_TEST_SEED=${MOE_TEST_SEED:-12345}
( timeout 200 /tmp/b/moe-tests cuda_decode; timeout 200 /tmp/b/moe-tests cuda_quant ) > "$OUT/tests.log" 2>&1
echo "== tests"; grep -E "^FAIL|passed, " "$OUT/tests.log" | tail -4
PRESETS="${PRESETS:-mixtral-8x7b deepseek-v3}" OUT=$OUT QT=none bash bench/decode/run_s6_more.sh > /dev/null 2>&1
for p in mixtral-8x7b deepseek-v3 gpt-oss-120b; do
  timeout 150 /tmp/b/bench_decode --quant --only $p --qtypes q4_K,q8_0 --qtokens ${QT:-16,32,64} --reps 10 --json "$OUT/cross.jsonl" >> "$OUT/cross.log" 2>&1
done
python3 bench/decode/s6_tables.py "$OUT"
