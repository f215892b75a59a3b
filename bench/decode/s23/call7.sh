#!/bin/bash
# Session 23, device call 7: the final tree's GPU tests that the session's changes touch (the GGUF GEMMs after
# the row-plan refactor; cuda-jit and cuda-sm80, which share moe_cuda_gemm; the quant prefill tests).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s23/call7.sh
W=/tmp/w; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=4242
for t in cuda_quant_prefill cuda_cases_sm80 cuda_cases_jit_xp jit_sm90_gpt_oss cuda_quant_graph_capture decode_quant_rows_plan; do
  timeout 280 /tmp/b/moe-tests $t > $W/tests_$t.log 2>&1 & done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "^FAIL|FAILED|GGUF GEMMs against" $W/tests_*.log | head -20
tar cJf $OUT/call7.tar.xz -C $W .
