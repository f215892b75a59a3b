# ncu source-level stall sampling of the streaming kernels (qwen3 T=1), then ring-depth / stage-size variants
B=build-devbin/bench_decode
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
MOE_DECODE_STREAM=1 timeout 150 $NCU --clock-control none --section WarpStateStats --section SourceCounters --section SchedulerStats --print-details all -k regex:k_sv --launch-skip 2 --launch-count 2 $B --dense --only qwen3-30b-a3b --tokens 1 --reps 1 > $OUT/ncu_src.txt 2>&1
for v in "MOE_SV_STAGE=32768 MOE_SV_NS=3" "MOE_SV_STAGE=32768 MOE_SV_NS=8" "MOE_SV_STAGE=65536 MOE_SV_BPS=1 MOE_SV_NS=3" "MOE_SV_NS=12 MOE_SV_BPS=1"; do
  echo "== variant [$v]"
  for p in qwen3-30b-a3b gpt-oss-20b; do env $v timeout 60 $B --dense --only $p --tokens 1 --reps 15 | grep -E " us " ; done
  env $v timeout 60 $B --quant --only qwen3-30b-a3b --tokens 1 --reps 15 | grep -E "stream.* us "
done 2>&1 | sed 's/ GB\/s.*//; s/  */ /g'
