#!/bin/bash
# Session 12: per-instruction profile (SASS with stall samples and executed counts) of the
# streaming gate/up kernel for each case of CASES (name:preset:qtype:T), bench_decode.gz of CARRY.
#   OUT=out CARRY=dir CASES="..." bash bench/decode/ncu_s12_src.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
gunzip -c ${CARRY:-build-devbin/carry}/bench_decode.gz > /tmp/b/bench_decode; chmod +x /tmp/b/bench_decode
for cs in $CASES; do
  IFS=: read -r cn preset qt T <<< "$cs"
  MOE_DECODE_FUSED=0 timeout 150 ncu --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    -k regex:k_sv --launch-skip ${SKIP:-2} --launch-count 1 -f -o /tmp/rep_$cn \
    /tmp/b/bench_decode --quant --only $preset --qtypes $qt --qtokens $T --no-kdec --reps 1 > "$OUT/src_$cn.log" 2>&1
  ncu -i /tmp/rep_$cn.ncu-rep --page source --print-source sass --csv 2> "$OUT/src_${cn}_err.txt" | gzip > "$OUT/src_$cn.csv.gz"
  ncu -i /tmp/rep_$cn.ncu-rep --page details > "$OUT/src_${cn}_details.txt" 2>&1
  echo "== $cn: $(zcat "$OUT/src_$cn.csv.gz" | wc -l) lines"; head -c 600 "$OUT/src_${cn}_err.txt"
  zcat "$OUT/src_$cn.csv.gz" | head -2 | cut -c1-600
done
