#!/bin/bash
# Session 24, device call 2: after run 1 (racecheck reported the QsHead read of every consumer lane against the
# producer's next write of the slot; Q6_K's decode trimmed, 313 -> 299 SASS instructions a k-block; Q6_K layers
# hand T above qp_fused_max_pairs to the dequantising path). Tests line-buffered (run 1's GGUF GEMM test left no
# output at its 330 s timeout), memcheck and racecheck of the GGUF GEMMs on qwen3's shapes, and a short A/B.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s24/call2.sh
W=/tmp/w; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=12345
B=/tmp/b/bench_decode
( MOE_TEST_VERBOSE=1 timeout 450 stdbuf -oL -eL /tmp/b/moe-tests cuda_quant_prefill_gguf_gemm ) \
  > $W/tests_gguf.log 2>&1 &
( timeout 450 stdbuf -oL /tmp/b/moe-tests cuda_quant_prefill_forced cuda_quant_cases decode_quant_rows ) \
  > $W/tests_other.log 2>&1 &
for tool in memcheck racecheck; do
  ( timeout 450 compute-sanitizer --tool $tool $B --prefill --only qwen3-30b-a3b --prefill-tokens 300,1100 \
      --qtypes q4_K,q8_0,q5_K,q6_K,q4_K/q6_K --prefill-nodeq --reps 1 ) > $W/san_$tool.log 2>&1 &
done
wait
echo "== tests"; tail -qn1 $W/tests_*.log; grep -hE "^FAIL|FAILED|error|timed out" $W/tests_*.log | head -20
grep -h "GGUF GEMMs against\|variant" $W/tests_gguf.log | tail -32
echo "== sanitizer"; grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $W/san_*.log
grep -h "Race reported" $W/san_racecheck.log | sort | uniq -c | head
tar cJf $OUT/call2.tar.xz -C $W .
