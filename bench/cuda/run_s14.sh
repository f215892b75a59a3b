#!/bin/bash
# Session 14: per-instruction profiles of the grouped GEMMs (ncu source page: SASS with
# warp-stall samples and executed counts), then optionally run_s13.sh's tests / A/B rounds.
#   OUT=out CARRY=dir PROFILES="name:preset:T:kernel_regex ..." [AB vars of run_s13.sh] bash bench/cuda/run_s14.sh
# (device; CARRY holds libmoe.so.gz, moe-tests.gz). Summaries: python3 bench/decode/s12/src_summary.py
# OUT/src_NAME.csv.gz; bench/cuda/s14/sass_regions.py splits the samples into mainloop / epilogue.
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY}/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); done
chmod +x /tmp/b/moe-tests
export MOE_CACHE_DIR=/tmp/moe-jit-cache
for cs in $PROFILES; do
  IFS=: read -r cn preset T kre <<< "$cs"
  timeout 200 ncu --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    -k regex:$kre --launch-count 1 -f -o /tmp/rep_$cn \
    python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --probe --backends ${PBACKEND:-cuda-decode} \
    --presets $preset --tokens $T --out /tmp/probe.json > /tmp/src_$cn.log 2>&1
  ncu -i /tmp/rep_$cn.ncu-rep --page source --print-source sass --csv 2> /tmp/src_${cn}_err.txt | gzip > "$OUT/src_$cn.csv.gz"
  ncu -i /tmp/rep_$cn.ncu-rep --page details > /tmp/src_${cn}_details.txt 2>&1
  echo "== $cn ($PBACKEND): $(zcat "$OUT/src_$cn.csv.gz" | wc -l) lines"; head -c 300 /tmp/src_${cn}_err.txt
  grep -E "Duration|Compute \(SM\) Throughput|L2 Cache Throughput|DRAM Throughput" /tmp/src_${cn}_details.txt | head -4
  python3 bench/decode/s12/src_summary.py "$OUT/src_$cn.csv.gz" 12 2>&1 | head -16
done
[ -n "$AB" ] && OUT=$OUT CARRY=$CARRY TESTS=${TESTS:- } NOSAN=${NOSAN:-1} bash bench/cuda/run_s13.sh
exit 0
