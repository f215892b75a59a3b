#!/bin/bash
# Session 20: ncu of one quantised-B GEMM launch (gemm_sm90_q) with per-instruction stall samples.
#   OUT=out CARRY=dir CASE=qwen3-30b-a3b:q4_K:4096 KERNEL="gemm_sm90_q<0" bash bench/decode/s20/ncu.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
[ -x /tmp/b/bench_decode ] || for f in ${CARRY:-build-devbin/carry}/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
IFS=: read -r preset qt T <<< "${CASE:-qwen3-30b-a3b:q4_K:4096}"
timeout ${NCU_TIMEOUT:-200} ncu --section SourceCounters --section WarpStateStats --section SpeedOfLight --section SchedulerStats \
  --kernel-name-base demangled -k "regex:${KERNEL:-gemm_sm90_q<.int.0,}" --launch-count 1 -o /tmp/rep \
  /tmp/b/bench_decode --prefill --only $preset --qtypes $qt --prefill-tokens $T --reps 1 > "$OUT/ncu_log.txt" 2>&1
ncu -i /tmp/rep.ncu-rep --page details --csv > "$OUT/ncu_details.csv" 2>&1
ncu -i /tmp/rep.ncu-rep --page source --csv --print-source sass 2>&1 | xz -T4 > "$OUT/ncu_src.csv.xz"
echo "== ncu $(wc -l < "$OUT/ncu_details.csv") detail lines"
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" "$OUT/ncu_details.csv" | cut -d, -f12- | head -12
