export MOE_CACHE_DIR=/tmp/moe-jit-cache
LIB=build-devbin/libmoe.so.0.1.0
for b in cuda-sm90 cuda-sm90@MOE_SM90_CM=2 cuda-sm90@MOE_SM90_CN=2; do
  echo "== $b"
  ncu --clock-control none --kernel-name regex:'gemm' --launch-count 2 \
    --metrics gpu__time_duration.sum,launch__grid_size,launch__cluster_dim_x,launch__occupancy_cluster_pct,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,lts__t_bytes.sum,smsp__cycles_active.avg.pct_of_peak_sustained_elapsed \
    python3 bench/cuda/bench_layer.py --lib $LIB --probe --presets mixtral-8x7b --tokens 4096 --backends $b 2>&1 | grep -E "gemm|gpu__time|launch__|lts__|sm__|dram|smsp" | grep -v PROF | sed 's/  */ /g'
done
