#!/bin/bash
# Session 38: bf16/f16 weights on the register-A kernel (gemm_sm90_qd.cu, MOE_SM90_TN): GPU tests, compute-sanitizer
# on its kernels, then the layer A/B of MOE_SM90_TN=1 (and variants) against the default in one library.
#   OUT=out CARRY=dir [TESTS=".."] [SAN="tool:test:kernel-regex .."] [AB=rounds] [ABBACKENDS=..] [ABPRESETS=..]
#   [ABTOKENS=..] bash bench/cuda/s38/call1.sh
. bench/cuda/device_common.sh
dev_setup 3801
TESTS=${TESTS-"cuda_sm90_tn_tiles cuda_cases_sm90_tn cuda_cases_sm90_tn_fold cuda_cases_sm90 cuda_sm90_dynamic_order cuda_quant_prefill_gguf_fold"}
SAN0=$SAN; SAN=""
dev_tests
for st in $SAN0; do
  IFS=: read -r tool test kre <<< "$st"
  echo "== $tool $test $kre" >> "$OUT/sanitizer.log"
  timeout 240 compute-sanitizer --tool $tool ${kre:+--kernel-name regex=$kre} /tmp/b/moe-tests $test >> "$OUT/sanitizer.log" 2>&1
done
[ -n "$SAN0" ] && { echo "== sanitizer"; grep -E "^== |ERROR SUMMARY|RACECHECK SUMMARY|^FAIL|passed" "$OUT/sanitizer.log"; }
[ -n "$AB" ] && PYTHONUNBUFFERED=1 timeout ${ABT:-400} python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so \
  --backends "${ABBACKENDS:-cuda-sm90,cuda-sm90@MOE_SM90_TN=1}" --ab $AB --reps 5 \
  --presets ${ABPRESETS:-qwen3-30b-a3b,gpt-oss-120b,deepseek-v3,gpt-oss-20b,mixtral-8x7b} --tokens ${ABTOKENS:-2048,4096,8192,16384} \
  --out "$OUT/ab.json" 2>&1 | grep -E "^#|AB |failed|Error|error" | cut -c1-230
dev_gpu
exit 0
