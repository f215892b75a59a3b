B=build-devbin/bench_decode
export MOE_LOG=info
for v in "" "MOE_SV_STAGE=16384" "MOE_DECODE_FUSED=0"; do
  echo "== variant [$v]"
  for p in qwen3-30b-a3b mixtral-8x7b gpt-oss-20b; do env MOE_DECODE_STREAM=1 $v timeout 60 $B --dense --only $p --tokens 1 --reps 15 2>&1 | grep -E "stream.* us |two launches"; done
done 2>&1 | sed 's/ GB\/s.*//; s/  */ /g'
env timeout 100 $B --quant --only gpt-oss-20b --reps 15 2>&1 | grep -E " us |two launches|^    cuda" | grep -E "T= *(1|2|4|8) |two|^    " | sed -E 's/^(    .{0,30}).*streaming kernels(.{0,80}).*/\1 ..\2/' | sed 's/ GB\/s.*//; s/  */ /g'
