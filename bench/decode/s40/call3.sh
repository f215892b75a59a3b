#!/bin/bash
# Session 40 runs 3-4: one libmoe.so (the xz archive in $CARRY/*.tar.xz holding libmoe.so) timed by bench_layer.py
# --ab on bf16 weights: the token-major kernel (MOE_SM90_TN=0) and the register-A kernel (=1) in one process, so that
# two builds run in consecutive calls on the same GPU compare by their TN=1 / TN=0 ratios.
#   OUT=out CARRY=dir [AB=rounds] [ABPRESETS=..] [ABTOKENS=..] bash bench/decode/s40/call3.sh
mkdir -p ${OUT:-out} /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar x -C /tmp/b; done
nvidia-smi --query-gpu=name,serial,driver_version,clocks.sm,power.draw --format=csv,noheader
PYTHONUNBUFFERED=1 timeout ${ABT:-420} python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so \
  --backends "${ABBACKENDS:-cuda-sm90@MOE_SM90_TN=0,cuda-sm90@MOE_SM90_TN=1}" --ab ${AB:-2} --reps 5 \
  --presets ${ABPRESETS:-qwen3-30b-a3b,mixtral-8x7b,deepseek-v3} --tokens ${ABTOKENS:-2048,4096,8192} \
  --out "${OUT:-out}/ab.json" 2>&1 | grep -E "^#|AB |failed|Error|error" | cut -c1-230
nvidia-smi --query-gpu=name,serial,clocks.sm,power.draw --format=csv,noheader
