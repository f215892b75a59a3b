#!/bin/bash
# Session 37, device call 5: the final build's GPU tests (the fold test, the GGUF GEMM tests, the quant case
# tables, the sm90 tests) in parallel, beside compute-sanitizer memcheck and racecheck on the fold test's
# register-A kernels (gemm_sm90_qs); logs in runN/.
#   RUN=5 OUT=out CARRY=build-gpu/carryN bash bench/decode/s37/call5.sh
RUN=${RUN:-5}
W=/tmp/w$RUN
mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > $W/gpu.txt
export MOE_TEST_SEED=370$RUN
for t in cuda_quant_prefill_gguf_fold cuda_quant_prefill_gguf_order cuda_quant_prefill_forced cuda_quant_cases \
         cuda_quant_prefill_gguf_gemm cuda_sm90_ cuda_quant_sweep_T; do
  (timeout 480 stdbuf -oL /tmp/b/moe-tests $t) > $W/tests_$t.log 2>&1 &
done
(timeout 300 compute-sanitizer --tool memcheck --kernel-name regex=gemm_sm90_qs --print-limit 5 /tmp/b/moe-tests \
   cuda_quant_prefill_gguf_fold > $W/memcheck.log 2>&1
 timeout 240 compute-sanitizer --tool racecheck --kernel-name regex=gemm_sm90_qs --print-limit 5 /tmp/b/moe-tests \
   cuda_quant_prefill_gguf_fold > $W/racecheck.log 2>&1) &
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head
echo "memcheck: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1)"
echo "racecheck: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $W/racecheck.log | tail -1)"
grep "same error" $W/tests_cuda_quant_prefill_gguf_gemm.log
tar cJf $OUT/call$RUN.tar.xz -C $W .
