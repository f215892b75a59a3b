# Cluster slowness: warp stall reasons of the 2x1 GEMM 2 (old lib), then the
# cluster shapes with the remote mbarrier arrive at default (.release.cta)
# semantics (new lib) against the old lib, mixtral and qwen3.
export MOE_CACHE_DIR=/tmp/moe-jit-cache
ncu --clock-control none --kernel-name regex:'gemm_sm90<.int.-1' --launch-count 1 --section WarpStateStats --section SchedulerStats \
  python3 bench/cuda/bench_layer.py --lib build-devbin/libmoe_old.so --probe --presets mixtral-8x7b --tokens 4096 \
  --backends cuda-sm90@MOE_SM90_CM=2 2>&1 | grep -E "Stall|Warp Cycles|Issued|Eligible|Active Warps|No Eligible|One or More" | sed 's/  */ /g' | head -40
for lib in build-devbin/libmoe_old.so build-devbin/libmoe.so.0.1.0; do
  echo "== $lib"
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/cuda/bench_layer.py --lib $lib \
    --backends cuda-sm90,cuda-sm90@MOE_SM90_CM=2,cuda-sm90@MOE_SM90_CN=2,cuda-sm90@MOE_SM90_CM=2+MOE_SM90_CN=2 \
    --presets mixtral-8x7b,qwen3-30b-a3b --tokens 4096,16384 --reps 5 --ab 3 --out /tmp/r.json 2>&1 | grep "AB " | sed 's/  */ /g'
done
