#!/bin/bash
# Session 39 run 4: the register-A kernel's helper warps (moe_cuda_gemm qhelp) on every layer it runs: the GPU
# tests of the GGUF GEMMs and of bf16 weights on that kernel, one process each, in parallel, and beside them
# compute-sanitizer (SAN="tool:test:kernel-regex .."), each restricted to the kernels the regex names.
#   OUT=out CARRY=dir [TESTS=".."] [SAN=".."] [TT=s] bash bench/decode/s39/call4.sh
. bench/cuda/device_common.sh
dev_setup 3904
TESTS=${TESTS-"cuda_quant_prefill_gguf_help cuda_sm90_tn_tiles cuda_quant_prefill_gguf_gemm cuda_quant_prefill_gguf_fold cuda_quant_prefill_gguf_order cuda_quant_prefill_forced cuda_quant_cases cuda_cases_sm90_tn cuda_cases_sm90_tn_fold"}
SAN=${SAN-"racecheck:cuda_quant_prefill_gguf_help:gemm_sm90_qs memcheck:cuda_sm90_tn_tiles:gemm_sm90_qs racecheck:cuda_cases_sm90_tn:gemm_sm90_qs"}
for t in $TESTS; do
  ( timeout ${TT:-420} stdbuf -oL /tmp/b/moe-tests $t ) > $OUT/tests_$t.log 2>&1 &
done
for st in $SAN; do
  IFS=: read -r tool test kre <<< "$st"
  ( timeout ${TT:-420} compute-sanitizer --tool $tool --print-limit 5 ${kre:+--kernel-name regex=$kre} /tmp/b/moe-tests \
      $test ) > $OUT/san_${tool}_$test.log 2>&1 &
done
wait
echo "== tests"; for f in $OUT/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "^FAIL|^  " $OUT/tests_*.log | cut -c1-300 | head -20
echo "== sanitizer"; for f in $OUT/san_*.log; do echo "$(basename $f): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) | $(tail -n1 $f)"; done
dev_gpu
exit 0
