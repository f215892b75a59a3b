#!/bin/bash
# Session 33 run 1: what the partial m-tiles cost at T = 4096. The default layer (cuda-decode's chain)
# on random routing against balanced routing (every expert exactly T K / E rows: no partial m-tile),
# per-kernel times; then ncu raw metrics of both GEMMs of gpt-oss-120b and qwen3 under each routing.
#   OUT=out CARRY=dir bash bench/cuda/s33/call1.sh      (device; CARRY holds bins.tar.xz: libmoe.so)
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
xz -dc "$CARRY/bins.tar.xz" | tar -x -C /tmp/b
export MOE_CACHE_DIR=/tmp/moe-jit-cache
Q=name,driver_version,clocks.max.sm,clocks.sm,power.draw,temperature.gpu
nvidia-smi --query-gpu=$Q --format=csv,noheader | tee "$OUT/gpu.txt"
for r in ${ROUTINGS:-random balanced}; do
  BENCH_BREAKDOWN=1 PYTHONUNBUFFERED=1 timeout 300 python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so \
    --backends ${BACKENDS:-cuda-decode} --reps 8 --presets ${PRESETS:-qwen3-30b-a3b,gpt-oss-120b,deepseek-v3,gpt-oss-20b} \
    --tokens ${TOKENS:-4096} --routing $r --out "$OUT/table_$r.json" 2>&1 | grep -vE "^\|" | cut -c1-260
done
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size
for p in ${NCU_PRESETS:-gpt-oss-120b qwen3-30b-a3b}; do
  for r in random balanced; do
    timeout 120 ncu --clock-control none -k "regex:moe_jit_gemm" --metrics $M --launch-count 2 --csv --page raw \
      python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --probe --backends cuda-decode --presets $p \
      --tokens 4096 --routing $r --out /tmp/probe.json > "$OUT/ncu_${p}_$r.csv" 2>&1
    python3 bench/cuda/s33/ncu_raw.py "$OUT/ncu_${p}_$r.csv"
  done
done
nvidia-smi --query-gpu=$Q --format=csv,noheader | tee -a "$OUT/gpu.txt"
exit 0
