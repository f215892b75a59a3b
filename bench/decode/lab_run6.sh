# ncu of the streaming kernels at T=1: dense qwen3 (mma consumer) and q8_0 / q4_K (dp4a consumer)
B=build-devbin/bench_decode
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
export MOE_DECODE_STREAM=1
M="--clock-control none --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --metrics smsp__inst_executed.sum,dram__bytes_read.sum -k regex:k_sv --launch-skip 2 --launch-count 2"
timeout 100 $NCU $M $B --dense --only qwen3-30b-a3b --tokens 1 --reps 1 > $OUT/ncu_dense.txt 2>&1
timeout 100 $NCU $M $B --quant --only qwen3-30b-a3b --tokens 1 --reps 1 > $OUT/ncu_quant.txt 2>&1
timeout 100 $NCU ${M/launch-skip 2/launch-skip 18} $B --quant --only qwen3-30b-a3b --tokens 1 --reps 1 > $OUT/ncu_q8.txt 2>&1
for f in $OUT/ncu_dense.txt $OUT/ncu_quant.txt $OUT/ncu_q8.txt; do echo "== $f"; grep -E "k_sv<|Duration|DRAM Throughput|inst_executed|dram__bytes|Warp Cycles Per Issued|Stall (Wait|Long|Short|Barrier)|Dynamic Shared|Achieved Active Warps|Registers Per" $f | sed 's/  */ /g' | head -60; done
