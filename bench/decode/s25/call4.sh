#!/bin/bash
# Session 25, device call 4: Q2_K, Q3_K and the Q3_K_M mix (gate/up Q3_K, down Q4_K) at prefill sizes: the GEMMs on
# the GGUF blocks (prefill-gguf), dequantising (prefill-dequant) and the layer's choice (prefill-rule), x bf16; the
# same types against the mma decode kernels at 2-32 pairs an expert; the layer a user gets (--quant --default) on
# both sides of Q4_0's new hand-overs from the int8 decode kernels (run 2: qwen3 3 pairs, gpt-oss-20b and
# deepseek-v3 10, mixtral 14).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s25/call4.sh
W=/tmp/w4; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
B=/tmp/b/bench_decode
timeout 170 $B --prefill --prefill-rule --only qwen3-30b-a3b,mixtral-8x7b --prefill-tokens 512,1024,2048,4096,8192 \
  --qtypes q2_K,q3_K,q3_K/q4_K --reps 6 --json $W/cross_a.jsonl > $W/cross_a.log 2>&1
echo "== prefill qwen3, mixtral (rc $?)"
timeout 90 $B --prefill --prefill-rule --only deepseek-v3 --prefill-tokens 1024,4096,8192 --qtypes q2_K,q3_K \
  --reps 4 --json $W/cross_b.jsonl > $W/cross_b.log 2>&1
echo "== prefill deepseek-v3 (rc $?)"
timeout 100 $B --prefill --prefill-decode --prefill-nodeq --only qwen3-30b-a3b,mixtral-8x7b \
  --prefill-tokens 32,64,128,256 --qtypes q2_K,q3_K --reps 6 --json $W/handover.jsonl > $W/handover.log 2>&1
echo "== decode kernels against the GGUF GEMMs (rc $?)"
( timeout 40 $B --quant --default --no-kdec --no-i8 --only qwen3-30b-a3b --qtypes q4_0 --qtokens 48,64 --reps 6 ; \
  timeout 40 $B --quant --default --no-kdec --no-i8 --only gpt-oss-20b --qtypes q4_0 --qtokens 80,96 --reps 6 ; \
  timeout 40 $B --quant --default --no-kdec --no-i8 --only mixtral-8x7b --qtypes q4_0 --qtokens 56,64 --reps 6 ; \
  timeout 60 $B --quant --default --no-kdec --no-i8 --only deepseek-v3 --qtypes q4_0 --qtokens 320,352 --reps 4 ) \
  > $W/default_q40.log 2>&1
echo "== Q4_0 default layer"
grep -hE "^prefill" $W/cross_*.log $W/handover.log \
  | sed -E 's/ +\(.*//; s/  +/ /g; s/ TFLOP.s//; s/x the bf16 time/x/; s/^prefill //'
grep -hE " default |stream" $W/default_q40.log | sed -E 's/  +/ /g'
tar cJf $OUT/call4.tar.xz -C $W .
