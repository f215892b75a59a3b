#!/bin/bash
# Session 24, device call 3: where the dequantising prefill overtakes the GEMMs on the GGUF blocks, by type and
# pairs an expert (decode.cu qp_fused_max_pairs): prefill-gguf (MOE_QUANT_PREFILL_FUSED=1), prefill-dequant (0)
# and the layer's own choice (prefill-rule), x the same binary's bf16, T = 512..8192.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s24/call3.sh
W=/tmp/w; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
B=/tmp/b/bench_decode
timeout 280 $B --prefill --prefill-rule --only qwen3-30b-a3b,mixtral-8x7b --prefill-tokens 512,1024,2048,4096,8192 \
  --qtypes q4_K,q5_K,q6_K,q4_K/q6_K --reps 8 --json $W/cross_a.jsonl > $W/cross_a.log 2>&1
echo "== qwen3, mixtral (rc $?)"
timeout 250 $B --prefill --prefill-rule --only deepseek-v3 --prefill-tokens 1024,2048,4096,8192 \
  --qtypes q4_K,q6_K,q4_K/q6_K --reps 5 --json $W/cross_b.jsonl > $W/cross_b.log 2>&1
echo "== deepseek-v3 (rc $?)"
grep -hE "^prefill" $W/cross_a.log $W/cross_b.log \
  | sed -E 's/ +\(.*//; s/  +/ /g; s/ TFLOP.s//; s/x the bf16 time/x/; s/^prefill //'
tar cJf $OUT/call3.tar.xz -C $W .
