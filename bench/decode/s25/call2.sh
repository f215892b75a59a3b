#!/bin/bash
# Session 25, device call 2: Q4_0's hand-overs. (a) From the int8 decode kernels to the GGUF GEMMs (decode.cu
# qp_pairs_fused, 14 / 4 pairs an expert as Q4_K and Q8_0): prefill-gguf against decode-kernels, 4 to 32 pairs an
# expert. (b) From the GGUF GEMMs to dequantising (qp_fused_max_pairs, Q8_0's 768 / 1536 for now): prefill-gguf,
# prefill-dequant and the layer's own choice, x the same binary's bf16, 256 to 2048 pairs an expert.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s25/call2.sh
W=/tmp/w2; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
B=/tmp/b/bench_decode
timeout 110 $B --prefill --prefill-decode --prefill-nodeq --only qwen3-30b-a3b,mixtral-8x7b,gpt-oss-20b \
  --prefill-tokens 32,64,96,128,256 --qtypes q4_0 --reps 8 --json $W/handover_a.jsonl > $W/handover_a.log 2>&1
echo "== (a) qwen3, mixtral, gpt-oss-20b (rc $?)"
timeout 80 $B --prefill --prefill-decode --prefill-nodeq --only deepseek-v3 --prefill-tokens 256,512,768 \
  --qtypes q4_0 --reps 5 --json $W/handover_b.jsonl > $W/handover_b.log 2>&1
echo "== (a) deepseek-v3 (rc $?)"
timeout 170 $B --prefill --prefill-rule --only qwen3-30b-a3b,mixtral-8x7b,gpt-oss-20b \
  --prefill-tokens 1024,2048,4096,8192,16384 --qtypes q4_0 --reps 6 --json $W/cross_a.jsonl > $W/cross_a.log 2>&1
echo "== (b) qwen3, mixtral, gpt-oss-20b (rc $?)"
timeout 110 $B --prefill --prefill-rule --only deepseek-v3 --prefill-tokens 2048,4096,8192 --qtypes q4_0 --reps 4 \
  --json $W/cross_b.jsonl > $W/cross_b.log 2>&1
echo "== (b) deepseek-v3 (rc $?)"
grep -hE "^prefill" $W/handover_*.log $W/cross_*.log \
  | sed -E 's/ +\(.*//; s/  +/ /g; s/ TFLOP.s//; s/x the bf16 time/x/; s/^prefill //'
tar cJf $OUT/call2.tar.xz -C $W .
