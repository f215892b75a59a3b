# read-floor probe, then T=1 variants of the streaming kernels (resident blocks per SM, shared-memory cap)
B=build-devbin/bench_decode
timeout 60 $B --probe --dense --only none | grep -E "probe|HBM"
for v in "" "MOE_SV_BPS=1 MOE_SV_SMEM=112000" "MOE_SV_BPS=1 MOE_SV_SMEM=76000" "MOE_SV_BPS=3"; do
  echo "== variant [$v]"
  for p in qwen3-30b-a3b deepseek-v3 gpt-oss-20b; do env MOE_DECODE_STREAM=1 $v timeout 60 $B --dense --only $p --tokens 1 --reps 15 | grep -E "stream.* us " ; done
  env $v timeout 60 $B --quant --only qwen3-30b-a3b --tokens 1 --reps 15 | grep -E " us "
done 2>&1 | sed 's/ GB\/s.*//; s/  */ /g'
