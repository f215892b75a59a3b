#!/bin/bash
# Session 25, device call 5: the final tree. The GGUF GEMM test (every type; the host reference now computed once
# a case instead of once a path), the forced prefill and quant case tables, the describe and rows-plan tests; Q2_K
# and Q3_K below 8 pairs an expert (mixtral) and on deepseek-v3, decode kernels against the GGUF GEMMs; the layer a
# user gets on both sides of the new Q2_K / Q3_K hand-overs (decode.cu qp_pairs_fused).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s25/call5.sh
W=/tmp/w5; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=2527
B=/tmp/b/bench_decode
( MOE_TEST_VERBOSE=1 timeout 400 stdbuf -oL -eL /tmp/b/moe-tests cuda_quant_prefill_gguf_gemm ) \
  > $W/tests_gguf.log 2>&1 &
( timeout 250 stdbuf -oL /tmp/b/moe-tests cuda_quant_prefill_forced ; \
  timeout 120 stdbuf -oL /tmp/b/moe-tests cuda_quant_cases ; \
  timeout 60 stdbuf -oL /tmp/b/moe-tests decode_ ) > $W/tests_other.log 2>&1 &
wait
echo "== tests"; grep -hE "passed, .* failed" $W/tests_*.log; grep -hE "^FAIL|FAILED|error|timed out" $W/tests_*.log | head
grep -h "GGUF GEMMs against" $W/tests_gguf.log
timeout 70 $B --prefill --prefill-decode --prefill-nodeq --only mixtral-8x7b --prefill-tokens 8,16,24 \
  --qtypes q2_K,q3_K --reps 6 --json $W/handover_a.jsonl > $W/handover_a.log 2>&1
echo "== mixtral (rc $?)"
timeout 90 $B --prefill --prefill-decode --prefill-nodeq --only deepseek-v3 --prefill-tokens 64,128,256,512 \
  --qtypes q2_K,q3_K --reps 4 --json $W/handover_b.jsonl > $W/handover_b.log 2>&1
echo "== deepseek-v3 (rc $?)"
( timeout 40 $B --quant --default --no-kdec --no-i8 --only qwen3-30b-a3b --qtypes q2_K,q3_K --qtokens 48,64,96,112 \
    --reps 6 ) > $W/default.log 2>&1
echo "== default (rc $?)"
grep -hE "^prefill" $W/handover_*.log | grep -v bf16 \
  | sed -E 's/ +\(.*//; s/  +/ /g; s/ TFLOP.s//; s/x the bf16 time/x/; s/^prefill //'
grep -hE " default " $W/default.log | sed -E 's/  +/ /g'
tar cJf $OUT/call5.tar.xz -C $W .
