#!/bin/bash
# Session 28 run 1: what bounds the streaming kernels' unit rate on large layers.
# ncu (boost clocks kept) on the two launches of one forward (MOE_DECODE_FUSED=0),
# sections: speed of light, compute workload (pipes), scheduler, warp states,
# memory, instruction stats; then per-SASS-line stall samples of phase 1 for two
# of the cases (src_*.csv.xz).
#   OUT=$OUT CARRY=build-devbin/carryNNN bash bench/decode/s28/call1.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY:-build-devbin/carry}/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader > "$OUT/gpu.txt"
for c in ${CASES:-deepseek-v3:q6_K:4 deepseek-v3:q4_K:4 deepseek-v3:mxfp4:4 deepseek-v3:q8_0:4 gpt-oss-20b:mxfp4:8 gpt-oss-20b:q8_0:8}; do
  IFS=: read -r preset qt T <<< "$c"
  MOE_DECODE_FUSED=0 timeout 240 ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis --section InstructionStats \
    --section Occupancy --section LaunchStats -k "regex:k_sv" --launch-count 2 --csv --page details \
    /tmp/b/bench_decode --quant --only $preset --qtypes $qt --qtokens $T --no-kdec --no-i8 --reps 1 --routings 1 \
    > "$OUT/det_${preset}_${qt}_$T.csv" 2>&1
  echo "== $c: $(wc -l < "$OUT/det_${preset}_${qt}_$T.csv") lines"
done
for c in ${SRC:-deepseek-v3:q6_K:4 deepseek-v3:mxfp4:4}; do
  IFS=: read -r preset qt T <<< "$c"
  MOE_DECODE_FUSED=0 timeout 240 ncu --clock-control none --section SourceCounters --section WarpStateStats \
    -k "regex:k_sv" --launch-count 1 -o /tmp/rep_${preset}_${qt} \
    /tmp/b/bench_decode --quant --only $preset --qtypes $qt --qtokens $T --no-kdec --no-i8 --reps 1 --routings 1 > /dev/null 2>&1
  ncu -i /tmp/rep_${preset}_${qt}.ncu-rep --page source --csv --print-source sass > "$OUT/src_${preset}_${qt}_$T.csv" 2>&1
  echo "== src $c: $(wc -l < "$OUT/src_${preset}_${qt}_$T.csv") lines"
done
cd "$OUT" && tar cf - det_*.csv | xz -9 > det.tar.xz && rm det_*.csv && xz -9 src_*.csv; ls -la
