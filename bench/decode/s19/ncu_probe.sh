#!/bin/bash
# Session 19 run 5: (1) the int8 kernels' launches of qwen3 MXFP4 T = 64 in two builds
# (bench_decode, bench_decode_mid: which phase the row-loop change slowed); (2) ncu's
# per-instruction stall samples of the streaming down kernel, mixtral Q4_K T = 1.
#   OUT=out CARRY=dir bash bench/decode/s19/ncu_probe.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY:-build-devbin/carry}/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
for b in bench_decode bench_decode_mid; do
  MOE_DECODE_STREAM=0 MOE_QUANT_PREFILL_T=-1 timeout 200 ncu --clock-control none -k "regex:k_qg" --launch-count ${LC:-9} \
    --metrics dram__bytes_read.sum,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size \
    --csv --page raw /tmp/b/$b --quant --only ${P:-qwen3-30b-a3b} --qtypes ${Q:-mxfp4} --qtokens ${T:-64} --no-kdec --reps 1 --routings 1 \
    > "$OUT/ncu_i8_$b.csv" 2>&1
done
MOE_DECODE_STREAM=1 MOE_DECODE_FUSED=0 timeout 300 ncu --clock-control none --section SourceCounters --section WarpStateStats \
  --kernel-name-base demangled -k "regex:${KERNEL:-k_sv<7, 3}" --launch-count 1 -o /tmp/rep_down \
  /tmp/b/bench_decode --quant --only mixtral-8x7b --qtypes q4_K --qtokens 1 --no-kdec --no-i8 --reps 1 > "$OUT/ncu_down_log.txt" 2>&1
ncu -i /tmp/rep_down.ncu-rep --page source --csv --print-source sass > "$OUT/ncu_src_down.csv" 2>&1
ncu -i /tmp/rep_down.ncu-rep --page details > "$OUT/ncu_down_details.txt" 2>&1
xz -9 "$OUT/ncu_src_down.csv"
ls -la "$OUT"
