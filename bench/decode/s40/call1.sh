#!/bin/bash
# Session 40, device calls: the register-A kernel in clusters of 2 sharing each token tile by TMA multicast
# (moe_cuda_gemm qmc, MOE_SM90_QS_MC). A smoke test first (one process, SMOKE s: a hang in the cluster
# handshakes ends the call there), then the GPU tests and compute-sanitizer in parallel (bench/decode/s39/call4.sh:
# TESTS, SAN="tool:test:kernel-regex", TT), then bench_decode --prefill A/B (bench/decode/s37/call1.sh: VARIANTS,
# SPECS, ROUNDS; skipped with SPECS=""), then the bf16 layer A/B (bench_layer.py; ABBACKENDS, ABPRESETS,
# ABTOKENS; skipped without AB=rounds).
#   OUT=out CARRY=dir RUN=N bash bench/decode/s40/call1.sh
set -u
RUN=${RUN:-1}
OUT=${OUT:-out}
mkdir -p $OUT /tmp/b
xz -dc "$CARRY/bins.tar.xz" | tar -x -C /tmp/b
export MOE_TEST_SEED=400$RUN
if [ -n "${SMOKE_TEST:-cuda_quant_prefill_gguf_mc}" ]; then
  timeout ${SMOKE:-90} /tmp/b/moe-tests ${SMOKE_TEST:-cuda_quant_prefill_gguf_mc} > $OUT/smoke.log 2>&1
  rc=$?
  echo "== smoke: rc $rc: $(tail -n1 $OUT/smoke.log)"; grep -E "^FAIL|^  " $OUT/smoke.log | cut -c1-300 | head -8
  [ $rc -ge 124 ] && { nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader; exit 0; }
fi
if [ -n "${TESTS-x}" ]; then
  TESTS=${TESTS-"cuda_quant_prefill_gguf_mc cuda_quant_prefill_gguf_help cuda_sm90_tn_tiles cuda_quant_prefill_gguf_fold cuda_quant_prefill_forced cuda_cases_sm90_tn_fold"} \
  SAN=${SAN-"racecheck:cuda_sm90_tn_tiles:gemm_sm90_qs memcheck:cuda_quant_prefill_gguf_mc:gemm_sm90_qs"} \
    CARRY=$CARRY OUT=$OUT TT=${TT:-300} bash bench/decode/s39/call4.sh | grep -v "^NVIDIA"
fi
if [ -n "${SPECS-x}" ]; then
  RUN=$RUN TESTS=0 ROUNDS=${ROUNDS:-1} VARIANTS=${VARIANTS:-"mc0:new:MOE_SM90_QS_MC=0 mc1:new:MOE_SM90_QS_MC=1"} \
    SPECS=${SPECS:-"qwen3-30b-a3b:q4_K,q8_0:4096 mixtral-8x7b:q4_K,q8_0:4096 gpt-oss-20b:mxfp4:4096 deepseek-v3:q4_K:4096"} \
    OUT=$OUT CARRY=$CARRY bash bench/decode/s37/call1.sh
fi
if [ -n "${AB:-}" ]; then
  PYTHONUNBUFFERED=1 timeout ${ABT:-300} python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so \
    --backends "${ABBACKENDS:-cuda-sm90@MOE_SM90_TN=1+MOE_SM90_QS_MC=0,cuda-sm90@MOE_SM90_TN=1+MOE_SM90_QS_MC=1}" \
    --ab $AB --reps 5 --presets ${ABPRESETS:-qwen3-30b-a3b,mixtral-8x7b,deepseek-v3,gpt-oss-120b} \
    --tokens ${ABTOKENS:-2048,4096} --out "$OUT/ab.json" 2>&1 | grep -E "^#|AB |failed|Error|error" | cut -c1-230
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader
exit 0
