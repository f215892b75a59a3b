#!/bin/bash
# Session 4: per-kernel durations (ncu), HEAD binary vs this tree, on the shapes where the
# expert-major down / pair groups lost: qwen3 q4_K T=8, mixtral bf16 T=8.
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
C=build-devbin/carry; mkdir -p /tmp/b
for f in $C/bench*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); done
one() { # binary preset T args
  local b=$1 p=$2 t=$3; shift 3
  MOE_DECODE_FUSED=0 timeout 100 ncu --section SpeedOfLight --section LaunchStats -k regex:k_sv --launch-skip 6 --launch-count 2 /tmp/b/$b "$@" --only $p --tokens $t --reps 1 2>&1 |
    grep -E "k_sv<|Duration|DRAM Through|Compute \(SM\) Th|Grid Size|Dynamic Shared" | sed "s/^/$b $p T=$t: /"
}
for b in bench_decode_head bench_decode; do
  one $b qwen3-30b-a3b 8 --quant
  one $b qwen3-30b-a3b 4 --quant
  one $b mixtral-8x7b 8 --dense
  one $b qwen3-30b-a3b 16 --dense
done
