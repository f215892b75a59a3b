#!/bin/bash
# Session 25, device call 1: Q4_0 on the GGUF GEMMs (gemm_sm90_q.cu Sm90Quant<Q4_0>). The GGUF GEMM test (every
# format, Q4_0 added), the quant case tables and the rows-plan test; memcheck and racecheck of the Q4_0 GEMMs on
# qwen3 (rows one by one) and gpt-oss-20b (rows in TMA groups); then a first timing, x the same binary's bf16.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s25/call1.sh
W=/tmp/w1; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=2525
B=/tmp/b/bench_decode
( MOE_TEST_VERBOSE=1 timeout 420 stdbuf -oL -eL /tmp/b/moe-tests cuda_quant_prefill_gguf_gemm ) \
  > $W/tests_gguf.log 2>&1 &
( timeout 420 stdbuf -oL /tmp/b/moe-tests cuda_quant_prefill_forced ; \
  timeout 300 stdbuf -oL /tmp/b/moe-tests cuda_quant_cases ; \
  timeout 60 stdbuf -oL /tmp/b/moe-tests decode_quant_rows ) > $W/tests_other.log 2>&1 &
for tool in memcheck racecheck; do
  ( timeout 420 compute-sanitizer --tool $tool $B --prefill --only qwen3-30b-a3b,gpt-oss-20b \
      --prefill-tokens 300,1100 --qtypes q4_0 --prefill-nodeq --reps 1 ) > $W/san_$tool.log 2>&1 &
done
wait
echo "== tests"; grep -hE "passed, .* failed" $W/tests_*.log; grep -hE "^FAIL|FAILED|error|timed out" $W/tests_*.log | head -20
grep -h "GGUF GEMMs against\|Q4_0 variant" $W/tests_gguf.log | tail -10
echo "== sanitizer"; grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $W/san_*.log
grep -h "Race reported\|Invalid" $W/san_*.log | sort | uniq -c | head
timeout 150 $B --prefill --prefill-rule --only qwen3-30b-a3b --prefill-tokens 512,4096 \
  --qtypes q4_0,q8_0,q4_K --reps 8 --json $W/first.jsonl > $W/first.log 2>&1
echo "== qwen3 (rc $?)"
grep -hE "^prefill" $W/first.log | sed -E 's/ +\(.*//; s/  +/ /g; s/ TFLOP.s//; s/x the bf16 time/x/; s/^prefill //'
tar cJf $OUT/call1.tar.xz -C $W .
