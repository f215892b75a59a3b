#!/bin/bash
# Session 19 run 6: ncu per-instruction stall samples (SourceCounters) of one launch
# each: SPECS="name:binary:env:preset:qtype:T:kernel_regex ..." (env: comma-separated
# VAR=value, or -), exported as SASS with counters (OUT/src_NAME.csv.xz).
#   OUT=out CARRY=dir SPECS="..." bash bench/decode/s19/ncu_src2.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY:-build-devbin/carry}/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
for spec in $SPECS; do
  IFS=: read -r name bin envs preset qt T kre <<< "$spec"
  [ "$envs" = - ] && envs=""
  env ${envs//,/ } timeout 300 ncu --clock-control none --section SourceCounters --section WarpStateStats \
    --kernel-name-base demangled -k "regex:$kre" --launch-count 1 -o /tmp/rep_$name \
    /tmp/b/$bin --quant --only $preset --qtypes $qt --qtokens $T --no-kdec --reps 1 --routings 1 > "$OUT/log_$name.txt" 2>&1
  ncu -i /tmp/rep_$name.ncu-rep --page source --csv --print-source sass > "$OUT/src_$name.csv" 2>&1
  echo "== $name: $(wc -l < "$OUT/src_$name.csv") lines; $(grep -c 'No kernels' "$OUT/log_$name.txt") misses"
  xz -9 "$OUT/src_$name.csv"
done
