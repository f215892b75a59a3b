#!/bin/bash
# Session 24, device call 6: the hand-over from the int8 decode kernels to the GEMMs on the GGUF blocks
# (decode.cu qp_pairs_fused: 14 pairs an expert on experts of 10 MB or more, else 4; measured for Q4_K, Q8_0
# and MXFP4) for the new types: prefill-gguf against decode-kernels, T from 4 to 64 pairs an expert.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s24/call6.sh
W=/tmp/w6; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
timeout 200 $B --prefill --prefill-decode --prefill-nodeq --only qwen3-30b-a3b,mixtral-8x7b \
  --prefill-tokens 32,64,128,256,512 --qtypes q4_K,q5_K,q6_K,q4_K/q6_K --reps 8 --json $W/handover_a.jsonl \
  > $W/handover_a.log 2>&1
echo "== qwen3, mixtral (rc $?)"
timeout 150 $B --prefill --prefill-decode --prefill-nodeq --only deepseek-v3 --prefill-tokens 256,512,1024 \
  --qtypes q6_K,q4_K/q6_K --reps 5 --json $W/handover_b.jsonl > $W/handover_b.log 2>&1
echo "== deepseek-v3 (rc $?)"
grep -hE "^prefill" $W/handover_*.log | grep -v bf16 \
  | sed -E 's/ +\(.*//; s/  +/ /g; s/ TFLOP.s//; s/x the bf16 time/x/; s/^prefill //'
tar cJf $OUT/call6.tar.xz -C $W .
