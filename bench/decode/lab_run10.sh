B=build-devbin/bench_decode
export MOE_LOG=info
for v in "" "MOE_DECODE_FUSED=0"; do
  echo "== variant [$v]"
  env MOE_DECODE_STREAM=1 $v timeout 60 $B --dense --only qwen3-30b-a3b --tokens 1 --reps 15 2>&1 | grep -E " us |two launches"
  env MOE_DECODE_STREAM=1 $v timeout 60 $B --dense --only deepseek-v3 --tokens 1 --reps 15 2>&1 | grep -E " us |two launches"
  env $v timeout 100 $B --quant --only qwen3-30b-a3b --tokens 1 --reps 15 2>&1 | grep -E " us |two launches"
done 2>&1 | sed 's/ GB\/s.*//; s/  */ /g'
