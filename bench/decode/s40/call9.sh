#!/bin/bash
# Session 40 run 9 (H200): cuda_sm90_c21_default after its fix and the GGUF prefill tests run 7's group had not
# reached (one process each, in parallel), then the clusters' A/B on the GGUF GEMMs (bench_decode --prefill,
# MOE_SM90_QS_MC=0 / 1, ROUNDS rounds) through bench/decode/s37/call1.sh.
#   OUT=out CARRY=dir bash bench/decode/s40/call9.sh
mkdir -p ${OUT:-out} /tmp/b
xz -dc $CARRY/bins.tar.xz | tar x -C /tmp/b
for t in cuda_sm90_c21_default cuda_jit_c21 cuda_quant_prefill_forced cuda_quant_prefill_gguf_gemm; do
  ( timeout 300 /tmp/b/moe-tests $t > ${OUT:-out}/t_$t.log 2>&1 ) &
done
wait
for t in ${OUT:-out}/t_*.log; do echo "$(basename $t): $(grep -E '^ok|^FAIL' $t | cut -c1-300 | tr '\n' ' ') $(tail -n1 $t)"; done
RUN=9 TESTS=0 ROUNDS=${ROUNDS:-2} VARIANTS="mc0:new:MOE_SM90_QS_MC=0 mc1:new:MOE_SM90_QS_MC=1" \
  SPECS=${SPECS:-"mixtral-8x7b:q4_K,q8_0:2048,4096 deepseek-v3:q4_K:4096 gpt-oss-120b:q8_0:4096 qwen3-30b-a3b:q8_0:4096"} \
  OUT=${OUT:-out} CARRY=$CARRY bash bench/decode/s37/call1.sh
