#!/bin/bash
# cuda-quant's prefill path with the experts dequantised in groups (default
# workspace budget 2 GB): the CUDA tests, then bench_decode --prefill at T =
# 512, 4096 on the presets whose weights need several groups.
#   OUT=out bash bench/decode/run_prefill_groups.sh
OUT=${OUT:-out}; mkdir -p "$OUT"
export MOE_CACHE_DIR=/tmp/moe-jit-cache MOE_TEST_SEED=${MOE_TEST_SEED:-4712}
T=build-devbin/tests/moe-tests; B=build-devbin/bench_decode
if [ "${PART:-all}" != bench ]; then
  timeout 300 $T cuda > "$OUT/tests.log" 2>&1
  echo "== tests"; grep -E "^FAIL|FAILED|passed, " "$OUT/tests.log" | head -30
fi
for p in ${PRESETS:-mixtral-8x7b gpt-oss-120b deepseek-v3}; do
  timeout ${BENCH_TIMEOUT:-150} $B --prefill --only $p --prefill-tokens ${TOKENS:-512,4096} --reps 5 --json "$OUT/prefill_groups_$p.jsonl" >> "$OUT/prefill_groups.log" 2>&1
done
echo "== prefill"; grep -E "^prefill|^ *\(|rror" "$OUT/prefill_groups.log" | sed 's/  */ /g'
