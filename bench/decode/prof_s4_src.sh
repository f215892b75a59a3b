#!/bin/bash
# Session 4: where the streaming decode kernels stall, per SASS line (ncu source page).
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
B=build-devbin/bench_decode
src() { # name, skip, preset, T, args
  local n=$1 k=$2 p=$3 t=$4; shift 4
  MOE_DECODE_FUSED=0 timeout 150 ncu --set full --import-source yes -k regex:k_sv --launch-skip $k --launch-count 1 -o "$OUT/$n" $B "$@" --only $p --tokens $t --reps 1 > /dev/null 2>&1
  ncu -i "$OUT/$n.ncu-rep" --page source --csv --print-source sass > "$OUT/$n.csv" 2>/dev/null
  ncu -i "$OUT/$n.ncu-rep" --page details --print-details all > "$OUT/${n}_details.txt" 2>/dev/null
  rm -f "$OUT/$n.ncu-rep"
}
src mxfp4_t1_down 7 gpt-oss-20b 1 --quant
src q4k_t8_gu 6 qwen3-30b-a3b 8 --quant
src bf16_t1_gu 6 qwen3-30b-a3b 1 --dense
ls -la "$OUT"
