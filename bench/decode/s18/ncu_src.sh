#!/bin/bash
# Session 18: ncu's per-instruction stall samples (SourceCounters) of one k_qg
# launch, as SASS with the top stall reasons, for the case PRESET:QTYPE:T.
#   OUT=out CARRY=dir CASE=mixtral-8x7b:q4_K:16 KERNEL="k_qg<7, 0" bash bench/decode/s18/ncu_src.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY:-build-devbin/carry}/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
IFS=: read -r preset qt T <<< "${CASE:-mixtral-8x7b:q4_K:16}"
for b in ${BINS:-bench_decode}; do
  MOE_DECODE_STREAM=0 MOE_QUANT_PREFILL_T=-1 timeout 300 ncu --clock-control none --section SourceCounters --section WarpStateStats \
    --kernel-name-base demangled -k "regex:${KERNEL:-k_qg<}" --launch-count 1 -o /tmp/rep_$b \
    /tmp/b/$b --quant --only $preset --qtypes $qt --qtokens $T --no-kdec --reps 1 > "$OUT/ncu_src_log_$b.txt" 2>&1
  ncu -i /tmp/rep_$b.ncu-rep --page source --csv --print-source sass > "$OUT/ncu_src_$b.csv" 2>&1
  echo "== $b: $(wc -l < "$OUT/ncu_src_$b.csv") lines"; head -2 "$OUT/ncu_src_$b.csv" | cut -c1-600
done
