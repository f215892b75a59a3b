#!/bin/bash
# Session 24, device call 4: the final tree. GPU tests (the GGUF GEMM test, the forced prefill, the quant case
# tables, graph capture, the T sweep of the int8 kernels, the sm90 and jit case tables), then the final hand-over
# rule (decode.cu qp_fused_max_pairs) at the crossings run 3 measured: prefill-rule beside both forced paths.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s24/call4.sh
W=/tmp/w4; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=4242
B=/tmp/b/bench_decode
for t in cuda_quant_prefill_gguf_gemm cuda_quant_prefill_forced cuda_quant_cases cuda_quant_graph cuda_cases_sm90 \
         cuda_cases_jit; do
  ( timeout 400 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "^FAIL|FAILED|error" $W/tests_*.log | head -20; grep -h "GGUF GEMMs against" $W/tests_*.log
timeout 90 $B --prefill --prefill-rule --prefill-nodeq --only qwen3-30b-a3b,mixtral-8x7b \
  --prefill-tokens 2048,4096,8192 \
  --qtypes q4_K,q6_K,q4_K/q6_K --reps 6 --json $W/rule.jsonl > $W/rule.log 2>&1
echo "== rule (rc $?)"
grep -hE "^prefill" $W/rule.log \
  | sed -E 's/ +\(.*//; s/  +/ /g; s/ TFLOP.s//; s/x the bf16 time/x/; s/^prefill //'
tar cJf $OUT/call4.tar.xz -C $W .
