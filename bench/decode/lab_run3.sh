B=build-devbin/bench_decode
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
export MOE_DECODE_STREAM=1
timeout 120 $NCU --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis -k regex:k_sv --launch-skip 2 --launch-count 2 $B --dense --only qwen3-30b-a3b --tokens 1 --reps 1 > $OUT/ncu.txt 2>&1
unset MOE_DECODE_STREAM
for v in "" "MOE_SV_BPS=1" "MOE_SV_BPS=3" "MOE_SV_STAGE=32768" "MOE_SV_STAGE=8192 MOE_SV_BPS=3"; do
  echo "== variant [$v]"
  for p in qwen3-30b-a3b deepseek-v3 gpt-oss-20b; do env $v timeout 60 $B --dense --only $p --reps 15 | grep -E " us " | grep -E "T= *(1|2|4|8|16) " ; done
  env $v timeout 60 $B --quant --only qwen3-30b-a3b --reps 15 | grep -E "stream.* us " | grep -E "T= *(1|4|16) "
done 2>&1 | sed 's/ GB\/s.*//; s/  */ /g'
