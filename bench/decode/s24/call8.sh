#!/bin/bash
# Session 24, device call 8: Q5_K's hand-overs on a second large-expert preset (deepseek-v3: the rules of
# decode.cu qp_pairs_fused, 20 pairs an expert, and qp_fused_max_pairs, 1024, came from mixtral and qwen3).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s24/call8.sh
W=/tmp/w8; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
timeout 200 $B --prefill --prefill-decode --prefill-rule --only deepseek-v3 --prefill-tokens 384,512,768,1024,8192 \
  --qtypes q5_K --reps 4 --json $W/ds_q5k.jsonl > $W/ds_q5k.log 2>&1
echo "== deepseek-v3 Q5_K (rc $?)"
grep -hE "^prefill" $W/ds_q5k.log | grep -v bf16 \
  | sed -E 's/ +\(.*//; s/  +/ /g; s/ TFLOP.s//; s/x the bf16 time/x/; s/^prefill //'
tar cJf $OUT/call8.tar.xz -C $W .
