#!/bin/bash
# Session 25, device call 3: Q2_K and Q3_K on the GGUF GEMMs (gemm_sm90_q.cu Sm90Quant<Q2_K>, <Q3_K>; every GGUF
# type now decodes in the GEMMs). The GGUF GEMM test (every type, and the Q4_K_M and Q3_K_M mixes), the forced
# prefill and quant case tables, the rows-plan test; memcheck and racecheck of the Q2_K GEMMs and of the Q3_K_M mix
# on qwen3's shapes (64- and 256-token kernels).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s25/call3.sh
W=/tmp/w3; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=2526
B=/tmp/b/bench_decode
( MOE_TEST_VERBOSE=1 timeout 540 stdbuf -oL -eL /tmp/b/moe-tests cuda_quant_prefill_gguf_gemm ) \
  > $W/tests_gguf.log 2>&1 &
( timeout 300 stdbuf -oL /tmp/b/moe-tests cuda_quant_prefill_forced ; \
  timeout 200 stdbuf -oL /tmp/b/moe-tests cuda_quant_cases ; \
  timeout 30 stdbuf -oL /tmp/b/moe-tests decode_quant_rows ) > $W/tests_other.log 2>&1 &
for tool in memcheck racecheck; do
  ( timeout 520 compute-sanitizer --tool $tool $B --prefill --only qwen3-30b-a3b \
      --prefill-tokens 300,1100 --qtypes q2_K,q3_K/q4_K --prefill-nodeq --reps 1 ) > $W/san_$tool.log 2>&1 &
done
wait
echo "== tests"; grep -hE "passed, .* failed" $W/tests_*.log; grep -hE "^FAIL|FAILED|error|timed out" $W/tests_*.log | head -20
grep -h "GGUF GEMMs against\|q[23]_K (down" $W/tests_gguf.log | tail -16
echo "== sanitizer"; grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $W/san_*.log; grep -hc "^prefill" $W/san_*.log
grep -h "Race reported\|Invalid" $W/san_*.log | sort | uniq -c | head
tar cJf $OUT/call3.tar.xz -C $W .
