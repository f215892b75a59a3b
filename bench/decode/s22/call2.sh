#!/bin/bash
# Session 22, device call 2 (after the branch s21-qs was measured and merged): racecheck of the GGUF GEMM
# test, the register-A / B-decode kernels forced (the rule moe__cuda_sm90_bm), the hand-over from the
# decode kernels (decode.cu qp_pairs_qg), ncu of the 64-token kernel. Everything is packed into one
# archive in $OUT (the device returns 8 files).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s22/call2.sh
W=/tmp/w; mkdir -p $W
OUT=$W CARRY=$CARRY SAN="racecheck:cuda_quant_prefill_gguf_gemm" SAN_TIMEOUT=${SAN_TIMEOUT:-200} BENCH_TIMEOUT=120 \
  VARIANTS="new:MOE_SM90_QS=64 new:MOE_SM90_QS=128 new:MOE_SM90_QS=256" \
  PARGS="--only qwen3-30b-a3b,deepseek-v3 --prefill-tokens 256,512,1024,2048 --qtypes q4_K,q8_0 --reps 10" \
  bash "$(dirname "$0")/../s21/run.sh"
timeout 150 /tmp/b/bench_decode --prefill --prefill-decode --prefill-nodeq --only qwen3-30b-a3b,mixtral-8x7b,gpt-oss-20b \
  --prefill-tokens 32,64,128,256,512 --qtypes q4_K,q8_0 --reps 10 --json $W/handover.jsonl > $W/handover.log 2>&1
echo "== hand-over (rc $?)"; grep -E "^prefill" $W/handover.log | sed -E 's/ +\(.*//; s/  +/ /g' | head -80
OUT=$W/ncu CASE=${CASE:-qwen3-30b-a3b:q4_K:512} KERNEL="${KERNEL:-regex:gemm_sm90_qs<.int.0,.*64>}" bash "$(dirname "$0")/../s20/ncu.sh"
tar cJf $OUT/call2.tar.xz -C $W .
