# where the dp4a consumer spends its time: ncu source counters on q4_K T=1 phase 1 and 2 (two launches)
B=build-devbin/bench_decode
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
MOE_DECODE_FUSED=0 MOE_DECODE_STREAM=1 timeout 150 $NCU --clock-control none --import-source yes --section SourceCounters --section WarpStateStats --section SpeedOfLight --metrics smsp__inst_executed.sum -k regex:k_sv --launch-skip 2 --launch-count 2 $B --quant --only qwen3-30b-a3b --tokens 1 --reps 1 > $OUT/ncu_q4k.txt 2>&1
grep -E "k_sv<|Duration|DRAM Through|inst_executed|Stall|Warp Cycles" $OUT/ncu_q4k.txt | sed 's/  */ /g' | head -50
