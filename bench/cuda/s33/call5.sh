#!/bin/bash
# Session 33: the issue-5 table (the default layer against the PyTorch pipeline, per-kernel times), then
# optionally the A/B of the static order against the default (or of ABBACKENDS).
#   OUT=out CARRY=dir [PRESETS=..] [TOKENS=..] [AB=rounds ABPRESETS=..] bash bench/cuda/s33/call5.sh
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
xz -dc "$CARRY/bins.tar.xz" | tar -x -C /tmp/b
export MOE_CACHE_DIR=/tmp/moe-jit-cache
Q=name,driver_version,clocks.max.sm,clocks.sm,power.draw,temperature.gpu
nvidia-smi --query-gpu=$Q --format=csv,noheader | tee "$OUT/gpu.txt"
[ -z "$NOTABLE" ] && BENCH_BREAKDOWN=1 PYTHONUNBUFFERED=1 timeout ${TT:-420} python3 bench/cuda/bench_layer.py \
  --lib /tmp/b/libmoe.so --backends cuda-decode --reps 8 \
  --presets ${PRESETS:-qwen3-30b-a3b,mixtral-8x7b,deepseek-v3,gpt-oss-20b,gpt-oss-120b} \
  --tokens ${TOKENS:-512,4096,16384} --out "$OUT/table.json" 2>&1 | grep -E "^#|^\||^  [a-z]" | cut -c1-250
[ -n "$AB" ] && PYTHONUNBUFFERED=1 timeout ${ABT:-400} python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so \
  --backends "${ABBACKENDS:-cuda-decode@MOE_SM90_SCHED=0,cuda-decode}" --ab $AB --reps 5 \
  --presets ${ABPRESETS:-gpt-oss-120b,qwen3-30b-a3b,gpt-oss-20b} --tokens ${ABTOKENS:-512,4096,16384} \
  --out "$OUT/ab.json" 2>&1 | grep -E "^#|AB |failed" | cut -c1-220
nvidia-smi --query-gpu=$Q --format=csv,noheader | tee -a "$OUT/gpu.txt"
exit 0
