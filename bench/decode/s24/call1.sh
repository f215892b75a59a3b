#!/bin/bash
# Session 24, device call 1: Q5_K and Q6_K in the GGUF GEMMs' register-A kernel (and so gate/up Q4_K with
# down Q6_K, llama.cpp's Q4_K_M mix, on the GGUF GEMMs instead of the dequantising prefill). Tests (the GGUF
# GEMM test with the new types' cases and describe checks, the forced prefill, the quant and sm90 case tables),
# memcheck and racecheck of the new kernels on qwen3's shapes (Q6_K rows of 1680 bytes one by one and of 630 in
# groups of 8), then the prefill times: GGUF GEMMs against dequantising, x the same binary's bf16.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s24/call1.sh
W=/tmp/w; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=12345
B=/tmp/b/bench_decode
for t in cuda_quant_prefill_gguf_gemm cuda_quant_prefill_forced cuda_quant_cases cuda_cases_sm90; do
  MOE_TEST_VERBOSE=1 timeout 330 /tmp/b/moe-tests $t > $W/tests_$t.log 2>&1 & done
for tool in memcheck racecheck; do
  ( timeout 330 compute-sanitizer --tool $tool $B --prefill --only qwen3-30b-a3b --prefill-tokens 300,1100 \
      --qtypes q5_K,q6_K,q4_K/q6_K --prefill-nodeq --reps 1 ) > $W/san_$tool.log 2>&1 &
done
wait
echo "== tests"; tail -qn1 $W/tests_*.log; grep -hE "^FAIL|FAILED|error" $W/tests_*.log | head -20
grep -h "GGUF GEMMs against" $W/tests_*.log
echo "== sanitizer"; grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|^prefill" $W/san_*.log | sed -E 's/ +\(.*//'
timeout 200 $B --prefill --only qwen3-30b-a3b,mixtral-8x7b --prefill-tokens 512,4096 \
  --qtypes q4_K,q5_K,q6_K,q4_K/q6_K --reps 10 --json $W/presets.jsonl > $W/presets.log 2>&1
echo "== presets (rc $?)"
grep -hE "^prefill" $W/presets.log | sed -E 's/ +\(.*//; s/  +/ /g; s/ TFLOP.s//; s/x the bf16 time/x/'
tar cJf $OUT/call1.tar.xz -C $W .
