#!/bin/bash
# Session 33 run 2: where gpt-oss-120b's and qwen3's partial m-tiles cost at T = 4096 (random routing):
# ncu's DRAM and L2 bytes of both GEMMs under the default and under other schedules (2 x 1 clusters,
# raster bands, BM 64, the permuted copy), then the layer A/B of the same variants.
#   OUT=out CARRY=dir [V="name:preset:K=V+K=V ..."] [AB=rounds] bash bench/cuda/s33/call2.sh
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
xz -dc "$CARRY/bins.tar.xz" | tar -x -C /tmp/b
export MOE_CACHE_DIR=/tmp/moe-jit-cache
Q=name,driver_version,clocks.max.sm,clocks.sm,power.draw,temperature.gpu
nvidia-smi --query-gpu=$Q --format=csv,noheader | tee "$OUT/gpu.txt"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed
V=${V:-"def:gpt-oss-120b: c21:gpt-oss-120b:MOE_SM90_CM=2 r1:gpt-oss-120b:MOE_SM90_RASTER=1 r16:gpt-oss-120b:MOE_SM90_RASTER=16 copy:gpt-oss-120b:MOE_SM90_GATHER=0 bm64:gpt-oss-120b:MOE_SM90_BM=64 def:qwen3-30b-a3b: c21:qwen3-30b-a3b:MOE_SM90_CM=2 bm64:qwen3-30b-a3b:MOE_SM90_BM=64"}
for v in $V; do
  IFS=: read -r nm p env <<< "$v"
  b=cuda-decode; [ -n "$env" ] && b="cuda-decode@$env"
  timeout 120 ncu --clock-control none -k "regex:gemm" --metrics $M --launch-count 2 --csv --page raw \
    python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --probe --backends "$b" --presets $p \
    --tokens ${T:-4096} --out /tmp/probe.json > "$OUT/ncu_${p}_$nm.csv" 2>&1
  python3 bench/cuda/s33/ncu_raw.py "$OUT/ncu_${p}_$nm.csv"
done
if [ -n "$AB" ]; then
  for p in $(for v in $V; do echo $v | cut -d: -f2; done | sort -u); do
    bs=$(for v in $V; do IFS=: read -r nm q env <<< "$v"; [ $q = $p ] && { [ -n "$env" ] && echo -n "cuda-decode@$env," || echo -n "cuda-decode,"; }; done)
    PYTHONUNBUFFERED=1 timeout 300 python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --backends ${bs%,} \
      --ab $AB --reps 5 --presets $p --tokens ${T:-4096} --out "$OUT/ab_$p.json" 2>&1 | grep -E "^#|AB |failed" | cut -c1-220
  done
fi
nvidia-smi --query-gpu=$Q --format=csv,noheader | tee -a "$OUT/gpu.txt"
exit 0
