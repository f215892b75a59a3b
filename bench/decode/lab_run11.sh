# dense: single launch with 16 KB stages vs two launches; quant: T sweep with and without the single launch
B=build-devbin/bench_decode
export MOE_LOG=info
for v in "MOE_SV_STAGE=16384" "MOE_DECODE_FUSED=0" "MOE_DECODE_FUSED=0 MOE_SV_STAGE=16384"; do
  echo "== variant [$v]"
  for p in qwen3-30b-a3b mixtral-8x7b gpt-oss-20b; do env MOE_DECODE_STREAM=1 $v timeout 60 $B --dense --only $p --tokens 1 --reps 15 2>&1 | grep -E "stream.* us |two launches"; done
done 2>&1 | sed 's/ GB\/s.*//; s/  */ /g'
for v in "" "MOE_DECODE_FUSED=0"; do
  echo "== quant variant [$v]"
  env MOE_DECODE_STREAM=1 $v timeout 100 $B --quant --reps 15 2>&1 | grep -E " us |two launches" | grep -E "T= *(1|2|4|8|16) |two"
done 2>&1 | sed 's/ GB\/s.*//; s/  */ /g'
